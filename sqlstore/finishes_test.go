package sqlstore

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/lease"
)

// A round of finishes finishes, in its one statement, exactly the ranges
// whose fence holds and whose batches reach their end, deleting their
// claims; a call of the range under a stale fence (first in the round, the
// porcupine check's find), the same call twice, a stale token and a range
// with articles left are answered false, for Finish's transaction to tell
// apart.
func TestFinishRound(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := pgRanges(t, 30)
	ls := grantN(t, s, "a", 3)
	for _, l := range ls[:2] { // the third keeps articles to store
		_, err := s.Put(ctx, l.Range.ID, lease.Fence{Node: "a", Token: l.Token}, batch.Batch{From: l.Range.Start, To: l.Range.End, Headers: 10})
		require.NoError(t, err)
	}
	ok, err := s.ClaimChunk(ctx, ls[0].Range.ID, lease.Span{From: ls[0].Range.Start, To: ls[0].Range.End}, "c", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)

	fin := func(l lease.Lease, token int64) *call[rangeFence, bool] {
		return &call[rangeFence, bool]{ctx: ctx, done: make(chan struct{}), req: rangeFence{rangeID: l.Range.ID, f: lease.Fence{Node: "a", Token: token}}}
	}
	round := []*call[rangeFence, bool]{fin(ls[0], ls[0].Token+1), fin(ls[0], ls[0].Token), fin(ls[0], ls[0].Token),
		fin(ls[1], ls[1].Token+1), fin(ls[2], ls[2].Token)}
	s.finishRound(context.Background(), round)
	var got []bool
	for _, c := range round {
		require.NoError(t, c.err)
		got = append(got, c.res)
	}
	require.Equal(t, []bool{false, true, false, false, false}, got, "only the fence that holds finishes, once")
	for i, want := range []lease.State{lease.StateDone, lease.StateLeased, lease.StateLeased} {
		r, err := s.Range(ctx, ls[i].Range.ID)
		require.NoError(t, err)
		require.Equal(t, want, r.State, "range %d", i)
	}
	var claims int
	require.NoError(t, s.db.GetContext(ctx, &claims, "SELECT count(*) FROM chunk_claims"))
	require.Zero(t, claims, "the finished range's claim went with it")

	require.ErrorIs(t, s.Finish(ctx, ls[1].Range.ID, lease.Fence{Node: "a", Token: ls[1].Token + 1}), edgeindex.ErrLeaseLost)
	require.ErrorIs(t, s.Finish(ctx, ls[2].Range.ID, lease.Fence{Node: "a", Token: ls[2].Token}), edgeindex.ErrConflict)
	require.NoError(t, s.Finish(ctx, ls[1].Range.ID, lease.Fence{Node: "a", Token: ls[1].Token}))
}

// Concurrent Finishes, each of its own range, some fenced out, are each
// answered as one alone would be.
func TestFinishesConcurrent(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := pgRanges(t, 400)
	var ls []lease.Lease
	for range 40 {
		l, err := s.Grant(ctx, "a", time.Minute)
		require.NoError(t, err)
		_, err = s.Put(ctx, l.Range.ID, lease.Fence{Node: "a", Token: l.Token}, batch.Batch{From: l.Range.Start, To: l.Range.End, Headers: 10})
		require.NoError(t, err)
		ls = append(ls, l)
	}
	errs := make([]error, len(ls))
	var wg sync.WaitGroup
	for i, l := range ls {
		wg.Go(func() {
			token := l.Token
			if i%3 == 0 {
				token++ // a stale holder
			}
			errs[i] = s.Finish(ctx, l.Range.ID, lease.Fence{Node: "a", Token: token})
		})
	}
	wg.Wait()
	for i, l := range ls {
		r, err := s.Range(ctx, l.Range.ID)
		require.NoError(t, err)
		if i%3 == 0 {
			require.ErrorIs(t, errs[i], edgeindex.ErrLeaseLost, "range %d", i)
			require.Equal(t, lease.StateLeased, r.State)
			continue
		}
		require.NoError(t, errs[i], "range %d", i)
		require.Equal(t, lease.StateDone, r.State)
	}
}
