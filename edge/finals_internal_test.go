package edge

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/api"
)

// A call of final batches names a range once: a second batch of a range
// already in it waits, in order, for the next call; a batch whose caller
// left is answered with its context's error and sent with neither.
func TestFinalsTakeNamesARangeOnce(t *testing.T) {
	wait := func(ctx context.Context, rangeID int64) *waitingFinal {
		return &waitingFinal{ctx: ctx, rb: api.RangeBatch{Range: rangeID, Token: 1}, done: make(chan struct{})}
	}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	a, b, a2, left, c := wait(t.Context(), 1), wait(t.Context(), 2), wait(t.Context(), 1), wait(gone, 4), wait(t.Context(), 3)
	f := &finals{queue: []*waitingFinal{a, b, a2, left, c}}

	require.Equal(t, []*waitingFinal{a, b, c}, f.take())
	require.Equal(t, []*waitingFinal{a2}, f.queue, "the second batch of range 1 waits")
	require.ErrorIs(t, left.err, context.Canceled)
	require.Equal(t, []*waitingFinal{a2}, f.take())
	require.Empty(t, f.queue)
}
