package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/lease"
)

// PutMany answers each entry as its own Put: stored, a duplicate, a lost
// lease and a gap side by side, only the stored ones changing anything;
// with a ttl, each entry that finishes its range may carry its node's
// next lease (when the store grants in the write) and never another
// node's.
func testPutMany(t *testing.T, e *env) {
	e.group(t, "g", false)
	e.ranges(t, "g", 1, 500, lease.LaneHistory) // five ranges of 100
	var ls []lease.Lease
	for range 4 {
		ls = append(ls, e.grant(t, "a"))
	}
	_, err := e.Put(e.ctx, ls[1].Range.ID, fence(ls[1]), batch.Batch{From: ls[1].Range.Start, To: ls[1].Range.Start + 9, Items: items("d")})
	require.NoError(t, err)
	at := func(l lease.Lease, from, to int64, final bool) batch.Batch {
		return batch.Batch{From: l.Range.Start + from, To: l.Range.Start + to, Items: items("k"), Final: final}
	}
	stale := fence(ls[2])
	stale.Token++
	entries := []batch.Entry{
		{RangeID: ls[0].Range.ID, Fence: fence(ls[0]), Batch: at(ls[0], 0, 99, true)},
		{RangeID: ls[1].Range.ID, Fence: fence(ls[1]), Batch: at(ls[1], 0, 9, false)},
		{RangeID: ls[2].Range.ID, Fence: stale, Batch: at(ls[2], 0, 99, true)},
		{RangeID: ls[3].Range.ID, Fence: fence(ls[3]), Batch: at(ls[3], 50, 99, true)},
	}
	answers, err := e.PutMany(e.ctx, entries, time.Minute)
	require.NoError(t, err)
	require.Len(t, answers, 4)
	require.NoError(t, answers[0].Err)
	require.Equal(t, batch.Result{Next: ls[0].Range.End + 1, Done: true}, answers[0].Result)
	if answers[0].Tried { // a store that grants in the write: one range is left for it
		require.NotNil(t, answers[0].Lease, "the range left was not granted")
		next := *answers[0].Lease
		_, err := e.Check(e.ctx, next.Range.ID, lease.Fence{Node: "a", Token: next.Token})
		require.NoError(t, err, "held by the node that asked")
		require.NotContains(t, []int64{ls[0].Range.ID, ls[1].Range.ID, ls[2].Range.ID, ls[3].Range.ID}, next.Range.ID, "the range left")
	}
	require.NoError(t, answers[1].Err)
	require.True(t, answers[1].Result.Duplicate)
	require.Nil(t, answers[1].Lease)
	require.ErrorIs(t, answers[2].Err, edgeindex.ErrLeaseLost)
	require.Nil(t, answers[2].Lease)
	require.ErrorIs(t, answers[3].Err, batch.ErrGap)
	require.Equal(t, lease.StateDone, e.get(t, ls[0].Range.ID).State)
	for _, l := range ls[2:] {
		r := e.get(t, l.Range.ID)
		require.Equal(t, lease.StateLeased, r.State)
		require.Equal(t, l.Range.Start, r.Next, "a refused entry stores nothing")
	}
	require.Len(t, e.feed(t, "g", 100, 2), 2, "the first batch of ls[1] and the final one of ls[0]")

	answers, err = e.PutMany(e.ctx, entries[:1], 0)
	require.NoError(t, err)
	require.Equal(t, batch.Result{Next: ls[0].Range.End + 1, Duplicate: true, Done: true}, answers[0].Result, "a retry")
	require.Nil(t, answers[0].Lease, "no ttl, no grant")
	require.False(t, answers[0].Tried)
}

// A node's batch history records every batch it stored but an empty final
// one, which only finished its range.
func testBatchRecords(t *testing.T, e *env) {
	e.group(t, "g", false)
	e.ranges(t, "g", 1, 100, lease.LaneHistory)
	l := e.grant(t, "a")
	id, f := l.Range.ID, fence(l)
	for _, b := range []batch.Batch{
		{From: 1, To: 10, Headers: 10, Items: items("x")},
		{From: 11, To: 20},
		{From: 21, To: 100, Final: true},
	} {
		_, err := e.Put(e.ctx, id, f, b)
		require.NoError(t, err)
	}
	require.Equal(t, lease.StateDone, e.get(t, id).State)
	recs, err := e.Batches(e.ctx, "a", 0, 0)
	require.NoError(t, err)
	require.Len(t, recs, 2)
	require.Equal(t, int64(11), recs[0].From, "newest first: the empty batch that was not final")
	require.Equal(t, int64(1), recs[1].From)
}

// GrantMany grants up to n distinct ranges at once, in grant order, and
// fewer when there is less work: none, with no error, when there is none.
func testGrantMany(t *testing.T, e *env) {
	e.group(t, "g", false)
	e.ranges(t, "g", 1, 500, lease.LaneHistory) // five ranges of 100
	ls, err := e.GrantMany(e.ctx, "a", 3, time.Minute)
	require.NoError(t, err)
	require.Len(t, ls, 3)
	seen := map[int64]bool{}
	for _, l := range ls {
		require.False(t, seen[l.Range.ID])
		seen[l.Range.ID] = true
		_, err := e.Check(e.ctx, l.Range.ID, fence(l))
		require.NoError(t, err, "held by a")
	}
	require.Equal(t, int64(1), minStart(ls), "the lowest starts first")
	more, err := e.GrantMany(e.ctx, "b", 3, time.Minute)
	require.NoError(t, err)
	require.Len(t, more, 2, "what is left")
	none, err := e.GrantMany(e.ctx, "a", 3, time.Minute)
	require.NoError(t, err)
	require.Empty(t, none)
	_, err = e.GrantMany(e.ctx, "", 1, time.Minute)
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
}

func minStart(ls []lease.Lease) int64 {
	m := ls[0].Range.Start
	for _, l := range ls {
		m = min(m, l.Range.Start)
	}
	return m
}

// FinishMany answers each range as its own Finish: finished, short of its
// end (a conflict), a stale fence (a lost lease), and an unknown range,
// side by side; only the first is done.
func testFinishMany(t *testing.T, e *env) {
	e.group(t, "g", false)
	e.ranges(t, "g", 1, 300, lease.LaneHistory)
	ls, err := e.GrantMany(e.ctx, "a", 3, time.Minute)
	require.NoError(t, err)
	require.Len(t, ls, 3)
	for _, l := range ls[:2] {
		_, err := e.Put(e.ctx, l.Range.ID, fence(l), batch.Batch{From: l.Range.Start, To: l.Range.End})
		require.NoError(t, err)
	}
	stale := fence(ls[1])
	stale.Token++
	errs, err := e.FinishMany(e.ctx, []lease.Held{
		{RangeID: ls[0].Range.ID, Fence: fence(ls[0])},
		{RangeID: ls[1].Range.ID, Fence: stale},
		{RangeID: ls[2].Range.ID, Fence: fence(ls[2])},
		{RangeID: 99999, Fence: fence(ls[0])},
	})
	require.NoError(t, err)
	require.Len(t, errs, 4)
	require.NoError(t, errs[0])
	require.ErrorIs(t, errs[1], edgeindex.ErrLeaseLost)
	require.ErrorIs(t, errs[2], edgeindex.ErrConflict)
	require.NotErrorIs(t, errs[2], edgeindex.ErrLeaseLost)
	require.ErrorIs(t, errs[3], edgeindex.ErrNotFound)
	require.Equal(t, lease.StateDone, e.get(t, ls[0].Range.ID).State)
	require.Equal(t, lease.StateLeased, e.get(t, ls[1].Range.ID).State)
	require.Equal(t, lease.StateLeased, e.get(t, ls[2].Range.ID).State)
	errs, err = e.FinishMany(e.ctx, []lease.Held{{RangeID: ls[0].Range.ID, Fence: fence(ls[0])}})
	require.NoError(t, err)
	require.ErrorIs(t, errs[0], edgeindex.ErrLeaseLost, "a retry of a finish that took effect")
}
