package main

import (
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/collate"
	"github.com/edgeindex/edgeindex/edge"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/internal/inntest"
	"github.com/edgeindex/edgeindex/internal/nzbgettest"
	"github.com/edgeindex/edgeindex/internal/syncbuf"
	"github.com/edgeindex/edgeindex/internal/yenctest"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// The helpers the Newznab tests with real clients (NZBGet, feedparser)
// share: serve with --newznab in this process, collating workers, releases
// posted into INN, and the API's documents fetched, checked well-formed
// with xmllint and decoded.

// nzServing is serve with its Newznab front door.
type nzServing struct {
	*serving
	nz string // the Newznab API's base URL, http://127.0.0.1:PORT
}

// startNewznabServe starts serve with --newznab 127.0.0.1:0 and args, as
// startServe does, and waits for both listeners.
func startNewznabServe(t *testing.T, data string, args ...string) *nzServing {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	s := &nzServing{serving: &serving{stderr: &syncbuf.Buffer{}, cancel: cancel, done: make(chan error, 1)}}
	addr, nz := make(chan string, 1), make(chan string, 1)
	m := NewMain(io.Discard, s.stderr)
	m.Ready = func(a string) { addr <- a }
	m.NewznabReady = func(a string) { nz <- a }
	go func() {
		s.done <- m.Run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0", "--newznab", "127.0.0.1:0", "--data", data}, args...))
	}()
	for s.base == "" || s.nz == "" {
		select {
		case a := <-addr:
			s.base = "http://" + a
		case a := <-nz:
			s.nz = "http://" + a
		case err := <-s.done:
			cancel()
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("serve's log:\n%s", s.stderr)
		}
	})
	return s
}

// startCollators runs n collating workers against serve at baseURL until
// the returned stop is called (it waits for them; calling it again does
// nothing). The test's end calls it too.
func startCollators(t *testing.T, baseURL, token string, n int) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for range n {
		col, err := collate.New(collate.Config{})
		require.NoError(t, err)
		cl, err := edge.NewClient(edge.Config{BaseURL: baseURL, Token: strings.TrimSpace(token)})
		require.NoError(t, err)
		w, err := edge.NewWorker(edge.WorkerConfig{Client: cl, Handler: col, Idle: 20 * time.Millisecond,
			Lanes: []lease.Lane{lease.LaneTail, lease.LaneHistory}})
		require.NoError(t, err)
		wg.Go(func() { w.Run(ctx) })
	}
	stop = sync.OnceFunc(func() {
		cancel()
		wg.Wait()
	})
	t.Cleanup(stop)
	return stop
}

// addUser adds a Newznab user with `coordinator user add` and returns its
// key: the last line the command prints.
func addUser(t *testing.T, data, name string) string {
	t.Helper()
	out, err := run(t, data, "user", "add", name)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	key := strings.TrimSpace(lines[len(lines)-1])
	require.Len(t, key, 32, "the key alone, on the last line: %q", out)
	return key
}

// releaseArticles makes the articles of release r: each file split into
// yEnc parts of partSize bytes, every subject as a poster's tool writes
// it (`NAME [01/03] - "FILE" yEnc (1/4)`) unless the file has its own,
// the parts of the files interleaved, every article dated date.
func releaseArticles(rng *rand.Rand, r upRelease, partSize int, date time.Time) []inntest.Article {
	var queues [][]inntest.Article
	for i, f := range r.files {
		subject := f.subject
		if subject == nil {
			subject = func(p, n int) string {
				return fmt.Sprintf(`%s [%02d/%02d] - "%s" yEnc (%d/%d)`, r.name, i+1, len(r.files), f.name, p, n)
			}
		}
		var q []inntest.Article
		for _, p := range yenctest.Encode(f.name, f.data, partSize, yenctest.DefaultLine) {
			q = append(q, inntest.Article{
				MessageID:  fmt.Sprintf("<%s.%d.%x@newznab.example.test>", strings.ReplaceAll(f.name, ".", "-"), p.Number, rng.Uint64()),
				From:       r.poster,
				Newsgroups: strings.Join(r.groups, ","),
				Date:       date.Format(time.RFC1123Z),
				Subject:    subject(p.Number, p.Total),
				Body:       p.Body,
			})
		}
		queues = append(queues, q)
	}
	var arts []inntest.Article
	for len(queues) > 0 {
		i := rng.IntN(len(queues))
		arts = append(arts, queues[i][0])
		if queues[i] = queues[i][1:]; len(queues[i]) == 0 {
			queues = append(queues[:i], queues[i+1:]...)
		}
	}
	return arts
}

// textArticles makes n plain text posts to group: no binary, no release.
func textArticles(n int, group string, date time.Time) []inntest.Article {
	var arts []inntest.Article
	for i := range n {
		arts = append(arts, inntest.Article{
			MessageID:  fmt.Sprintf("<text.%d.%d@newznab.example.test>", i, date.UnixNano()),
			From:       "Talker <talker@example.test>",
			Newsgroups: group,
			Date:       date.Format(time.RFC1123Z),
			Subject:    fmt.Sprintf("a question, %d", i),
			Body:       []byte("Has anyone seen this?\r\n"),
		})
	}
	return arts
}

// apiGet fetches url and returns its body, failing the test unless the
// answer has the status and the content type's media type wanted. Every
// document is checked well-formed with xmllint --noout (and kept in the
// test's directory under name for that).
func apiGet(t *testing.T, url, name string, status int, mediaType string) []byte {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "GET", url, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, status, resp.StatusCode, "%s: %s", url, body)
	ct := resp.Header.Get("Content-Type")
	require.True(t, strings.HasPrefix(ct, mediaType), "%s: content type %q, want %s", url, ct, mediaType)
	xmlLint(t, name, body)
	return body
}

// xmlLint writes doc to a file and checks it with xmllint --noout.
func xmlLint(t *testing.T, name string, doc []byte) {
	t.Helper()
	file := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(file, doc, 0o600))
	out, err := exec.Command(nzbgettest.XMLLint(t), "--noout", "--nonet", file).CombinedOutput()
	require.NoError(t, err, "xmllint --noout %s:\n%s\n%s", name, out, doc)
}

// rss is a search answer, as encoding/xml reads it.
type rss struct {
	XMLName  xml.Name `xml:"rss"`
	Response struct {
		Offset int `xml:"offset,attr"`
		Total  int `xml:"total,attr"`
	} `xml:"channel>response"`
	Items []rssItem `xml:"channel>item"`
}

// rssItem is one <item> of a search answer.
type rssItem struct {
	Title     string `xml:"title"`
	GUID      string `xml:"guid"`
	Link      string `xml:"link"`
	PubDate   string `xml:"pubDate"`
	Category  string `xml:"category"`
	Enclosure struct {
		URL    string `xml:"url,attr"`
		Length int64  `xml:"length,attr"`
		Type   string `xml:"type,attr"`
	} `xml:"enclosure"`
	Attrs []struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	} `xml:"http://www.newznab.com/DTD/2010/feeds/attributes/ attr"`
}

// attr returns the values of the item's newznab:attr name, in order.
func (it rssItem) attr(name string) []string {
	var vs []string
	for _, a := range it.Attrs {
		if a.Name == name {
			vs = append(vs, a.Value)
		}
	}
	return vs
}

// search fetches a search answer (apiGet) and decodes it.
func search(t *testing.T, url, name string) rss {
	t.Helper()
	body := apiGet(t, url, name, http.StatusOK, "application/rss+xml")
	var doc rss
	require.NoError(t, xml.Unmarshal(body, &doc), "%s", body)
	return doc
}

// titles are the items' titles, in order.
func (r rss) titles() []string {
	var ts []string
	for _, it := range r.Items {
		ts = append(ts, it.Title)
	}
	return ts
}

// enclosureID returns the release id of an NZB link of the API (t=get),
// checking that it carries key.
func enclosureID(t *testing.T, link, key string) int64 {
	t.Helper()
	u, err := url.Parse(link)
	require.NoError(t, err)
	q := u.Query()
	require.Equal(t, "get", q.Get("t"), link)
	require.Equal(t, key, q.Get("apikey"), "%s carries the key", link)
	id, err := strconv.ParseInt(q.Get("id"), 10, 64)
	require.NoError(t, err, link)
	return id
}

// settled reports whether serve has indexed every group of want up to its
// article count (every range done, nothing missing) and the release
// builder has consumed every item of the feed, so that no release
// changes any more.
func settled(t *testing.T, store *sqlstore.Store, want map[string]int64) bool {
	t.Helper()
	ctx := t.Context()
	plans, err := store.Plans(ctx)
	require.NoError(t, err)
	if len(plans) != len(want) {
		return false
	}
	for _, p := range plans {
		if p.High != want[p.Group] || p.Lag != 0 || p.Missing.Waiting+p.Missing.Repairing > 0 {
			return false
		}
		rs, err := store.Ranges(ctx, grouplease.RangeFilter{Group: p.Group, Limit: 10000})
		require.NoError(t, err)
		for _, r := range rs {
			if r.State != lease.StateDone {
				return false
			}
		}
	}
	cur, err := store.ReleaseCursor(ctx, release.DefaultConsumer)
	require.NoError(t, err)
	return cur.Items == int64(len(readFeed(t, store, "")))
}
