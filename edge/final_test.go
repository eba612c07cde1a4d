package edge_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/edge"
	"github.com/edgeindex/edgeindex/lease"
)

// A range's last chunk is posted as a final batch; a coordinator that
// answers it done has finished the range, so the worker does not.
func TestWorkerFinalBatchFinishes(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	c.finals = true
	id := c.addRange("alt.a", 1, 250)
	r := startWorker(t, c, &counter{}, edge.WorkerConfig{})
	require.NoError(t, r.untilIdle(t))

	require.Equal(t, lease.StateDone, c.rng(id).State)
	require.Equal(t, []string{"GET stream 200", "POST batch 200", "POST batch 200", "POST batch 200"}, rangeCalls(c.callLog(), id))
	var finals []bool
	for _, b := range c.batches() {
		finals = append(finals, b.Final)
	}
	require.Equal(t, []bool{false, false, true}, finals, "only the last batch is final")
	require.Equal(t, int64(1), r.w.Stats().Ranges)
}

// A lane whose handler keeps a window gets no final batch: its window is
// saved once the last batch is stored and before the range is finished, so
// a snapshot is never ahead of the range's stored next.
func TestWorkerFinalNotWithWindow(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	c.finals = true
	gid := c.addLane("alt.tail", lease.LaneTail, 1, 200, 200)
	r := startWorker(t, c, &window{}, edge.WorkerConfig{Lanes: []lease.Lane{lease.LaneTail}})
	require.NoError(t, r.untilIdle(t))

	for _, b := range c.batches() {
		require.False(t, b.Final)
	}
	require.Equal(t, []string{"GET stream 200", "POST batch 200", "POST batch 200", "POST finish 200"}, rangeCalls(c.callLog(), 1))
	require.Equal(t, int64(201), c.laneState(gid).snapNext)
	require.Equal(t, lease.StateDone, c.rng(1).State)
}

// A final batch posted with ?then=lease is answered with the node's next
// range: the worker works it without a lease call of its own, and asks
// again only when an answer hands nothing over. A lane worker does not ask
// (it takes turns with its lanes).
func TestWorkerFinalHandsOverLease(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	c.finals, c.handOver = true, true
	ids := []int64{c.addRange("alt.a", 1, 150), c.addRange("alt.b", 1, 100), c.addRange("alt.c", 1, 100)}
	r := startWorker(t, c, &counter{}, edge.WorkerConfig{})
	require.NoError(t, r.untilIdle(t))

	for _, id := range ids {
		require.Equal(t, lease.StateDone, c.rng(id).State)
		require.Equal(t, "POST batch 200", rangeCalls(c.callLog(), id)[len(rangeCalls(c.callLog(), id))-1])
		require.Zero(t, countCalls(rangeCalls(c.callLog(), id), "POST finish"))
	}
	require.Equal(t, 2, countCalls(c.callLog(), "POST /v1/leases "), "one grant, then one 204 after the last range handed nothing over")
	require.Equal(t, int64(3), r.w.Stats().Ranges)
}

// A coordinator that predates ?then=lease ignores it: the worker leases
// each range with a call of its own, as before.
func TestWorkerFinalNoHandOver(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	c.finals = true
	a, b := c.addRange("alt.a", 1, 100), c.addRange("alt.b", 1, 100)
	r := startWorker(t, c, &counter{}, edge.WorkerConfig{})
	require.NoError(t, r.untilIdle(t))

	require.Equal(t, lease.StateDone, c.rng(a).State)
	require.Equal(t, lease.StateDone, c.rng(b).State)
	require.Equal(t, 3, countCalls(c.callLog(), "POST /v1/leases "))
}

// A worker told to stop while posting a range's final batch still posts it;
// the range handed over in the answer is given back, not left to expire.
func TestWorkerGivesBackHandedLeaseOnStop(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	c.finals, c.handOver = true, true
	a, b := c.addRange("alt.a", 1, 100), c.addRange("alt.b", 1, 100)
	h := &counter{}
	r := startWorker(t, c, h, edge.WorkerConfig{})
	h.hook = func(context.Context, edge.Chunk) error {
		r.stop() // Run's context ends while the final batch is being made
		return nil
	}
	require.NoError(t, r.untilIdle(t))

	require.Equal(t, lease.StateDone, c.rng(a).State, "the final batch was posted")
	require.Equal(t, lease.StatePending, c.rng(b).State, "the range handed over went back")
	require.Equal(t, []string{"POST release 200"}, rangeCalls(c.callLog(), b))
}
