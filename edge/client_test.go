package edge_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/edge"
	"github.com/edgeindex/edgeindex/edgeframe"
	"github.com/edgeindex/edgeindex/lease"
)

// sleeps records the waits asked of an injected clock, which pass at once.
type sleeps struct {
	mu sync.Mutex
	ds []time.Duration
}

func (s *sleeps) clock() waitFunc {
	return func(d time.Duration) bool {
		s.mu.Lock()
		s.ds = append(s.ds, d)
		s.mu.Unlock()
		return true
	}
}

func (s *sleeps) got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.ds...)
}

// startCoord starts c and returns a client of it; cfg's BaseURL, Token and
// HTTP are filled in, and Clock when it is nil (recording into the returned
// sleeps).
func startCoord(t testing.TB, c *coord, cfg edge.Config) (*edge.Client, *sleeps) {
	t.Helper()
	srv := c.start()
	t.Cleanup(srv.Close)
	cfg.BaseURL, cfg.HTTP = srv.URL, srv.Client()
	if cfg.Token == "" {
		cfg.Token = c.token
	}
	s := &sleeps{}
	if cfg.Clock == nil {
		cfg.Clock = s.clock()
	}
	if cfg.Rand == nil {
		cfg.Rand = func() float64 { return 0 }
	}
	cl, err := edge.NewClient(cfg)
	require.NoError(t, err)
	return cl, s
}

// leased grants the coordinator's first plain range through cl.
func leased(t *testing.T, cl *edge.Client) lease.Lease {
	t.Helper()
	l, ok, err := cl.Lease(context.Background())
	require.NoError(t, err)
	require.True(t, ok)
	return l
}

func TestClientRetries5xxWithBackoff(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	c.addRange("alt.test", 1, 300)
	c.failFirst("/heartbeat", 2, 503, "the database is restarting")
	cl, s := startCoord(t, c, edge.Config{Backoff: 100 * time.Millisecond, Rand: func() float64 { return 0.5 }})
	l := leased(t, cl)

	exp, err := cl.Heartbeat(context.Background(), l.Range.ID, l.Token)
	require.NoError(t, err)
	require.False(t, exp.IsZero())
	// Between half and all of 100 ms, then of 200 ms: Rand 0.5 gives 3/4.
	require.Equal(t, []time.Duration{75 * time.Millisecond, 150 * time.Millisecond}, s.got())
	require.Equal(t, 3, countCalls(c.callLog(), "POST /v1/ranges/1/heartbeat"))
}

func TestClientBackoffCapsAndGivesUp(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	c.addRange("alt.test", 1, 300)
	c.before = func(r *http.Request) (int, string) {
		if strings.HasSuffix(r.URL.Path, "/finish") {
			return 502, "bad gateway upstream"
		}
		return 0, ""
	}
	cl, s := startCoord(t, c, edge.Config{Backoff: 100 * time.Millisecond, MaxBackoff: 300 * time.Millisecond, Attempts: 5})
	l := leased(t, cl)

	err := cl.Finish(context.Background(), l.Range.ID, l.Token)
	require.ErrorIs(t, err, edge.ErrServer)
	var he *edge.HTTPError
	require.ErrorAs(t, err, &he)
	require.Equal(t, 502, he.Status)
	require.Contains(t, err.Error(), "bad gateway upstream")
	// Rand 0 waits half of 100, 200, 300 (capped), 300 ms.
	require.Equal(t, []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 150 * time.Millisecond, 150 * time.Millisecond}, s.got())
	require.Equal(t, 5, countCalls(c.callLog(), "POST /v1/ranges/1/finish"))
}

func TestClientRetryStopsWhenContextEnds(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	c.addRange("alt.test", 1, 300)
	c.before = func(r *http.Request) (int, string) {
		if strings.HasSuffix(r.URL.Path, "/release") {
			return 500, "boom"
		}
		return 0, ""
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cl, _ := startCoord(t, c, edge.Config{Clock: waitFunc(func(time.Duration) bool {
		cancel()
		return true
	})})
	l := leased(t, cl)
	err := cl.Release(ctx, l.Range.ID, l.Token)
	require.ErrorIs(t, err, edge.ErrServer)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 1, countCalls(c.callLog(), "POST /v1/ranges/1/release"))
}

func TestClientStatusTable(t *testing.T) {
	t.Parallel()
	cases := []struct {
		status int
		msg    string
		want   error
		not    error
	}{
		{409, "range 1: lease lost: token 3 is not current", edgeindex.ErrLeaseLost, edgeindex.ErrConflict},
		{409, "batch gap: batch starts at 200 but the range's next is 100", edgeindex.ErrConflict, edgeindex.ErrLeaseLost},
		{404, "no such range", edgeindex.ErrNotFound, nil},
		{400, "from (5) is after to (4)", edgeindex.ErrInvalid, nil},
		{401, "a missing or unknown node token", edge.ErrUnauthorized, nil},
		{403, "an admin call", edge.ErrUnauthorized, nil},
		{413, "the body is over 64 MiB", edge.ErrTooLarge, nil},
		{418, "a teapot", edge.ErrProtocol, nil},
	}
	for _, tc := range cases {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			t.Parallel()
			c := newCoord(100)
			c.addRange("alt.test", 1, 300)
			c.before = func(r *http.Request) (int, string) {
				if strings.HasSuffix(r.URL.Path, "/batch") {
					return tc.status, tc.msg
				}
				return 0, ""
			}
			cl, s := startCoord(t, c, edge.Config{})
			l := leased(t, cl)
			_, err := cl.PostBatch(context.Background(), l.Range.ID, l.Token, batch.Batch{From: 1, To: 100})
			require.ErrorIs(t, err, tc.want)
			if tc.not != nil {
				require.NotErrorIs(t, err, tc.not)
			}
			require.Contains(t, err.Error(), tc.msg)
			require.Empty(t, s.got(), "a 4xx is never retried")
			calls := 1
			if tc.status == 400 {
				calls = 2 // the binary body refused, then the JSON one (TestClientBinaryBatchFallsBackToJSON)
			}
			require.Equal(t, calls, countCalls(c.callLog(), "POST /v1/ranges/1/batch"))
		})
	}
}

// The client decides by the answer's status and code, never by its
// sentence: a 409 whose sentence says "lease lost" but whose code is
// conflict is a conflict, and the other way round.
func TestClientDecidesByCode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status    int
		body      string
		want, not error
		retried   bool
	}{
		{409, `{"error": "range 1: lease lost", "code": "conflict"}`, edgeindex.ErrConflict, edgeindex.ErrLeaseLost, false},
		{409, `{"error": "range 1 is held under a newer grant", "code": "lease_lost"}`, edgeindex.ErrLeaseLost, edgeindex.ErrConflict, false},
		{409, `{"error": "range 1: lease lost"}`, edgeindex.ErrConflict, edgeindex.ErrLeaseLost, false},
		{503, `{"error": "no room for the batch", "code": "busy"}`, api.ErrBusy, nil, true},
		{404, `{"error": "range 1: not found", "code": "not_found"}`, edgeindex.ErrNotFound, nil, false},
	} {
		t.Run(tc.body, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int32
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			t.Cleanup(hs.Close)
			s := &sleeps{}
			cl, err := edge.NewClient(edge.Config{BaseURL: hs.URL, Token: "t", HTTP: hs.Client(), Attempts: 2, Clock: s.clock()})
			require.NoError(t, err)
			err = cl.Release(context.Background(), 1, 1)
			require.ErrorIs(t, err, tc.want)
			if tc.not != nil {
				require.NotErrorIs(t, err, tc.not)
			}
			var he *edge.HTTPError
			require.ErrorAs(t, err, &he)
			require.Equal(t, tc.status, he.Status)
			want := int32(1)
			if tc.retried {
				want = 2
			}
			require.Equal(t, want, calls.Load())
		})
	}
}

func TestClientSendsTokens(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	c.addRange("alt.test", 1, 300)
	var auth, tok atomic.Value
	c.before = func(r *http.Request) (int, string) {
		if strings.HasSuffix(r.URL.Path, "/heartbeat") {
			auth.Store(r.Header.Get("Authorization"))
			tok.Store(r.Header.Get("Lease-Token"))
		}
		return 0, ""
	}
	cl, _ := startCoord(t, c, edge.Config{})
	l := leased(t, cl)
	_, err := cl.Heartbeat(context.Background(), l.Range.ID, l.Token)
	require.NoError(t, err)
	require.Equal(t, "Bearer node-secret", auth.Load())
	require.Equal(t, "1", tok.Load())

	// A stale token is fenced.
	_, err = cl.Heartbeat(context.Background(), l.Range.ID, l.Token+1)
	require.ErrorIs(t, err, edgeindex.ErrLeaseLost)

	// A wrong node token gets 401, not retried.
	bad, s := startCoord(t, c, edge.Config{Token: "wrong"})
	_, _, err = bad.Lease(context.Background())
	require.ErrorIs(t, err, edge.ErrUnauthorized)
	require.Empty(t, s.got())
}

func TestClientNetworkErrorRetried(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	c.addRange("alt.test", 1, 300)
	c.failFirst("/heartbeat", 1, -1, "") // drop the connection
	cl, s := startCoord(t, c, edge.Config{})
	l := leased(t, cl)
	_, err := cl.Heartbeat(context.Background(), l.Range.ID, l.Token)
	require.NoError(t, err)
	require.Len(t, s.got(), 1)
}

func TestClientGrantsAreNotRetried(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	c.addRange("alt.test", 1, 300)
	c.before = func(r *http.Request) (int, string) {
		if strings.HasSuffix(r.URL.Path, "/lease") {
			return 503, "busy"
		}
		return 0, ""
	}
	cl, s := startCoord(t, c, edge.Config{})
	_, _, err := cl.Lease(context.Background())
	require.ErrorIs(t, err, edge.ErrServer)
	_, _, err = cl.LeaseLane(context.Background(), lease.LaneTail)
	require.ErrorIs(t, err, edge.ErrServer)
	require.Empty(t, s.got())
	require.Equal(t, []string{"POST /v1/lease 503", "POST /v1/groups/lease 503"}, c.callLog())
}

func TestClientNoWork(t *testing.T) {
	t.Parallel()
	cl, _ := startCoord(t, newCoord(100), edge.Config{})
	_, ok, err := cl.Lease(context.Background())
	require.NoError(t, err)
	require.False(t, ok)
	_, ok, err = cl.LeaseLane(context.Background(), "")
	require.NoError(t, err)
	require.False(t, ok)
}

func TestClientDuplicateBatchIsSuccess(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	c.addRange("alt.test", 1, 300)
	var lost atomic.Int32
	// The first batch is stored, but its answer is lost: the retry is a
	// duplicate, which counts as success.
	c.lose = func(r *http.Request) bool {
		return strings.HasSuffix(r.URL.Path, "/batch") && lost.Add(1) == 1
	}
	cl, s := startCoord(t, c, edge.Config{})
	l := leased(t, cl)
	b := batch.Batch{From: 1, To: 100, Headers: 100, Items: []batch.Item{{Key: "k", Value: []byte(`{"n":1}`)}}}
	res, err := cl.PostBatch(context.Background(), l.Range.ID, l.Token, b)
	require.NoError(t, err)
	require.Equal(t, batch.Result{Next: 101, Duplicate: true}, res.Result)
	require.Len(t, s.got(), 1)
	require.Equal(t, []batch.Batch{b}, c.batches(), "stored exactly once")
	require.Equal(t, int64(101), c.rng(l.Range.ID).Next)

	// The next batch is stored as usual.
	res, err = cl.PostBatch(context.Background(), l.Range.ID, l.Token, batch.Batch{From: 101, To: 200})
	require.NoError(t, err)
	require.Equal(t, batch.Result{Next: 201}, res.Result)
	require.Len(t, c.batches(), 2)
	require.Equal(t, []batch.Item{}, c.batches()[1].Items, "nil items are sent as a list")
}

func TestClientBatchChecks(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	c.addRange("alt.test", 1, 300)
	cl, _ := startCoord(t, c, edge.Config{})
	l := leased(t, cl)
	ctx := context.Background()

	_, err := cl.PostBatch(ctx, l.Range.ID, l.Token, batch.Batch{From: 10, To: 5})
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
	require.ErrorIs(t, err, edgeframe.ErrBadBatch)
	_, err = cl.PostBatch(ctx, l.Range.ID, l.Token, batch.Batch{From: 1, To: 5, Items: []batch.Item{{Key: ""}}})
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
	require.Equal(t, 1, len(c.callLog()), "bad batches are not sent")

	// The server's checks come back as errors: past the end, and a gap.
	_, err = cl.PostBatch(ctx, l.Range.ID, l.Token, batch.Batch{From: 1, To: 301})
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
	require.Contains(t, err.Error(), "past the range's end 300")
	_, err = cl.PostBatch(ctx, l.Range.ID, l.Token, batch.Batch{From: 50, To: 100})
	require.ErrorIs(t, err, edgeindex.ErrConflict)
	require.NotErrorIs(t, err, edgeindex.ErrLeaseLost)
}

func TestClientTooLarge(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	c.addRange("alt.test", 1, 300)
	cl, s := startCoord(t, c, edge.Config{})
	l := leased(t, cl)
	// The coordinator's limit here is 1 MiB.
	big := batch.Batch{From: 1, To: 100, Items: []batch.Item{{Key: "k", Value: []byte(`"` + strings.Repeat("x", 2<<20) + `"`)}}}
	_, err := cl.PostBatch(context.Background(), l.Range.ID, l.Token, big)
	require.ErrorIs(t, err, edge.ErrTooLarge)
	require.Empty(t, s.got())
	require.Equal(t, int64(1), c.rng(l.Range.ID).Next)
}

func TestClientRangeCalls(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	id := c.addRange("alt.test", 1, 300)
	cl, _ := startCoord(t, c, edge.Config{})
	ctx := context.Background()
	l := leased(t, cl)
	require.Equal(t, lease.Range{ID: id, Group: "alt.test", GroupID: 1, Lane: lease.LaneHistory, Start: 1, End: 300, Next: 1,
		State: lease.StateLeased}, l.Range)
	require.Equal(t, lease.Seconds(time.Minute), l.TTL)
	require.Equal(t, int64(100), l.ChunkSize)

	// Finishing early is a conflict, not a lost lease.
	err := cl.Finish(ctx, id, l.Token)
	require.ErrorIs(t, err, edgeindex.ErrConflict)
	require.NotErrorIs(t, err, edgeindex.ErrLeaseLost)
	require.Contains(t, err.Error(), "batches reach 0 but the range ends at 300")

	// Corrupt: 400 off a chunk start; then pending with one attempt.
	_, _, err = cl.Corrupt(ctx, id, l.Token, 150)
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
	state, attempts, err := cl.Corrupt(ctx, id, l.Token, 101)
	require.NoError(t, err)
	require.Equal(t, lease.StatePending, state)
	require.Equal(t, 1, attempts)
	require.ErrorIs(t, cl.Release(ctx, id, l.Token), edgeindex.ErrLeaseLost, "no longer held")

	// Granted again with a new token; the old one is fenced.
	l2 := leased(t, cl)
	require.Greater(t, l2.Token, l.Token)
	require.ErrorIs(t, cl.Release(ctx, id, l.Token), edgeindex.ErrLeaseLost)
	require.NoError(t, cl.Release(ctx, id, l2.Token))
	require.Equal(t, lease.StatePending, c.rng(id).State)

	_, err = cl.Heartbeat(ctx, 99, 1)
	require.ErrorIs(t, err, edgeindex.ErrNotFound)
}

func TestClientStream(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	id := c.addRange("alt.test", 1, 250)
	c.setNext(id, 150)
	c.keep = true
	cl, _ := startCoord(t, c, edge.Config{})
	l := leased(t, cl)
	st, err := cl.Stream(context.Background(), id, l.Token)
	require.NoError(t, err)
	defer st.Close()
	var spans []lease.Span
	for {
		f, err := st.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if f.Type == edgeframe.TypeChunk {
			spans = append(spans, lease.Span{From: f.From, To: f.To})
		}
	}
	require.True(t, st.Complete())
	require.Equal(t, []lease.Span{{From: 101, To: 200}, {From: 201, To: 250}}, spans)

	_, err = cl.Stream(context.Background(), id, l.Token+1)
	require.ErrorIs(t, err, edgeindex.ErrLeaseLost)
}

func TestClientStreamWrongMediaType(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html>a login page</html>")
	}))
	t.Cleanup(srv.Close)
	cl, err := edge.NewClient(edge.Config{BaseURL: srv.URL, Token: "t", HTTP: srv.Client()})
	require.NoError(t, err)
	_, err = cl.Stream(context.Background(), 1, 1)
	require.ErrorIs(t, err, edge.ErrProtocol)
}

// TestClientStreamNoAnswerTimesOut: a coordinator that takes the stream's
// request and never answers cuts the attempt after Timeout (a network
// error the worker retries), rather than holding the worker, whose
// heartbeats keep its lease, until its context ends.
func TestClientStreamNoAnswerTimesOut(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	cl, err := edge.NewClient(edge.Config{BaseURL: srv.URL, Token: "t", HTTP: srv.Client(), Timeout: 50 * time.Millisecond, Attempts: 1})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second) // without the bound, the call ends only here
	defer cancel()
	_, err = cl.Stream(ctx, 1, 1)
	require.ErrorIs(t, err, edge.ErrNetwork)
	require.NoError(t, ctx.Err(), "the attempt ended, not the caller's context")
}

func gz(t *testing.T, s string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err := zw.Write([]byte(s))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

func TestClientLaneCalls(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	gid := c.addLane("alt.ordered", lease.LaneTail, 1, 400, 200)
	cl, s := startCoord(t, c, edge.Config{MaxSnapshot: 64})
	ctx := context.Background()

	_, _, err := cl.LeaseLane(ctx, "sideways")
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
	_, ok, err := cl.LeaseLane(ctx, lease.LaneHistory)
	require.NoError(t, err)
	require.False(t, ok, "only the tail lane has work")

	gl, ok, err := cl.LeaseLane(ctx, lease.LaneTail)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, gid, gl.Group.ID)
	require.Equal(t, int64(1), gl.Next)
	require.Nil(t, gl.Snapshot)

	_, _, found, err := cl.GetSnapshot(ctx, gid, lease.LaneTail, gl.Token)
	require.NoError(t, err)
	require.False(t, found)

	// Next hands the same range back, with the same token, until it is done.
	l, ok, err := cl.Next(ctx, gid, lease.LaneTail, gl.Token)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, lease.Span{From: 1, To: 200}, lease.Span{From: l.Range.Start, To: l.Range.End})
	again, _, err := cl.Next(ctx, gid, lease.LaneTail, gl.Token)
	require.NoError(t, err)
	require.Equal(t, l.Token, again.Token)

	_, err = cl.HeartbeatLane(ctx, gid, lease.LaneTail, gl.Token)
	require.NoError(t, err, "an empty 200 is fine")

	snap, err := cl.PutSnapshot(ctx, gid, lease.LaneTail, gl.Token, 201, gz(t, "window"))
	require.NoError(t, err)
	require.Equal(t, int64(201), snap.Next)
	_, err = cl.PutSnapshot(ctx, gid, lease.LaneTail, gl.Token, 1, gz(t, "older"))
	require.ErrorIs(t, err, edgeindex.ErrConflict)
	_, err = cl.PutSnapshot(ctx, gid, lease.LaneTail, gl.Token, 301, []byte("not gzip"))
	require.ErrorIs(t, err, edgeindex.ErrInvalid)

	got, next, found, err := cl.GetSnapshot(ctx, gid, lease.LaneTail, gl.Token)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, int64(201), next)
	require.Equal(t, gz(t, "window"), got)

	// A snapshot over MaxSnapshot is refused.
	_, err = cl.PutSnapshot(ctx, gid, lease.LaneTail, gl.Token, 401, gz(t, fmt.Sprint(rand.New(rand.NewPCG(1, 2)).Perm(100))))
	require.NoError(t, err)
	_, _, _, err = cl.GetSnapshot(ctx, gid, lease.LaneTail, gl.Token)
	require.ErrorIs(t, err, edge.ErrTooLarge)

	require.NoError(t, cl.ReleaseLane(ctx, gid, lease.LaneTail, gl.Token))
	_, _, err = cl.Next(ctx, gid, lease.LaneTail, gl.Token)
	require.ErrorIs(t, err, edgeindex.ErrLeaseLost)
	require.ErrorIs(t, cl.Finish(ctx, l.Range.ID, l.Token), edgeindex.ErrLeaseLost, "the lane's range went back")
	require.Empty(t, s.got())
}

func TestNewClientConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []edge.Config{
		{},
		{BaseURL: "ftp://x", Token: "t"},
		{BaseURL: "http://", Token: "t"},
		{BaseURL: "http://127.0.0.1:1"},
		{BaseURL: "http://127.0.0.1:1", Token: "t", Attempts: -1},
		{BaseURL: "http://127.0.0.1:1", Token: "t", MaxFrame: -1},
		{BaseURL: "http://127.0.0.1:1", Token: "t", Backoff: -time.Second},
	} {
		_, err := edge.NewClient(cfg)
		require.ErrorIs(t, err, edgeindex.ErrInvalid, "%+v", cfg)
	}
	_, err := edge.NewClient(edge.Config{BaseURL: "https://coord.example/prefix", Token: "t"})
	require.NoError(t, err)
}

// ctypes records the Content-Type of every batch request c serves.
func ctypes(c *coord) func() []string {
	var mu sync.Mutex
	var got []string
	c.before = func(r *http.Request) (int, string) {
		if strings.HasSuffix(r.URL.Path, "/batch") {
			mu.Lock()
			got = append(got, r.Header.Get("Content-Type"))
			mu.Unlock()
		}
		return 0, ""
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

// batchClient is a client holding the lease of a range of c (a coordinator
// that predates the binary layout when jsonOnly is set), and the recorder
// of its batches' Content-Types.
func batchClient(t *testing.T, jsonOnly bool) (*coord, *edge.Client, lease.Lease, func() []string) {
	t.Helper()
	c := newCoord(100)
	c.jsonOnly = jsonOnly
	c.addRange("alt.test", 1, 300)
	got := ctypes(c)
	cl, _ := startCoord(t, c, edge.Config{})
	return c, cl, leased(t, cl), got
}

// A batch goes in the binary layout, its values as they are: the
// coordinator checks them.
func TestClientBinaryBatch(t *testing.T) {
	t.Parallel()
	c, cl, l, got := batchClient(t, false)
	b := batch.Batch{From: 1, To: 100, Headers: 3, Missing: []int64{7}, Items: []batch.Item{
		{Key: "a", Value: json.RawMessage(` {"x": "<"} `)}, {Key: "b"},
	}}
	res, err := cl.PostBatch(context.Background(), l.Range.ID, l.Token, b)
	require.NoError(t, err)
	require.Equal(t, int64(101), res.Next)
	require.Equal(t, []string{api.BatchType}, got())
	stored := c.batches()
	require.Len(t, stored, 1)
	require.Equal(t, ` {"x": "<"} `, string(stored[0].Items[0].Value), "kept as sent")
	require.Equal(t, `null`, string(stored[0].Items[1].Value))
	require.Equal(t, []int64{7}, stored[0].Missing)
}

// A coordinator that predates the binary layout refuses it as a malformed
// JSON body (400): the client sends the batch again as JSON, which is
// stored, and sends every later batch as JSON.
func TestClientBinaryBatchFallsBackToJSON(t *testing.T) {
	t.Parallel()
	c, cl, l, got := batchClient(t, true)
	ctx := context.Background()
	for _, from := range []int64{1, 101} {
		res, err := cl.PostBatch(ctx, l.Range.ID, l.Token, batch.Batch{From: from, To: from + 99, Headers: 1})
		require.NoError(t, err)
		require.Equal(t, from+100, res.Next)
	}
	require.Equal(t, []string{api.BatchType, "application/json", "application/json"}, got())
	require.Equal(t, []string{"POST batch 400", "POST batch 200", "POST batch 200"}, rangeCalls(c.callLog(), l.Range.ID))
	require.Equal(t, []lease.Span{{From: 1, To: 100}, {From: 101, To: 200}}, spans(c.batches()))
}

// A binary batch whose first attempt fails (a 503, its body unread) is
// sent again whole, from a reader of its own.
func TestClientBinaryBatchRetried(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	c.addRange("alt.test", 1, 300)
	c.failFirst("/batch", 1, 503, "the database is restarting")
	cl, _ := startCoord(t, c, edge.Config{})
	l := leased(t, cl)
	b := batch.Batch{From: 1, To: 100, Headers: 100}
	for i := range 2000 {
		b.Items = append(b.Items, batch.Item{Key: fmt.Sprintf("k%d", i), Value: json.RawMessage(fmt.Sprintf(`{"i": %d}`, i))})
	}
	res, err := cl.PostBatch(context.Background(), l.Range.ID, l.Token, b)
	require.NoError(t, err)
	require.Equal(t, int64(101), res.Next)
	require.Equal(t, []string{"POST batch 503", "POST batch 200"}, rangeCalls(c.callLog(), l.Range.ID))
	stored := c.batches()
	require.Len(t, stored, 1)
	require.Equal(t, b.Items, stored[0].Items)
}

// A bad value is not checked before a binary body is sent: the
// coordinator refuses it (400, nothing stored), and the JSON fallback
// refuses it here, sending nothing more. The client keeps the binary
// layout for the next batch.
func TestClientBinaryBatchBadValue(t *testing.T) {
	t.Parallel()
	c, cl, l, got := batchClient(t, false)
	ctx := context.Background()
	_, err := cl.PostBatch(ctx, l.Range.ID, l.Token, batch.Batch{From: 1, To: 100, Items: []batch.Item{{Key: "k", Value: json.RawMessage(`{"a":`)}}})
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
	require.Empty(t, c.batches())
	_, err = cl.PostBatch(ctx, l.Range.ID, l.Token, batch.Batch{From: 1, To: 100})
	require.NoError(t, err)
	require.Equal(t, []string{api.BatchType, api.BatchType}, got())
}

// A transport may go on reading a request's body after the call has its
// answer (http.RoundTripper allows it; net/http's does while a write is
// under way): once the call returns, the caller may change its batch, so
// such reads fail at once and read nothing of it (under -race, one that
// did would be a race).
func TestClientBatchAnsweredEarly(t *testing.T) {
	t.Parallel()
	returned := make(chan struct{})
	read := make(chan error, 1)
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		go func() { // reads the body after the answer, as a transport may
			<-returned
			_, err := io.Copy(io.Discard, r.Body)
			read <- err
		}()
		answer := `{"error": "stale", "code": "stale_fence"}`
		return &http.Response{StatusCode: http.StatusConflict, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(answer)), ContentLength: int64(len(answer)), Request: r}, nil
	})
	cl, err := edge.NewClient(edge.Config{BaseURL: "http://coordinator", HTTP: &http.Client{Transport: rt}, Token: "t", Attempts: 1})
	require.NoError(t, err)

	b := batch.Batch{From: 1, To: 100, Headers: 100}
	for i := range 100 {
		b.Items = append(b.Items, batch.Item{Key: fmt.Sprintf("k%d", i), Value: json.RawMessage(`"` + strings.Repeat("v", 1<<10) + `"`)})
	}
	_, err = cl.PostBatch(context.Background(), 1, 1, b)
	require.ErrorIs(t, err, edgeindex.ErrConflict)
	for i := range b.Items {
		b.Items[i].Value = nil
	}
	close(returned)
	require.Error(t, <-read, "the body reads nothing once the call returned")
}

// roundTripFunc is an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
