package edge_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/edge"
	"github.com/edgeindex/edgeindex/lease"
)

// batchesCalls returns the number of entries of each POST /v1/batches call
// in log, in order.
func batchesCalls(log []string) []int {
	var out []int
	for _, c := range log {
		switch {
		case strings.HasPrefix(c, "POST /v1/batches "):
			out = append(out, 0)
		case strings.HasSuffix(c, "(in /v1/batches)"):
			out[len(out)-1]++
		}
	}
	return out
}

// A worker with Ranges 4 leases four ranges in one call, works them at
// once without ever calling its handler twice at once, and posts the
// final batches that wait together in one call, each answer handing over
// the next range; every range is done once.
func TestWorkerRangesAtOnce(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	c.finals, c.handOver = true, true
	var ids []int64
	for i := range 12 {
		ids = append(ids, c.addRange("alt.r", int64(i*100+1), int64(i*100+100)))
	}
	var inHandler, handled, most atomic.Int64
	h := &counter{hook: func(ctx context.Context, _ edge.Chunk) error {
		n := inHandler.Add(1)
		defer inHandler.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(2 * time.Millisecond) // room for another to come in, were it let
		handled.Add(1)
		return nil
	}}
	// The first call of final batches waits until the four ranges' chunks
	// are handled, so the other three wait together for the next call.
	var first atomic.Bool
	c.before = func(r *http.Request) (int, string) {
		if r.URL.Path == "/v1/batches" && first.CompareAndSwap(false, true) {
			for handled.Load() < 4 {
				time.Sleep(time.Millisecond)
			}
			time.Sleep(50 * time.Millisecond)
		}
		return 0, ""
	}
	r := startWorker(t, c, h, edge.WorkerConfig{Ranges: 4})
	require.NoError(t, r.untilIdle(t))

	for _, id := range ids {
		require.Equal(t, lease.StateDone, c.rng(id).State, "range %d", id)
		require.Zero(t, countCalls(rangeCalls(c.callLog(), id), "POST finish"), "the final batch finished it")
	}
	require.Len(t, c.batches(), 12, "one batch a range, each stored once")
	require.Equal(t, int64(1), most.Load(), "the handler saw one chunk at a time")
	require.Equal(t, "POST /v1/leases 200", c.callLog()[0])
	require.Equal(t, 2, countCalls(c.callLog(), "POST /v1/leases "), "one grant of four, then one that found nothing")
	calls := batchesCalls(c.callLog())
	entries := 0
	for _, n := range calls {
		entries += n
	}
	require.GreaterOrEqual(t, slices.Max(calls), 3, "the final batches that waited for the first call went together: %v", calls)
	require.Equal(t, 12, entries)
	require.Less(t, len(calls), 12, "fewer calls than final batches")
	require.Equal(t, int64(12), r.w.Stats().Ranges)
}

// The heartbeats of the ranges held at once go in calls of many: those
// due while a call is out go together in the next. A range refused in
// its reply (its lease lost) stops, counted lost; the others are renewed
// and finished.
func TestWorkerRangesHeartbeatTogether(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	c.finals = true
	ids := []int64{c.addRange("alt.a", 1, 100), c.addRange("alt.b", 1, 100), c.addRange("alt.c", 1, 100), c.addRange("alt.d", 1, 100)}
	lost := ids[2]
	beat := make(chan time.Time)
	var r *run
	var once atomic.Bool
	h := &counter{hook: func(context.Context, edge.Chunk) error {
		if !once.CompareAndSwap(false, true) {
			return nil
		}
		// Every range's stream is open and its keepalive waits for its
		// tick; then one each.
		waitFor(func() bool {
			return countOf(r.sleep.got(), rangeBeat) == 4 && containing(c.callLog(), "/stream 200") == 4
		})
		for range 4 {
			beat <- time.Time{}
		}
		// The answers come before the ranges go on (and finish).
		waitFor(func() bool { return containing(c.callLog(), "/heartbeat ") == 4 })
		return nil
	}}
	var first atomic.Bool
	c.before = func(req *http.Request) (int, string) {
		if req.URL.Path == "/v1/heartbeats" && first.CompareAndSwap(false, true) {
			c.mu.Lock()
			c.ranges[lost-1].token++ // granted to another meanwhile
			c.mu.Unlock()
			time.Sleep(50 * time.Millisecond) // the others come meanwhile
		}
		return 0, ""
	}
	r = startWorker(t, c, h, edge.WorkerConfig{Ranges: 4})
	r.sleep.beats[rangeBeat] = beat
	require.NoError(t, r.untilIdle(t))

	log := c.callLog()
	for _, id := range ids {
		calls := rangeCalls(log, id)
		if id == lost {
			require.Equal(t, 1, countCalls(calls, "POST heartbeat 409"), "%v", calls)
			require.Equal(t, lease.StateLeased, c.rng(id).State, "the other holder's now")
			continue
		}
		require.Equal(t, 1, countCalls(calls, "POST heartbeat 200"), "%v", calls)
		require.Equal(t, lease.StateDone, c.rng(id).State)
	}
	require.Equal(t, int64(1), r.w.Stats().Lost)
	require.Equal(t, int64(3), r.w.Stats().Ranges)
	require.Equal(t, 4, containing(log, "(in /v1/heartbeats)"), "no heartbeat of its own: %v", log)
	// The ticks come at once: the first heartbeat goes alone or with
	// the others, and those due while its call is out go in the next.
	require.LessOrEqual(t, countCalls(log, "POST /v1/heartbeats 200"), 2, "%v", log)
}

// A coordinator that predates POST /v1/heartbeats answers it 404: the
// client renews each lease with its own call, a refused one answered in
// its reply.
func TestHeartbeatManyOldCoordinator(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	c.single = true
	a, b := c.addRange("alt.a", 1, 100), c.addRange("alt.b", 1, 100)
	cl, _ := startCoord(t, c, edge.Config{})
	la, _, err := cl.Lease(t.Context())
	require.NoError(t, err)
	lb, _, err := cl.Lease(t.Context())
	require.NoError(t, err)
	reps, err := cl.HeartbeatMany(t.Context(), []api.RangeToken{{Range: a, Token: la.Token}, {Range: b, Token: lb.Token + 1}})
	require.NoError(t, err)
	require.Len(t, reps, 2)
	require.NoError(t, reps[0].Err())
	require.NotNil(t, reps[0].ExpiresAt)
	require.ErrorIs(t, reps[1].Err(), edgeindex.ErrLeaseLost)
	reps, err = cl.HeartbeatMany(t.Context(), []api.RangeToken{{Range: a, Token: la.Token}})
	require.NoError(t, err)
	require.NoError(t, reps[0].Err())
	log := c.callLog()
	require.Equal(t, 1, countCalls(log, "POST /v1/heartbeats 404"), "asked once, then never again: %v", log)
	require.Equal(t, 2, countCalls(rangeCalls(log, a), "POST heartbeat 200"))
	require.Equal(t, 1, countCalls(rangeCalls(log, b), "POST heartbeat 409"))
}

// waitFor waits until cond holds, or 10 s: the test's assertions then say
// what did not happen.
func waitFor(cond func() bool) {
	for end := time.Now().Add(10 * time.Second); !cond() && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
}

// An answer of POST /v1/heartbeats that does not match the call (too few
// replies, another range's, one with neither an expiry nor an error) is
// refused as ErrProtocol: a lease would be taken as renewed that was not.
func TestHeartbeatManyRefusesBadAnswers(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{
		"too few":         `{"results":[{"range":1,"expiresAt":"2026-01-01T00:00:00Z"}]}`,
		"another range's": `{"results":[{"range":1,"expiresAt":"2026-01-01T00:00:00Z"},{"range":3,"expiresAt":"2026-01-01T00:00:00Z"}]}`,
		"neither":         `{"results":[{"range":1,"expiresAt":"2026-01-01T00:00:00Z"},{"range":2}]}`,
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, body)
		}))
		t.Cleanup(srv.Close)
		cl, err := edge.NewClient(edge.Config{BaseURL: srv.URL, Token: "t", HTTP: srv.Client()})
		require.NoError(t, err)
		_, err = cl.HeartbeatMany(t.Context(), []api.RangeToken{{Range: 1, Token: 1}, {Range: 2, Token: 1}})
		require.ErrorIs(t, err, edge.ErrProtocol, name)
	}
}

// containing counts the calls of log that hold s.
func containing(log []string, s string) int {
	return countIf(log, func(c string) bool { return strings.Contains(c, s) })
}

// countOf counts d in ds.
func countOf(ds []time.Duration, d time.Duration) int {
	n := 0
	for _, x := range ds {
		if x == d {
			n++
		}
	}
	return n
}

// One of the ranges held at once whose lease is lost is refused in its
// entry of the call: that range stops, counted lost, and the others are
// stored and finished.
func TestWorkerRangesOneLost(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	c.finals = true
	a, b, d := c.addRange("alt.a", 1, 100), c.addRange("alt.b", 1, 100), c.addRange("alt.c", 1, 100)
	var once atomic.Bool
	c.before = func(r *http.Request) (int, string) {
		if r.URL.Path != "/v1/batches" {
			return 0, ""
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		// As b's final batch comes, b is granted to another.
		if bytes.Contains(body, fmt.Appendf(nil, `"range":%d,`, b)) && once.CompareAndSwap(false, true) {
			c.mu.Lock()
			c.ranges[b-1].token++
			c.mu.Unlock()
		}
		return 0, ""
	}
	r := startWorker(t, c, &counter{}, edge.WorkerConfig{Ranges: 3})
	require.NoError(t, r.untilIdle(t))

	require.Equal(t, lease.StateDone, c.rng(a).State)
	require.Equal(t, lease.StateDone, c.rng(d).State)
	require.Equal(t, lease.StateLeased, c.rng(b).State, "the other holder's now")
	require.Equal(t, int64(1), c.rng(b).Next, "nothing of b stored")
	require.Equal(t, int64(2), r.w.Stats().Ranges)
	require.Equal(t, int64(1), r.w.Stats().Lost)
	require.Contains(t, rangeCalls(c.callLog(), b), "POST batch 409")
}

// Ranges out of bounds is refused.
func TestWorkerRangesConfig(t *testing.T) {
	t.Parallel()
	cl, err := edge.NewClient(edge.Config{BaseURL: "http://127.0.0.1:1", Token: "t"})
	require.NoError(t, err)
	for _, n := range []int{-1, 257} {
		_, err := edge.NewWorker(edge.WorkerConfig{Client: cl, Handler: &counter{}, Ranges: n})
		require.ErrorIs(t, err, edgeindex.ErrInvalid, "%d", n)
	}
}

// A coordinator that predates the many-range calls answers them 404: the
// worker falls back to one range a call, once, and works every range.
func TestWorkerOldCoordinator(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	c.finals, c.handOver, c.single = true, true, true
	ids := []int64{c.addRange("alt.a", 1, 100), c.addRange("alt.b", 1, 100), c.addRange("alt.c", 1, 100)}
	r := startWorker(t, c, &counter{}, edge.WorkerConfig{Ranges: 2})
	require.NoError(t, r.untilIdle(t))
	for _, id := range ids {
		require.Equal(t, lease.StateDone, c.rng(id).State)
	}
	log := c.callLog()
	require.Equal(t, "POST /v1/leases 404", log[0])
	require.Equal(t, 1, countCalls(log, "POST /v1/leases "), "asked once, then never again")
	require.Zero(t, countCalls(log, "POST /v1/batches "))
	require.Equal(t, 2, countCalls(log, "POST /v1/lease "), "one grant, then none after the hand-overs ran out")
	require.Equal(t, int64(3), r.w.Stats().Ranges)
}

// A coordinator that grants one range twice in one answer is refused: the
// worker would work it twice at once.
func TestLeaseManyRefusesARangeTwice(t *testing.T) {
	t.Parallel()
	l := `{"range":{"id":7,"group":"g","groupId":1,"lane":"history","start":1,"end":10,"next":1,"state":"leased"},"token":3,"ttlSeconds":60,"chunkSize":10}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"leases":[`+l+`,`+l+`]}`)
	}))
	t.Cleanup(srv.Close)
	cl, err := edge.NewClient(edge.Config{BaseURL: srv.URL, Token: "t", HTTP: srv.Client()})
	require.NoError(t, err)
	_, err = cl.LeaseMany(t.Context(), 2)
	require.ErrorIs(t, err, edge.ErrProtocol)
	require.ErrorContains(t, err, "range 7 granted twice")
}
