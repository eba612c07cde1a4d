package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
)

// retryWait is longer than any backend's wait before a range reported
// corrupt is granted again (sqlstore: 10 s, doubling with each attempt).
const retryWait = 3 * time.Hour

// testGrantCorruptWaits: a range reported corrupt waits out a retry delay
// before it is granted again: healthy ranges of its own unordered group
// and of others are granted meanwhile, even ones after it in the grant
// order, and when it is the only work there is none until the delay
// passes. Then it comes back in its place (tail first), and it ends failed
// after the store's maximum attempts (5 here), which the lane's status
// counts.
func testGrantCorruptWaits(t *testing.T, e *env) {
	e.group(t, "bad", false)
	e.group(t, "good", false)
	e.ranges(t, "bad", 1, 100, lease.LaneTail) // tail: first in grant order
	e.ranges(t, "bad", 101, 200, lease.LaneHistory)
	e.ranges(t, "good", 1, 100, lease.LaneHistory)

	corrupt := func(l lease.Lease) lease.Range {
		t.Helper()
		r, err := e.Corrupt(e.ctx, l.Range.ID, fence(l), l.Range.Start, "frame too large")
		require.NoError(t, err)
		return r
	}
	finish := func(l lease.Lease) {
		t.Helper()
		e.fill(t, l, 100)
		require.NoError(t, e.Finish(e.ctx, l.Range.ID, fence(l)))
	}
	noWork := func(why string) {
		t.Helper()
		_, err := e.Grant(e.ctx, "a", ttl)
		require.ErrorIs(t, err, lease.ErrNoWork, why)
	}
	tail := e.grant(t, "a")
	require.Equal(t, lease.LaneTail, tail.Range.Lane, "tail first")
	r := corrupt(tail)
	require.Equal(t, 1, r.Attempts)
	require.Equal(t, lease.StatePending, r.State)

	good := e.grant(t, "a")
	require.Equal(t, "good", good.Range.Group, "the corrupt tail range waits; the other group's history goes first")
	finish(good)
	other := e.grant(t, "a")
	require.Equal(t, int64(101), other.Range.Start, "and its own group's")
	finish(other)
	noWork("the corrupt range is the only work, and it waits out its delay")

	// Past the delay it comes back; each attempt is followed by a wait,
	// until it fails at the fifth.
	for attempt := 2; attempt <= 5; attempt++ {
		e.clock.Advance(retryWait)
		l := e.grant(t, "a")
		require.Equal(t, tail.Range.ID, l.Range.ID, "the range is granted again once its delay passed")
		r := corrupt(l)
		require.Equal(t, attempt, r.Attempts)
		if attempt < 5 {
			require.Equal(t, lease.StatePending, r.State)
			noWork("it waits again")
			continue
		}
		require.Equal(t, lease.StateFailed, r.State, "failed after its tries")
		require.Contains(t, r.Reason, "frame too large")
	}
	e.clock.Advance(retryWait)
	noWork("a failed range is not granted")

	lanes, err := e.Lanes(e.ctx, "bad")
	require.NoError(t, err)
	byLane := map[lease.Lane]map[lease.State]int64{}
	for _, ln := range lanes {
		byLane[ln.Lane] = ln.Ranges
	}
	require.Equal(t, map[lease.State]int64{lease.StateFailed: 1}, byLane[lease.LaneTail], "status counts the failed range")
	require.Equal(t, map[lease.State]int64{lease.StateDone: 1}, byLane[lease.LaneHistory])
	failed, err := e.Ranges(e.ctx, grouplease.RangeFilter{Group: "bad", State: lease.StateFailed})
	require.NoError(t, err)
	require.Len(t, failed, 1)
	require.Equal(t, 5, failed[0].Attempts)
	require.Equal(t, tail.Range.ID, failed[0].ID)
}

// grantID grants nodeName a range and checks it is range id.
func (e *env) grantID(t *testing.T, nodeName string, id int64) lease.Lease {
	t.Helper()
	l := e.grant(t, nodeName)
	require.Equal(t, id, l.Range.ID)
	return l
}

// testGrantCorruptWaitsTogether: grants made together (on PostgreSQL one
// statement locks a range for each) leave a range reported corrupt to wait
// out its delay, as single grants do.
func testGrantCorruptWaitsTogether(t *testing.T, e *env) {
	e.group(t, "g", false)
	e.ranges(t, "g", 1, 300, lease.LaneHistory)
	first := e.grant(t, "a")
	_, err := e.Corrupt(e.ctx, first.Range.ID, fence(first), first.Range.Start, "frame too large")
	require.NoError(t, err)

	var wg sync.WaitGroup
	got := make([]lease.Lease, 2)
	errs := make([]error, 2)
	for i := range got {
		wg.Go(func() { got[i], errs[i] = e.Grant(e.ctx, fmt.Sprintf("n%d", i), ttl) })
	}
	wg.Wait()
	var starts []int64
	for i := range got {
		require.NoError(t, errs[i])
		starts = append(starts, got[i].Range.Start)
	}
	slices.Sort(starts)
	require.Equal(t, []int64{101, 201}, starts, "the healthy ranges")
	_, err = e.Grant(e.ctx, "a", ttl)
	require.ErrorIs(t, err, lease.ErrNoWork, "not the corrupt one before its delay")
	e.clock.Advance(retryWait)
	require.Equal(t, first.Range.ID, e.grant(t, "a").Range.ID, "then the corrupt one")
}

// thenGranter is a backend that can grant a node's next range in the
// statement that stores its final batch (sqlstore.Store.PutThenGrant).
type thenGranter interface {
	PutThenGrant(ctx context.Context, rangeID int64, f lease.Fence, b batch.Batch, ttl time.Duration) (batch.Result, *lease.Lease, bool, error)
}

// testGrantCorruptWaitsHandOver: the lease handed over with a final
// batch leaves a range reported corrupt to wait out its delay too: a
// healthy range of another group is handed over instead. Backends without PutThenGrant, or
// that did not try the grant there, skip it.
func testGrantCorruptWaitsHandOver(t *testing.T, e *env) {
	tg, ok := e.Backend.(thenGranter)
	if !ok {
		t.Skip("the backend does not grant with a final batch")
	}
	e.group(t, "g", false)
	e.group(t, "h", false)
	e.ranges(t, "g", 1000, 1099, lease.LaneTail) // tail: granted first
	e.ranges(t, "h", 1, 200, lease.LaneHistory)
	held := e.grant(t, "a")
	require.Equal(t, "g", held.Range.Group)
	bad := e.grant(t, "b")
	require.Equal(t, int64(1), bad.Range.Start)
	_, err := e.Corrupt(e.ctx, bad.Range.ID, fence(bad), 1, "frame too large")
	require.NoError(t, err)

	res, l, tried, err := tg.PutThenGrant(e.ctx, held.Range.ID, fence(held),
		batch.Batch{From: 1000, To: 1099, Headers: 100, Items: items("k"), Final: true}, ttl)
	require.NoError(t, err)
	require.True(t, res.Done)
	if !tried {
		t.Skip("the backend did not grant with this final batch")
	}
	require.NotNil(t, l)
	require.Equal(t, int64(101), l.Range.Start, "the healthy range, not the corrupt one")
}
