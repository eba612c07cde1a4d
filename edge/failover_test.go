package edge_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/edge"
	"github.com/edgeindex/edgeindex/lease"
)

// peer is a coordinator of a failover list that answers every request
// the same way and counts them.
type peer struct {
	url  string
	hits atomic.Int32
}

// refusedURL is the address of a coordinator that is down: nothing
// listens there.
func refusedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// newPeer starts a coordinator that answers with status (and, for a 200,
// a lease or an expiry); status 0 drops the connection after reading the
// request, as a coordinator that dies before it answers.
func newPeer(t *testing.T, status int) *peer {
	t.Helper()
	p := &peer{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.hits.Add(1)
		switch status {
		case 0:
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
		case http.StatusOK:
			w.Header().Set("Content-Type", "application/json")
			if r.URL.Path == "/v1/lease" {
				json.NewEncoder(w).Encode(api.Lease{Range: lease.Range{ID: 7, Start: 1, End: 10, Next: 1}, Token: 3})
				return
			}
			json.NewEncoder(w).Encode(api.Expiry{ExpiresAt: time.Now().Add(time.Minute)})
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			code := map[int]string{http.StatusConflict: api.CodeConflict, http.StatusServiceUnavailable: api.CodeBusy}[status]
			json.NewEncoder(w).Encode(map[string]string{"error": "no", "code": cmp.Or(code, api.CodeInternal)})
		}
	}))
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

// failoverClient is a client of the coordinators urls, recording its waits.
func failoverClient(t *testing.T, attempts int, urls ...string) (*edge.Client, *sleeps) {
	t.Helper()
	s := &sleeps{}
	cl, err := edge.NewClient(edge.Config{BaseURL: urls[0], Failover: urls[1:], Token: "t", Attempts: attempts,
		Clock: s.clock(), Rand: func() float64 { return 0 }, Timeout: 5 * time.Second})
	require.NoError(t, err)
	return cl, s
}

// A call that may be retried moves past a coordinator that is down and one
// that answers 5xx to the next at once, without waiting, and stays there.
func TestFailoverRetried(t *testing.T) {
	t.Parallel()
	down, busy, good := refusedURL(t), newPeer(t, http.StatusServiceUnavailable), newPeer(t, http.StatusOK)
	cl, s := failoverClient(t, 0, down, busy.url, good.url)
	require.Equal(t, down, cl.Coordinator())
	_, err := cl.Heartbeat(t.Context(), 7, 3)
	require.NoError(t, err)
	require.Empty(t, s.got(), "no backoff while another coordinator is left to try")
	require.EqualValues(t, 1, busy.hits.Load())
	require.Equal(t, good.url, cl.Coordinator())
	_, err = cl.Heartbeat(t.Context(), 7, 3)
	require.NoError(t, err)
	require.EqualValues(t, 1, busy.hits.Load(), "the client stays on the coordinator that answers")
	require.EqualValues(t, 2, good.hits.Load())

	// A 4xx is the coordinator's verdict: the client does not move.
	lost := newPeer(t, http.StatusConflict)
	cl, _ = failoverClient(t, 0, lost.url, good.url)
	_, err = cl.Heartbeat(t.Context(), 7, 3)
	require.ErrorIs(t, err, edgeindex.ErrConflict)
	require.Equal(t, lost.url, cl.Coordinator())
}

// When every coordinator fails, a call waits its backoff after each round
// through them, and gives up after Attempts rounds.
func TestFailoverRounds(t *testing.T) {
	t.Parallel()
	a, b := newPeer(t, http.StatusInternalServerError), newPeer(t, http.StatusBadGateway)
	cl, s := failoverClient(t, 3, a.url, b.url)
	_, err := cl.Heartbeat(t.Context(), 7, 3)
	require.ErrorIs(t, err, edge.ErrServer)
	require.EqualValues(t, 3, a.hits.Load())
	require.EqualValues(t, 3, b.hits.Load())
	require.Len(t, s.got(), 2, "a wait between rounds, none within one")
}

// A grant is never retried where it may have been taken (a 5xx, a
// connection dropped after the request was sent), but it goes on at once
// to the next coordinator when the current one refused the connection:
// nothing of it was sent. Either way the client moves on.
func TestFailoverGrants(t *testing.T) {
	t.Parallel()
	good := newPeer(t, http.StatusOK)
	down := refusedURL(t)
	cl, _ := failoverClient(t, 0, down, good.url)
	l, ok, err := cl.Lease(t.Context())
	require.NoError(t, err)
	require.True(t, ok)
	require.EqualValues(t, 7, l.Range.ID)
	require.EqualValues(t, 1, good.hits.Load())

	for _, status := range []int{http.StatusServiceUnavailable, 0} {
		bad, next := newPeer(t, status), newPeer(t, http.StatusOK)
		cl, s := failoverClient(t, 0, bad.url, next.url)
		_, _, err := cl.Lease(context.Background())
		require.Error(t, err, "status %d", status)
		require.True(t, errors.Is(err, edge.ErrServer) || errors.Is(err, edge.ErrNetwork), "status %d: %v", status, err)
		require.EqualValues(t, 1, bad.hits.Load(), "status %d: not retried", status)
		require.Zero(t, next.hits.Load(), "status %d: not sent to the next coordinator", status)
		require.Empty(t, s.got())
		require.Equal(t, next.url, cl.Coordinator(), "status %d: the next call goes to the next coordinator", status)
		_, ok, err = cl.Lease(context.Background())
		require.NoError(t, err)
		require.True(t, ok)
	}
}

// A stream cut by a dying coordinator resumes from next on another: two
// coordinators on one store (one fake's state behind two servers), the
// first of which stops taking connections, and drops those it has, once
// the stream it is sending is cut after a chunk.
func TestWorkerFailsOverCutStream(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	id := c.addRange("alt.a", 1, 300)
	c.cutAt = []int{1}
	srvA, srvB := c.start(), c.start()
	t.Cleanup(srvA.Close)
	t.Cleanup(srvB.Close)
	hostA := srvA.Listener.Addr().String()
	var dead atomic.Bool
	var mu sync.Mutex
	var streams []string // the server of every stream opened
	c.before = func(r *http.Request) (int, string) {
		a := r.Host == hostA
		if strings.HasSuffix(r.URL.Path, "/stream") {
			mu.Lock()
			streams = append(streams, map[bool]string{true: "A", false: "B"}[a])
			mu.Unlock()
		}
		switch {
		case a && dead.Load():
			return -1, "" // a dying server drops the connections it has
		case a && strings.HasSuffix(r.URL.Path, "/stream"):
			srvA.Listener.Close() // and takes no new one
			dead.Store(true)
		}
		return 0, ""
	}
	cl, err := edge.NewClient(edge.Config{BaseURL: srvA.URL, Failover: []string{srvB.URL}, Token: c.token,
		Rand: func() float64 { return 0 }})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s := &wsleep{stop: cancel, beats: map[time.Duration]chan time.Time{}}
	h := &counter{}
	w, err := edge.NewWorker(edge.WorkerConfig{Client: cl, Handler: h, Idle: idle, Clock: s})
	require.NoError(t, err)
	r := &run{c: c, w: w, sleep: s, stop: cancel, ctx: ctx}
	require.NoError(t, r.untilIdle(t))

	require.Equal(t, []string{"A", "B"}, streams, "the cut stream is opened again on the other coordinator")
	require.Equal(t, srvB.URL, cl.Coordinator())
	require.Equal(t, []lease.Span{{From: 1, To: 100}, {From: 101, To: 200}, {From: 201, To: 300}}, h.seen(),
		"each chunk handled once: the stream resumed from next")
	require.Equal(t, lease.StateDone, c.rng(id).State)
	var froms []int64
	for _, b := range c.stored {
		froms = append(froms, b.From)
	}
	require.Equal(t, []int64{1, 101, 201}, froms, "every batch stored once")
}
