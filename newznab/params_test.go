package newznab

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/release"
)

var testNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func testLimits() limits {
	return limits{Max: 100, Default: 50, MinCompletion: 100, Now: testNow}
}

func TestParseSearch(t *testing.T) {
	base := release.Search{Limit: 50, MinCompletion: 100}
	with := func(f func(*release.Search)) release.Search {
		q := base
		f(&q)
		return q
	}
	for _, c := range []struct {
		raw     string
		want    release.Search
		noItems bool
	}{
		{"t=search", base, false},
		{"t=search&q=", base, false},
		{"t=search&q=+++", base, false},
		{"t=search&q=The.Show+S01E02", with(func(q *release.Search) { q.Words = []string{"the", "show", "s01e02"} }), false},
		{"t=search&q=---", base, true},
		{"t=search&cat=5000,5040", with(func(q *release.Search) { q.Categories = []int{5000, 5040} }), false},
		{"t=search&cat=5000,,5000,+2040,", with(func(q *release.Search) { q.Categories = []int{5000, 2040} }), false},
		{"t=search&cat=", base, false},
		{"t=search&limit=1000", with(func(q *release.Search) { q.Limit = 100 }), false},
		{"t=search&limit=99999999999999999999999", with(func(q *release.Search) { q.Limit = 100 }), false},
		{"t=search&limit=7&offset=300", with(func(q *release.Search) { q.Limit, q.Offset = 7, 300 }), false},
		{"t=search&maxage=2", with(func(q *release.Search) { q.PostedAfter = testNow.Add(-48 * time.Hour) }), false},
		{"t=search&maxage=0", base, false},
		{"t=search&minsize=10&maxsize=2000", with(func(q *release.Search) { q.MinBytes, q.MaxBytes = 10, 2000 }), false},
		{"t=search&extended=1&password=0&apikey=k&apikey=k", with(func(q *release.Search) { q.NoPassword = true }), false},
		{"t=search&password=1", base, false},
		{"t=search&password=1&o=xml", base, false},
		{"t=search&imdbid=1234567", base, true},
		{"t=search&imdbid=", base, false},
		{"t=tvsearch&q=show&season=1&ep=2", with(func(q *release.Search) {
			q.Words, q.Episode = []string{"show"}, &release.Episode{Season: 1, Episode: 2}
		}), false},
		{"t=tvsearch&season=S01", with(func(q *release.Search) { q.Episode = &release.Episode{Season: 1} }), false},
		{"t=tvsearch&season=s01&ep=E03", with(func(q *release.Search) { q.Episode = &release.Episode{Season: 1, Episode: 3} }), false},
		{"t=tvsearch&season=00", with(func(q *release.Search) { q.Episode = &release.Episode{Season: 0} }), false},
		{"t=tvsearch&season=2026&ep=11/29", with(func(q *release.Search) {
			q.Episode = &release.Episode{Season: 2026, Episode: 1129, Daily: true}
		}), false},
		{"t=tvsearch&season=2026&ep=3/5", with(func(q *release.Search) {
			q.Episode = &release.Episode{Season: 2026, Episode: 305, Daily: true}
		}), false},
		{"t=tvsearch&tvdbid=81189&season=1&ep=1", with(func(q *release.Search) { q.Episode = &release.Episode{Season: 1, Episode: 1} }), true},
		{"t=tvsearch&rid=1", base, true},
		{"t=tvsearch&tvmazeid=1", base, true},
		{"t=movie&q=film&imdbid=0133093", with(func(q *release.Search) { q.Words = []string{"film"} }), true},
		{"t=movie&tmdbid=603", base, true},
		{"t=movie&traktid=1", base, true},
		{"t=movie&q=film&unknown=whatever", with(func(q *release.Search) { q.Words = []string{"film"} }), false},
	} {
		t.Run(c.raw, func(t *testing.T) {
			req, e := parseRequest(c.raw, testLimits())
			require.Nil(t, e)
			require.Equal(t, c.want, req.Search)
			require.Equal(t, c.noItems, req.NoItems)
			_, err := release.CheckSearch(req.Search)
			require.NoError(t, err)
		})
	}
}

func TestParseFunctions(t *testing.T) {
	for _, c := range []struct {
		raw, fn string
		id      int64
	}{
		{"t=caps", "caps", 0},
		{"t=caps&limit=-1&cat=garbage", "caps", 0}, // caps reads none of them
		{"t=get&id=42&apikey=k", "get", 42},
		{"t=details&id=7", "details", 7},
		{"t=get&id=9223372036854775806", "get", 9223372036854775806},
	} {
		req, e := parseRequest(c.raw, testLimits())
		require.Nil(t, e, c.raw)
		require.Equal(t, c.fn, req.Function, c.raw)
		require.Equal(t, c.id, req.ID, c.raw)
	}
}

func TestParseErrors(t *testing.T) {
	long := strings.Repeat("word ", 300)
	for _, c := range []struct {
		raw  string
		code int
	}{
		{"", codeNoFunction},
		{"t=", codeNoFunction},
		{"t=register", codeNoFunction},
		{"t=CAPS", codeNoFunction},
		{"t=caps&t=search", codeIncorrect},
		{"t=caps&o=json", codeNotAvailable},
		{"t=search&o=html", codeIncorrect},
		{"t=search&apikey=a&apikey=b", codeIncorrect},
		{"t=search&q=%zz", codeIncorrect},
		{"t=search&q=a;b", codeIncorrect},
		{"t=search&q=" + strings.Repeat("x", 10<<10), codeIncorrect},
		{"t=search&q=" + strings.Repeat("x", MaxQuery), codeIncorrect},
		{"t=search&q=" + manyWords(release.MaxSearchWords+1), codeIncorrect},
		{"t=search&q=" + strings.Repeat("x", release.MaxSearchWord+1), codeIncorrect},
		{"t=search&q=" + long[:MaxText+1], codeIncorrect},
		{"t=search&q=a&q=b", codeIncorrect},
		{"t=search&cat=tv", codeIncorrect},
		{"t=search&cat=5000,x", codeIncorrect},
		{"t=search&cat=-5000", codeIncorrect},
		{"t=search&cat=999", codeIncorrect},
		{"t=search&cat=10000", codeIncorrect},
		{"t=search&cat=5000&cat=2000", codeIncorrect},
		{"t=search&cat=" + catList(MaxCategories+1), codeIncorrect},
		{"t=search&limit=-1", codeIncorrect},
		{"t=search&limit=0", codeIncorrect},
		{"t=search&limit=ten", codeIncorrect},
		{"t=search&limit=1e3", codeIncorrect},
		{"t=search&limit=+5", codeIncorrect},
		{"t=search&limit=5&limit=6", codeIncorrect},
		{"t=search&offset=-1", codeIncorrect},
		{"t=search&offset=10001", codeIncorrect},
		{"t=search&offset=99999999999999999999", codeIncorrect},
		{"t=search&maxage=-1", codeIncorrect},
		{"t=search&maxage=100001", codeIncorrect},
		{"t=search&minsize=-1", codeIncorrect},
		{"t=search&maxsize=1.5", codeIncorrect},
		{"t=search&maxsize=99999999999999999999", codeIncorrect},
		{"t=search&extended=yes", codeIncorrect},
		{"t=search&password=2", codeIncorrect},
		{"t=tvsearch&ep=2", codeMissing},
		{"t=tvsearch&season=one", codeIncorrect},
		{"t=tvsearch&season=-1", codeIncorrect},
		{"t=tvsearch&season=12345", codeIncorrect},
		{"t=tvsearch&season=1&ep=x", codeIncorrect},
		{"t=tvsearch&season=1&ep=11/29", codeIncorrect}, // a daily ep needs a year
		{"t=tvsearch&season=2026&ep=13/01", codeIncorrect},
		{"t=tvsearch&season=2026&ep=12/32", codeIncorrect},
		{"t=tvsearch&season=2026&ep=12/", codeIncorrect},
		{"t=tvsearch&season=2026&ep=1/2/3", codeIncorrect},
		{"t=get", codeMissing},
		{"t=get&id=", codeMissing},
		{"t=details", codeMissing},
		{"t=get&id=abc", codeIncorrect},
		{"t=get&id=-1", codeIncorrect},
		{"t=get&id=0", codeIncorrect},
		{"t=get&id=99999999999999999999", codeIncorrect},
		{"t=get&id=1&id=2", codeIncorrect},
	} {
		name := c.raw
		if len(name) > 80 {
			name = name[:80]
		}
		t.Run(name, func(t *testing.T) {
			_, e := parseRequest(c.raw, testLimits())
			require.NotNil(t, e)
			require.Equal(t, c.code, e.Code, e.Description)
			require.NotEmpty(t, e.Description)
		})
	}
}

func catList(n int) string {
	var ids []string
	for i := range n {
		ids = append(ids, strconv.Itoa(2000+i))
	}
	return strings.Join(ids, ",")
}

func manyWords(n int) string {
	var ws []string
	for i := range n {
		ws = append(ws, "w"+strconv.Itoa(i))
	}
	return strings.Join(ws, "+")
}

func TestDecimal(t *testing.T) {
	n, ok := decimal("9223372036854775807")
	require.True(t, ok)
	require.Equal(t, int64(9223372036854775807), n)
	n, ok = decimal("9223372036854775808")
	require.True(t, ok)
	require.Equal(t, int64(9223372036854775807), n)
	for _, s := range []string{"", "-1", "+1", " 1", "1 ", "0x10", "١"} {
		_, ok := decimal(s)
		require.False(t, ok, s)
	}
}
