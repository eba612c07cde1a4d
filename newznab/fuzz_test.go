package newznab

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/nzb"
	"github.com/edgeindex/edgeindex/release"
)

// FuzzParse: any raw query string parses to a request whose Search is
// within release.CheckSearch's bounds (CheckSearch leaves it as it is),
// or to a Newznab error code with a description, whose document is
// well-formed.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"t=caps", "t=search&q=show&cat=5000,5040&limit=1000&offset=100&maxage=7",
		"t=tvsearch&season=2026&ep=11/29", "t=tvsearch&season=S01&ep=E02", "t=movie&imdbid=0133093",
		"t=get&id=1", "t=details&id=%ff", "t=search&q=%00%ff%fe", "t=search&limit=-1&limit=-1", "t=search;q=1",
	} {
		f.Add(s)
	}
	lim := testLimits()
	codes := []int{codeIncorrect, codeMissing, codeNoFunction, codeNotAvailable}
	f.Fuzz(func(t *testing.T, raw string) {
		req, e := parseRequest(raw, lim)
		if e != nil {
			require.Contains(t, codes, e.Code)
			require.NotEmpty(t, e.Description)
			got := decode[errorDocXML](t, errorDoc(e))
			require.Equal(t, strconv.Itoa(e.Code), got.Code)
			require.Equal(t, nzb.Text(e.Description), got.Description)
			return
		}
		switch req.Function {
		case "caps":
		case "get", "details":
			require.Positive(t, req.ID)
		case "search", "tvsearch", "movie":
			checked, err := release.CheckSearch(req.Search)
			require.NoError(t, err)
			require.Equal(t, checked, req.Search)
			require.GreaterOrEqual(t, req.Search.Limit, 1)
			require.LessOrEqual(t, req.Search.Limit, lim.Max)
			require.Equal(t, lim.MinCompletion, req.Search.MinCompletion)
			require.LessOrEqual(t, len(req.Search.Categories), MaxCategories)
		default:
			t.Fatalf("function %q", req.Function)
		}
	})
}

// FuzzFeed: any release names, posters and groups render as a
// well-formed feed that reads back as nzb.Text of each, capped at
// MaxField bytes.
func FuzzFeed(f *testing.F) {
	f.Add("Show.S01E02.720p", "poster@example.com", "alt.binaries.tv", "key")
	f.Add("<&>\"']]>\x00\r\n\t", "\xff\xfe\uFFFE", "a\x01b", "k&y")
	f.Fuzz(func(t *testing.T, name, poster, group, key string) {
		r := sampleRelease(1, name, poster, group, poster)
		doc := feedDoc(feed{Title: name, Base: "http://h", Key: key, Releases: []release.Release{r}, Total: 1})
		checkAttrOrder(t, doc)
		got := decode[rssDoc](t, doc)
		require.Equal(t, nzb.Text(name), got.Channel.Title)
		require.Len(t, got.Channel.Items, 1)
		it := got.Channel.Items[0]
		requireCapped(t, name, it.Title)
		a := it.attrs()
		require.Len(t, a["poster"], 1)
		requireCapped(t, poster, a["poster"][0])
		require.Len(t, a["group"], 2)
		requireCapped(t, group, a["group"][0])
		requireCapped(t, poster, a["group"][1])
		require.Equal(t, it.Link, it.Enclosure.URL)
		require.True(t, slices.Equal(a["guid"], []string{"1"}))
	})
}

// requireCapped checks that got is what an item carries of s: nzb.Text(s)
// when it fits in MaxField bytes, else a valid text of at most MaxField
// bytes that ends in the ellipsis.
func requireCapped(t *testing.T, s, got string) {
	t.Helper()
	if want := nzb.Text(s); len(want) <= MaxField {
		require.Equal(t, want, got)
		return
	}
	require.LessOrEqual(t, len(got), MaxField)
	require.True(t, utf8.ValidString(got))
	require.True(t, strings.HasSuffix(got, ellipsis), "%q", got)
}
