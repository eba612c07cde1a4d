package nzbgettest_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/internal/inntest"
	"github.com/edgeindex/edgeindex/internal/nzbgettest"
	"github.com/edgeindex/edgeindex/nzb"
	"github.com/edgeindex/edgeindex/release"
)

// TestNZBGetServerFeed is the server-mode harness on its own: NZBGet
// subscribes to a hand-written RSS feed that is empty at first; an item
// is added, fetchfeed makes NZBGet read it at once, and NZBGet queues the
// item's enclosure and rebuilds its file, byte for byte, from INN.
func TestNZBGetServerFeed(t *testing.T) {
	t.Parallel()
	nzbgettest.NZBGet(t)
	nzbgettest.RequireINN(t)
	const group = "alt.binaries.nzbget.feed"
	inn := inntest.Start(t)
	inn.NewGroup(t, group)

	const name = "feed.harness.bin"
	day := time.Date(2025, 6, 2, 10, 0, 0, 0, time.UTC)
	data, f := postFile(t, inn, group, name, 8, 15_000, 8_000, day)
	reader := inn.StartReader(t)
	var doc bytes.Buffer
	require.NoError(t, nzb.Write(&doc, release.Release{Name: "feed.harness", Groups: []string{group}, Files: []release.File{f}}))

	var (
		mu       sync.Mutex
		items    string
		fetches  atomic.Int64
		nzbFetch atomic.Int64
	)
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	mux.HandleFunc("GET /feed", func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/rss+xml")
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:newznab="http://www.newznab.com/DTD/2010/feeds/attributes/"><channel><title>t</title>%s</channel></rss>`, items)
	})
	mux.HandleFunc("GET /nzb/1", func(w http.ResponseWriter, r *http.Request) {
		nzbFetch.Add(1)
		w.Header().Set("Content-Type", "application/x-nzb")
		w.Header().Set("Content-Disposition", `attachment; filename="feed.harness.nzb"`)
		w.Write(doc.Bytes())
	})

	s := nzbgettest.StartServer(t, nzbgettest.ServerConfig{News: reader.Addr(),
		Feeds: []nzbgettest.Feed{{Name: "harness", URL: srv.URL + "/feed"}}})
	require.Eventually(t, func() bool { return fetches.Load() > 0 }, 30*time.Second, 20*time.Millisecond, "NZBGet fetches the feed at start")
	time.Sleep(200 * time.Millisecond) // let it finish reading the empty feed
	require.Empty(t, s.Queue(t))

	mu.Lock()
	items = fmt.Sprintf(`<item><title>feed.harness</title><guid isPermaLink="false">1</guid><pubDate>%s</pubDate>`+
		`<enclosure url="%s/nzb/1" length="%d" type="application/x-nzb"/>`+
		`<newznab:attr name="category" value="8010"/><newznab:attr name="size" value="%d"/></item>`,
		day.Format(time.RFC1123Z), srv.URL, len(data), len(data))
	mu.Unlock()
	before := fetches.Load()
	s.FetchFeed(t, 1)
	require.Eventually(t, func() bool { return fetches.Load() > before }, 30*time.Second, 20*time.Millisecond, "fetchfeed fetches")

	var done nzbgettest.Item
	require.Eventually(t, func() bool {
		for _, it := range s.History(t) {
			if it.Kind == "NZB" {
				done = it
				return true
			}
		}
		return false
	}, 60*time.Second, 100*time.Millisecond, "NZBGet downloads the feed's item")
	require.True(t, strings.HasPrefix(done.Status, "SUCCESS"), "%+v\n%s", done, s.Log())
	require.Equal(t, int64(1), nzbFetch.Load(), "the enclosure was fetched once")
	sum := sha256.Sum256(data)
	require.Equal(t, map[string]string{name: hex.EncodeToString(sum[:])}, nzbgettest.Files(t, done.DestDir), "%s", s.Log())
	s.Shutdown(t)
}
