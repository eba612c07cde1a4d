package edge

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/api"
)

// A call of a gather names a range once: a second request of a range
// already in it waits, in order, for the next call; a request whose caller
// left is answered with its context's error and sent with neither.
func TestGatherTakeNamesARangeOnce(t *testing.T) {
	type w = waiting[api.RangeBatch, api.BatchReply]
	wait := func(ctx context.Context, rangeID int64) *w {
		return &w{ctx: ctx, q: api.RangeBatch{Range: rangeID, Token: 1}, done: make(chan struct{})}
	}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	a, b, a2, left, c := wait(t.Context(), 1), wait(t.Context(), 2), wait(t.Context(), 1), wait(gone, 4), wait(t.Context(), 3)
	g := newFinals(nil, false)
	g.queue = []*w{a, b, a2, left, c}

	require.Equal(t, []*w{a, b, c}, g.take())
	require.Equal(t, []*w{a2}, g.queue, "the second batch of range 1 waits")
	require.ErrorIs(t, left.ans.err, context.Canceled)
	require.Equal(t, []*w{a2}, g.take())
	require.Empty(t, g.queue)
}

// A call carries at most api.MaxBatches requests and, past its first, at
// most maxSize of their sizes: the rest wait, in order, for the next.
func TestGatherTakeBounds(t *testing.T) {
	type w = waiting[api.RangeToken, int]
	g := &gather[api.RangeToken, int]{key: func(r api.RangeToken) int64 { return r.Range }, maxSize: 10}
	for i := range api.MaxBatches + 2 {
		g.queue = append(g.queue, &w{ctx: t.Context(), q: api.RangeToken{Range: int64(i + 1), Token: 1}, done: make(chan struct{})})
	}
	require.Len(t, g.take(), api.MaxBatches)
	require.Len(t, g.queue, 2)
	g.queue[0].size, g.queue[1].size = 25, 1
	require.Len(t, g.take(), 1, "a first request larger than maxSize goes alone")
	require.Len(t, g.take(), 1)
	require.Empty(t, g.queue)
}
