package edge_test

import (
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

// A coordinator that predates final batches refuses the field: the worker
// posts the batch again without it, finishes the range with its own call,
// and sends no final batch again.
func TestWorkerFinalRefusedFallsBack(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	c.refuseFinal = true
	a := c.addRange("alt.a", 1, 200)
	b := c.addRange("alt.b", 1, 100)
	r := startWorker(t, c, &counter{}, edge.WorkerConfig{})
	require.NoError(t, r.untilIdle(t))

	require.Equal(t, lease.StateDone, c.rng(a).State)
	require.Equal(t, lease.StateDone, c.rng(b).State)
	require.Equal(t, []string{"GET stream 200", "POST batch 200", "POST batch 400", "POST batch 200", "POST finish 200"}, rangeCalls(c.callLog(), a))
	require.Equal(t, []string{"GET stream 200", "POST batch 200", "POST finish 200"}, rangeCalls(c.callLog(), b))
	require.Equal(t, int64(2), r.w.Stats().Ranges)
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
