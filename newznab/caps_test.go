package newznab

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/nzb"
	"github.com/edgeindex/edgeindex/release"
)

func TestCapText(t *testing.T) {
	require.Equal(t, "short", feedText("short"))
	exact := strings.Repeat("a", MaxField)
	require.Equal(t, exact, feedText(exact))
	long := feedText(exact + "b")
	require.Len(t, long, MaxField)
	require.Equal(t, strings.Repeat("a", MaxField-len(ellipsis))+ellipsis, long)
	// Cut on a character boundary, never in the middle of é.
	accents := feedText(strings.Repeat("é", MaxField))
	require.True(t, utf8.ValidString(accents))
	require.LessOrEqual(t, len(accents), MaxField)
	require.True(t, strings.HasSuffix(accents, "é"+ellipsis))
	// Invalid bytes grow into U+FFFD; the result is capped all the same.
	bad := feedText(strings.Repeat("\xff", MaxField))
	require.LessOrEqual(t, len(bad), MaxField)
	require.True(t, strings.HasSuffix(bad, "\uFFFD"+ellipsis))
	require.Equal(t, "a\uFFFDb", pageText("a\x1bb"))
}

// hostileRelease has names of 200 kB made of the bytes that escaping
// grows most, 50 groups and 500 files.
func hostileRelease(id int64) release.Release {
	big := strings.Repeat(`&"<`, 200_000/3)
	r := sampleRelease(id, big, big)
	for i := range 50 {
		r.Groups = append(r.Groups, fmt.Sprintf("%d%s", i, big))
	}
	for i := range 500 {
		r.Files = append(r.Files, release.File{Name: fmt.Sprintf("%d%s", i, big), Bytes: 1000, Total: 1})
	}
	return r
}

// TestFeedCaps: ten releases with 200 kB names make a feed of a bounded
// size, each text cut at MaxField bytes and at most MaxGroups groups.
func TestFeedCaps(t *testing.T) {
	var rels []release.Release
	for i := range 10 {
		rels = append(rels, hostileRelease(int64(i+1)))
	}
	doc := feedDoc(feed{Title: "edgeindex", Base: "http://h", Key: "k", Releases: rels, Total: 10})
	// Per item: a title, a poster and MaxGroups groups of at most
	// MaxField bytes, escaped at most 6 times as long, and a little more.
	perItem := (2 + MaxGroups) * MaxField * 6
	require.Less(t, len(doc), 10*(perItem+2000), "the feed is %d bytes", len(doc))
	got := decode[rssDoc](t, doc)
	require.Len(t, got.Channel.Items, 10)
	for _, it := range got.Channel.Items {
		require.LessOrEqual(t, len(it.Title), MaxField)
		require.True(t, strings.HasSuffix(it.Title, ellipsis))
		require.True(t, strings.HasPrefix(nzb.Text(rels[0].Name), strings.TrimSuffix(it.Title, ellipsis)))
		a := it.attrs()
		require.Len(t, a["group"], MaxGroups)
		for _, v := range append(a["group"], a["poster"]...) {
			require.LessOrEqual(t, len(v), MaxField)
		}
	}
}

// TestDetailsCaps: a details page lists at most MaxFiles files and says
// how many more there are; every text is capped.
func TestDetailsCaps(t *testing.T) {
	h := &Handler{cfg: Config{Title: "edgeindex", Now: time.Now}}
	v := &pageView{Title: "edgeindex"}
	v.Release = h.details(v, hostileRelease(1))
	rec := httptest.NewRecorder()
	h.render(rec, httptest.NewRequest("GET", "/details/1", nil), v, 200)
	body := rec.Body.String()
	require.Equal(t, 200, rec.Code)
	require.Equal(t, MaxFiles, strings.Count(body, `<tr class="file">`))
	require.Contains(t, body, fmt.Sprintf("and %d more files", 500-MaxFiles))
	require.Equal(t, MaxGroups, strings.Count(body, `<li class="group">`))
	require.Contains(t, body, fmt.Sprintf("and %d more</li>", 50-MaxGroups))
	// Title twice (h1 and title), poster, groups, files: each at most
	// MaxField bytes escaped to at most 6 times that.
	require.Less(t, len(body), (3+MaxGroups+MaxFiles)*MaxField*6+20_000, "the page is %d bytes", len(body))
	require.Less(t, len(body), 1<<20)
}
