package edge_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/edge"
	"github.com/edgeindex/edgeindex/lease"
)

// batchFrom returns the from of a batch request r (and leaves its body to
// be read again), or 0 when r is no single-range batch.
func batchFrom(r *http.Request) int64 {
	b, _ := readSent(r)
	return b.From
}

// The handler works the next chunk while the coordinator stores the
// batch before it: the first batch's answer is held until the handler has
// the second chunk, which a worker that waited for each answer would never
// hand it.
func TestWorkerHandlesNextChunkWhileBatchInFlight(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	id := c.addRange("alt.a", 1, 300)
	second := make(chan struct{})
	var waited atomic.Bool
	c.before = func(r *http.Request) (int, string) {
		if batchFrom(r) == 1 {
			select {
			case <-second:
			case <-time.After(10 * time.Second):
				waited.Store(true)
			}
		}
		return 0, ""
	}
	h := &counter{hook: func(_ context.Context, ch edge.Chunk) error {
		if ch.From == 101 {
			close(second)
		}
		return nil
	}}
	r := startWorker(t, c, h, edge.WorkerConfig{})
	require.NoError(t, r.untilIdle(t))

	require.False(t, waited.Load(), "the second chunk was handed only after the first batch's answer")
	require.Equal(t, []lease.Span{{From: 1, To: 100}, {From: 101, To: 200}, {From: 201, To: 300}}, spans(c.batches()))
	require.Equal(t, []string{"GET stream 200", "POST batch 200", "POST batch 200", "POST batch 200", "POST finish 200"}, rangeCalls(c.callLog(), id))
	require.Equal(t, lease.StateDone, c.rng(id).State)
}

// A range has one batch in flight at a time, so its batches are stored in
// order, however slow the coordinator's answers.
func TestWorkerOneBatchInFlight(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	c.addRange("alt.a", 1, 1000)
	var inFlight, most atomic.Int64
	c.before = func(r *http.Request) (int, string) {
		if batchFrom(r) > 0 {
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(5 * time.Millisecond) // long enough for a second batch to come, were one sent
		}
		return 0, ""
	}
	r := startWorker(t, c, &counter{}, edge.WorkerConfig{})
	require.NoError(t, r.untilIdle(t))

	require.Equal(t, int64(1), most.Load())
	want := make([]lease.Span, 10)
	for i := range want {
		want[i] = lease.Span{From: int64(i)*100 + 1, To: int64(i+1) * 100}
	}
	require.Equal(t, want, spans(c.batches()))
}

// duplicateInFlight works a range of 1..300 in chunks of 100 whose first
// batch, while in flight, is answered as a duplicate with next moved to
// next (an earlier attempt stored more).
func duplicateInFlight(t *testing.T, next int64) (*coord, int64, *counter, *run) {
	t.Helper()
	c := newCoord(100)
	id := c.addRange("alt.a", 1, 300)
	c.before = func(r *http.Request) (int, string) {
		if batchFrom(r) == 1 {
			c.setNext(id, next)
		}
		return 0, ""
	}
	h := &counter{}
	r := startWorker(t, c, h, edge.WorkerConfig{})
	require.NoError(t, r.untilIdle(t))
	return c, id, h, r
}

// A batch in flight answered as a duplicate with a later next (an earlier
// attempt stored more) moves next before the chunk after it is posted: the
// handler, which had worked that chunk from the old next, is handed it
// again from the new one, and the part below it is never posted.
func TestWorkerDuplicateInFlightMovesNext(t *testing.T) {
	t.Parallel()
	c, id, h, r := duplicateInFlight(t, 150)

	require.Equal(t, []lease.Span{{From: 1, To: 100}, {From: 101, To: 200}, {From: 150, To: 200}, {From: 201, To: 300}}, h.seen())
	require.Equal(t, []lease.Span{{From: 150, To: 200}, {From: 201, To: 300}}, spans(c.batches()))
	require.Equal(t, int64(1), r.w.Stats().Duplicates)
	require.Equal(t, lease.StateDone, c.rng(id).State)
}

// A duplicate answer that moves next past the chunk the handler worked
// meanwhile drops that chunk: nothing of it is posted.
func TestWorkerDuplicateInFlightSkipsChunk(t *testing.T) {
	t.Parallel()
	c, id, h, _ := duplicateInFlight(t, 250)

	require.Equal(t, []lease.Span{{From: 1, To: 100}, {From: 101, To: 200}, {From: 250, To: 300}}, h.seen())
	require.Equal(t, []lease.Span{{From: 250, To: 300}}, spans(c.batches()))
	require.Equal(t, lease.StateDone, c.rng(id).State)
}
