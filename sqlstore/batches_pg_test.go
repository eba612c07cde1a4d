package sqlstore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/internal/pgtest"
	"github.com/edgeindex/edgeindex/lease"
)

// A range that changes between putOptimistic's read and its write (here
// released and granted to another node) has nothing of its Put written:
// the Put is decided again under the range's lock and refused, while the
// other Put of the group is stored.
func TestOptimisticPutStaleRange(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, err := Open(ctx, pgtest.URL(t), Config{})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	_, err = s.AddGroup(ctx, grouplease.Group{Name: "g", RangeSize: 10, ChunkSize: 10})
	require.NoError(t, err)
	_, err = s.AddRanges(ctx, grouplease.NewRanges{Group: "g", From: 1, To: 20})
	require.NoError(t, err)
	a, err := s.Grant(ctx, "a", time.Minute)
	require.NoError(t, err)
	b, err := s.Grant(ctx, "a", time.Minute)
	require.NoError(t, err)

	var stolen lease.Lease
	s.testHookRead = func() {
		s.testHookRead = nil
		require.NoError(t, s.Release(ctx, b.Range.ID, lease.Fence{Node: "a", Token: b.Token}))
		stolen, err = s.Grant(ctx, "b", time.Minute)
		require.NoError(t, err)
		require.Equal(t, b.Range.ID, stolen.Range.ID)
	}
	put := func(l lease.Lease) *call[putReq, batch.Result] {
		return &call[putReq, batch.Result]{ctx: ctx, done: make(chan struct{}), req: putReq{rangeID: l.Range.ID,
			f: lease.Fence{Node: "a", Token: l.Token}, b: batch.Batch{From: l.Range.Start, To: l.Range.End, Headers: 10,
				Items: []batch.Item{{Key: "k", Value: []byte(`1`)}}, Final: true}}}
	}
	group := []*call[putReq, batch.Result]{put(a), put(b)}
	require.True(t, s.optimistic(group))
	s.putGroup(context.Background(), group)

	require.NoError(t, group[0].err)
	require.True(t, group[0].res.Done)
	require.ErrorIs(t, group[1].err, lease.ErrLeaseLost, "decided again under the lock")
	ra, err := s.Range(ctx, a.Range.ID)
	require.NoError(t, err)
	require.Equal(t, lease.StateDone, ra.State)
	rb, err := s.Range(ctx, b.Range.ID)
	require.NoError(t, err)
	require.Equal(t, lease.StateLeased, rb.State)
	require.Equal(t, rb.Start, rb.Next, "nothing of the stale Put was written")
	_, err = s.Check(ctx, b.Range.ID, lease.Fence{Node: "b", Token: stolen.Token})
	require.NoError(t, err, "the new holder keeps it")
	page, err := s.Results(ctx, batch.Query{Group: "g"})
	require.NoError(t, err)
	require.Len(t, page.Results, 1)
	require.Equal(t, a.Range.ID, page.Results[0].Range)
}
