package newznab_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/internal/pgtest"
	"github.com/edgeindex/edgeindex/newznab"
	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/sqlstore"
	"github.com/edgeindex/edgeindex/usenet"
)

// TestDetailsCountsWithoutParts: the details page shows each file's
// parts counted, read without its parts; a file stored before its count
// was kept is counted from its items.
func TestDetailsCountsWithoutParts(t *testing.T) {
	forBackends(t, func(t *testing.T, w *pageWorld) {
		doc := w.release(t, "Ocean.Documentary.2024.1080p.WEB.x264-GRP") // 2 files of 3 parts
		path := "/details/" + strconv.FormatInt(doc.ID, 10)
		code, body := w.get(t, path, true)
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, 2, strings.Count(body, `data-label="Parts">3/3<`), body)

		res, err := w.store.DB().ExecContext(t.Context(), `UPDATE release_files SET value = REPLACE(value, '"seen":', '"old":')`)
		require.NoError(t, err)
		n, err := res.RowsAffected()
		require.NoError(t, err)
		require.Positive(t, n)
		code, body = w.get(t, path, true)
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, 2, strings.Count(body, `data-label="Parts">3/3<`), "counted from the items")
	})
}

// piecesStore is the real store but for ReleaseFiles, which fails: at
// once (failAfter 0) or after that many files.
type piecesStore struct {
	*sqlstore.Store
	failAfter int
	calls     atomic.Int64
}

var errFiles = errors.New("the files cannot be read")

func (s *piecesStore) ReleaseFiles(ctx context.Context, id int64, each func(release.File) error) error {
	s.calls.Add(1)
	n := 0
	err := s.Store.ReleaseFiles(ctx, id, func(f release.File) error {
		if n == s.failAfter {
			return errFiles
		}
		n++
		return each(f)
	})
	return err
}

// TestNZBPieces: a HEAD of an NZB reads no file of the release (it
// answers from the release alone); a GET whose files cannot be read
// answers 900 when nothing was sent, and counts no grab; one that fails
// after its first file is cut (the connection closed without the end of
// the body), so the downloader sees a broken download and never a whole,
// shorter NZB.
func TestNZBPieces(t *testing.T) {
	forBackends(t, func(t *testing.T, w *pageWorld) {
		doc := w.release(t, "Ocean.Documentary.2024.1080p.WEB.x264-GRP")
		s := &piecesStore{Store: w.store}
		h, err := newznab.New(newznab.Config{Store: s, Now: func() time.Time { return now }})
		require.NoError(t, err)
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		u := srv.URL + "/api?t=get&id=" + strconv.FormatInt(doc.ID, 10) + "&apikey=" + w.key

		grabs := w.grabs(t)
		res, body := do(t, http.MethodHead, u, "")
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.Empty(t, body)
		require.Zero(t, s.calls.Load(), "a HEAD reads no file")
		require.Equal(t, grabs, w.grabs(t))

		res, body = do(t, http.MethodGet, u, "")
		require.Equal(t, http.StatusInternalServerError, res.StatusCode)
		require.Equal(t, "900", newznab.Decode[newznab.ErrorDoc](t, body).Code)
		require.Equal(t, grabs, w.grabs(t), "nothing sent, nothing counted")

		s.failAfter = 1
		res, err = http.Get(u) // on a connection kept alive: a client would retry one closed unanswered
		require.NoError(t, err, "the answer began before the failure")
		defer res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode)
		got, err := io.ReadAll(res.Body)
		require.ErrorIs(t, err, io.ErrUnexpectedEOF, "the NZB is cut, not ended")
		require.NotContains(t, string(got), "</nzb>")
		require.Equal(t, grabs+1, w.grabs(t), "charged once, as the NZB began")
	})
}

// TestNZBStreamed: the NZB of a release of 200,000 parts (200 files of
// 1,000) is sent whole while the live heap grows by less than 32 MiB and
// less than half the NZB's 15 MB: the store gives it a few files at a
// time and the encoder writes them as they come. (Held whole, as before,
// the NZB alone was in memory, beside the parts it was written from.)
func TestNZBStreamed(t *testing.T) {
	// Not parallel: the heap it measures is the process's.
	ctx := t.Context()
	s, err := sqlstore.Open(ctx, pgtest.Backends[0].URL(t), sqlstore.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	const files, parts = 200, 1000
	bins := make([]usenet.Binary, files)
	for f := range bins {
		b := usenet.Binary{Subject: fmt.Sprintf(`[%d/%d] - "Big.Release.2026.part%03d.rar" yEnc`, f+1, files, f+1),
			Name: fmt.Sprintf("Big.Release.2026.part%03d.rar", f+1), Poster: "p <p@example.test>", Group: "alt.binaries.big",
			Date: now.Format(time.RFC1123Z), Total: parts, Complete: true}
		for n := 1; n <= parts; n++ {
			a := int64(f*parts + n)
			b.Parts = append(b.Parts, usenet.Part{N: n, Article: a, MessageID: fmt.Sprintf("<part%d.big@example.test>", a), Bytes: 700_000})
		}
		bins[f] = b
	}
	buildReleases(t, s, nil, "alt.binaries.big", "n", files*parts, bins)
	bins = nil
	key, err := newznab.NewKey()
	require.NoError(t, err)
	require.NoError(t, s.AddUser(ctx, newznab.User{Name: "big", KeyHash: newznab.HashKey(key)}))
	found, err := s.SearchReleases(ctx, release.Search{Words: []string{"big", "release"}, MinCompletion: 1})
	require.NoError(t, err)
	require.Len(t, found.Releases, 1)
	h, err := newznab.New(newznab.Config{Store: s, Now: func() time.Time { return now }})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	defer debug.SetGCPercent(debug.SetGCPercent(10)) // collect often: the live heap is read at each collection
	runtime.GC()
	base, peak := liveHeap(), uint64(0)
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			peak = max(peak, liveHeap())
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	res, err := http.Get(srv.URL + "/api?t=get&id=" + strconv.FormatInt(found.Releases[0].ID, 10) + "&apikey=" + key)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	c := &segmentCounter{}
	n, err := io.Copy(c, res.Body)
	close(done)
	<-sampled
	require.NoError(t, err)
	require.Equal(t, files*parts, c.segments, "every segment was sent")
	require.True(t, strings.HasSuffix(c.tail, "</nzb>\n"), "the NZB ended")
	grew := int64(peak) - int64(base)
	t.Logf("NZB of %d bytes; live heap %d MiB before, at most %d MiB more while sending", n, base>>20, grew>>20)
	require.Less(t, grew, int64(32<<20))
	require.Less(t, grew, n/2, "never held whole: less than half the NZB")
}

// liveHeap is the heap the last collection left live.
func liveHeap() uint64 {
	m := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(m)
	return m[0].Value.Uint64()
}

// segmentCounter counts the <segment elements written to it, keeping the
// last bytes.
type segmentCounter struct {
	segments int
	tail     string
}

func (c *segmentCounter) Write(p []byte) (int, error) {
	s := c.tail + string(p)
	c.segments += strings.Count(s, "<segment ") - strings.Count(c.tail, "<segment ")
	c.tail = s[max(0, len(s)-16):]
	return len(p), nil
}

// filesSent counts the files ReleaseFiles has handed on.
type filesSent struct {
	*sqlstore.Store
	files atomic.Int64
}

func (s *filesSent) ReleaseFiles(ctx context.Context, id int64, each func(release.File) error) error {
	return s.Store.ReleaseFiles(ctx, id, func(f release.File) error {
		s.files.Add(1)
		return each(f)
	})
}

// TestNZBStalledClientHoldsNoConnection: a downloader that starts an NZB
// and stops reading leaves the front door's database pool free. With a
// pool of one connection, while the NZB's writes wait on a full socket,
// another user's search and the same release's details answer at once.
func TestNZBStalledClientHoldsNoConnection(t *testing.T) {
	t.Parallel()
	for _, b := range pgtest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			st, err := sqlstore.Open(ctx, b.URL(t), sqlstore.Config{FrontConns: 1})
			require.NoError(t, err)
			t.Cleanup(func() { st.Close() })
			const files, parts = 20, 500
			bins := make([]usenet.Binary, files)
			for f := range bins {
				bins[f] = usenet.Binary{Subject: fmt.Sprintf(`[%d/%d] - "Stalled.Release.part%02d.rar" yEnc`, f+1, files, f+1),
					Name: fmt.Sprintf("Stalled.Release.part%02d.rar", f+1), Poster: "p <p@example.test>", Group: "alt.binaries.stall",
					Date: now.Format(time.RFC1123Z), Total: parts, Complete: true}
				for n := 1; n <= parts; n++ {
					a := int64(f*parts + n)
					bins[f].Parts = append(bins[f].Parts, usenet.Part{N: n, Article: a, MessageID: fmt.Sprintf("<p%d.stall@example.test>", a), Bytes: 700_000})
				}
			}
			buildReleases(t, st, nil, "alt.binaries.stall", "n", files*parts, bins)
			key, err := newznab.NewKey()
			require.NoError(t, err)
			require.NoError(t, st.AddUser(ctx, newznab.User{Name: "stall", KeyHash: newznab.HashKey(key)}))
			other, err := newznab.NewKey()
			require.NoError(t, err)
			require.NoError(t, st.AddUser(ctx, newznab.User{Name: "other", KeyHash: newznab.HashKey(other)}))
			found, err := st.SearchReleases(ctx, release.Search{Words: []string{"stalled"}, MinCompletion: 1})
			require.NoError(t, err)
			require.Len(t, found.Releases, 1)
			id := strconv.FormatInt(found.Releases[0].ID, 10)

			s := &filesSent{Store: st}
			h, err := newznab.New(newznab.Config{Store: s, Now: func() time.Time { return now }})
			require.NoError(t, err)
			srv := httptest.NewUnstartedServer(h)
			srv.Config.ConnState = func(c net.Conn, state http.ConnState) {
				if tc, ok := c.(*net.TCPConn); ok && state == http.StateNew {
					tc.SetWriteBuffer(4096) // the writes wait early
				}
			}
			srv.Start()
			t.Cleanup(srv.Close)

			// The stalled downloader: a small receive buffer, headers read,
			// then nothing.
			stalled := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
				if tc, ok := c.(*net.TCPConn); ok {
					tc.SetReadBuffer(4096)
				}
				return c, err
			}}}
			res, err := stalled.Get(srv.URL + "/api?t=get&id=" + id + "&apikey=" + key)
			require.NoError(t, err)
			defer res.Body.Close()
			require.Equal(t, http.StatusOK, res.StatusCode)
			for last := int64(-1); ; { // until the files handed on stop growing
				time.Sleep(200 * time.Millisecond)
				n := s.files.Load()
				if n == last {
					break
				}
				last = n
			}
			require.Less(t, s.files.Load(), int64(files), "the NZB's writes wait on the stalled client")

			quick := &http.Client{Timeout: 3 * time.Second}
			for _, u := range []string{"/api?t=search&q=stalled&apikey=" + other, "/api?t=details&id=" + id + "&apikey=" + other} {
				r, err := quick.Get(srv.URL + u)
				require.NoError(t, err, "answered while the NZB waits: %s", u)
				body, err := io.ReadAll(r.Body)
				r.Body.Close()
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, r.StatusCode)
				require.Contains(t, string(body), "Stalled.Release", u)
			}
			// The downloader gives up; the server's Close waits for the
			// NZB's handler to end.
		})
	}
}
