package storetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
)

// testGrantCorruptBehind: a range reported corrupt goes behind every
// healthy range, of its own unordered group and of others, even one that
// comes earlier in the grant order otherwise (a tail range); among ranges
// with attempts the fewest go first. It is still granted when it is the
// only work, and it ends failed after the store's maximum attempts (5
// here), which the lane's status counts.
func testGrantCorruptBehind(t *testing.T, e *env) {
	e.group(t, "bad", false)
	e.group(t, "good", false)
	e.ranges(t, "bad", 1, 100, lease.LaneTail) // tail: first in grant order
	e.ranges(t, "bad", 101, 200, lease.LaneHistory)
	e.ranges(t, "bad", 201, 300, lease.LaneHistory)
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
	tail := e.grant(t, "a")
	require.Equal(t, lease.LaneTail, tail.Range.Lane, "tail first while nothing has failed")
	require.Equal(t, 1, corrupt(tail).Attempts)

	good := e.grant(t, "a") // held to the end: the other group's work
	require.Equal(t, "good", good.Range.Group, "the corrupt tail range goes behind the other group's healthy range")
	h1 := e.grant(t, "a")
	require.Equal(t, int64(101), h1.Range.Start, "and behind its own group's")
	require.Equal(t, 1, corrupt(h1).Attempts)

	h2 := e.grant(t, "a")
	require.Equal(t, int64(201), h2.Range.Start, "the healthy range goes before both that have an attempt")
	finish(h2)

	l := e.grantID(t, "a", tail.Range.ID) // one attempt each: tail first, as among healthy ranges
	require.Equal(t, 2, corrupt(l).Attempts)
	finish(e.grantID(t, "a", h1.Range.ID)) // one attempt goes before two

	// The corrupt range is now the only work (the good one is held): it is
	// granted, and fails at the fifth attempt.
	for attempt := 3; attempt <= 5; attempt++ {
		l := e.grant(t, "a")
		require.Equal(t, tail.Range.ID, l.Range.ID, "the only work is granted, attempts or not")
		r := corrupt(l)
		require.Equal(t, attempt, r.Attempts)
		if attempt < 5 {
			require.Equal(t, lease.StatePending, r.State)
			continue
		}
		require.Equal(t, lease.StateFailed, r.State, "failed after its tries")
		require.Contains(t, r.Reason, "frame too large")
	}
	_, err := e.Grant(e.ctx, "a", ttl)
	require.ErrorIs(t, err, lease.ErrNoWork, "a failed range is not granted")

	lanes, err := e.Lanes(e.ctx, "bad")
	require.NoError(t, err)
	byLane := map[lease.Lane]map[lease.State]int64{}
	for _, ln := range lanes {
		byLane[ln.Lane] = ln.Ranges
	}
	require.Equal(t, map[lease.State]int64{lease.StateFailed: 1}, byLane[lease.LaneTail], "status counts the failed range")
	require.Equal(t, map[lease.State]int64{lease.StateDone: 2}, byLane[lease.LaneHistory])
	failed, err := e.Ranges(e.ctx, grouplease.RangeFilter{Group: "bad", State: lease.StateFailed})
	require.NoError(t, err)
	require.Len(t, failed, 1)
	require.Equal(t, 5, failed[0].Attempts)
	require.Equal(t, tail.Range.ID, failed[0].ID)
	require.Equal(t, lease.StateLeased, e.get(t, good.Range.ID).State, "the healthy range held meanwhile is untouched")
}

// grantID grants nodeName a range and checks it is range id.
func (e *env) grantID(t *testing.T, nodeName string, id int64) lease.Lease {
	t.Helper()
	l := e.grant(t, nodeName)
	require.Equal(t, id, l.Range.ID)
	return l
}
