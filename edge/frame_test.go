package edge_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/edge"
	"github.com/edgeindex/edgeindex/lease"
)

// startWorkerWith is startWorker with the client configured by ccfg.
func startWorkerWith(t testing.TB, c *coord, ccfg edge.Config, h edge.Handler, cfg edge.WorkerConfig) *run {
	t.Helper()
	cl, _ := startCoord(t, c, ccfg)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s := &wsleep{stop: cancel, beats: map[time.Duration]chan time.Time{}}
	cfg.Client, cfg.Handler, cfg.Idle, cfg.Clock = cl, h, idle, s
	w, err := edge.NewWorker(cfg)
	require.NoError(t, err)
	return &run{c: c, w: w, sleep: s, stop: cancel, ctx: ctx}
}

// A chunk whose frame is over the worker's MaxFrame is reported corrupt,
// at its own start, rather than released: an attempt is counted and the
// chunk leaves the coordinator's store, so the next grant fetches it anew.
func TestWorkerFrameTooLargeReportsCorrupt(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	id := c.addRange("alt.a", 1, 300)
	big := make([]byte, 64<<10)
	for i := range big {
		big[i] = byte(rand.Uint32())
	}
	c.data[101] = big // dropped by corrupt, so it is fetched again
	h := &counter{}
	r := startWorkerWith(t, c, edge.Config{MaxFrame: 32 << 10}, h, edge.WorkerConfig{})
	require.NoError(t, r.untilIdle(t))

	require.Equal(t, []string{
		"GET stream 200", "POST batch 200", "POST corrupt 200", // the first grant: chunk 101 is refused
		"GET stream 200", "POST batch 200", "POST batch 200", "POST finish 200", // granted again: from next
	}, rangeCalls(c.callLog(), id))
	got := c.rng(id)
	require.Equal(t, lease.StateDone, got.State)
	require.Equal(t, 1, got.Attempts)
	require.Equal(t, []lease.Span{{From: 1, To: 100}, {From: 101, To: 200}, {From: 201, To: 300}}, spans(c.batches()))
	require.Equal(t, []lease.Span{{From: 1, To: 100}, {From: 101, To: 200}, {From: 201, To: 300}}, h.seen(),
		"the handler never saw the refused frame")
	st := r.w.Stats()
	require.Equal(t, int64(1), st.Corrupt)
	require.Equal(t, int64(0), st.Released, "a frame too large is no release")
}

// A worker whose MaxFrame no chunk fits reports the chunk at next corrupt
// on every grant, until the coordinator fails the range at its maximum
// attempts; it never gives the range back uncounted.
func TestWorkerFrameTooLargeFailsRange(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	id := c.addRange("alt.a", 1, 300)
	c.setNext(id, 101)
	h := &counter{}
	r := startWorkerWith(t, c, edge.Config{MaxFrame: 16}, h, edge.WorkerConfig{})
	require.NoError(t, r.untilIdle(t))

	calls := rangeCalls(c.callLog(), id)
	require.Equal(t, 5, countCalls(calls, "POST corrupt 200"), "%v", calls)
	require.Zero(t, countCalls(calls, "POST release"), "%v", calls)
	require.Zero(t, countCalls(calls, "POST batch"), "%v", calls)
	got := c.rng(id)
	require.Equal(t, lease.StateFailed, got.State)
	require.Equal(t, 5, got.Attempts)
	require.Empty(t, h.seen())
	st := r.w.Stats()
	require.Equal(t, int64(5), st.Corrupt)
	require.Equal(t, int64(0), st.Released)
}
