package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/lease"
)

// A final batch is stored and finishes its range in one transaction; its
// retry is a duplicate that says done; one short of the end is malformed.
func testFinalBatch(t *testing.T, e *env) {
	e.group(t, "g", false)
	e.ranges(t, "g", 1, 100, lease.LaneHistory)
	l := e.grant(t, "a")
	id, f := l.Range.ID, fence(l)

	_, err := e.Put(e.ctx, id, f, batch.Batch{From: 1, To: 50, Headers: 40, Items: items("x"), Final: true})
	require.ErrorIs(t, err, batch.ErrMalformed, "a final batch short of the end")
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
	r := e.get(t, id)
	require.Equal(t, lease.StateLeased, r.State)
	require.Equal(t, int64(1), r.Next, "a refused final batch stores nothing")

	res, err := e.Put(e.ctx, id, f, batch.Batch{From: 1, To: 50, Headers: 40, Items: items("x")})
	require.NoError(t, err)
	require.Equal(t, batch.Result{Next: 51}, res)
	last := batch.Batch{From: 51, To: 100, Headers: 45, Items: items("y"), Final: true}
	res, err = e.Put(e.ctx, id, f, last)
	require.NoError(t, err)
	require.Equal(t, batch.Result{Next: 101, Done: true}, res)
	r = e.get(t, id)
	require.Equal(t, lease.StateDone, r.State)
	require.Equal(t, int64(101), r.Next)
	require.Equal(t, int64(85), r.Headers)
	require.Len(t, e.feed(t, "g", 100, 2), 2)

	res, err = e.Put(e.ctx, id, f, last)
	require.NoError(t, err, "the retry of a final batch whose answer was lost")
	require.Equal(t, batch.Result{Next: 101, Duplicate: true, Done: true}, res)
	require.Len(t, e.feed(t, "g", 100, 2), 2, "a retry stores nothing")
	_, err = e.Put(e.ctx, id, f, batch.Batch{From: 51, To: 100, Headers: 45})
	require.ErrorIs(t, err, edgeindex.ErrLeaseLost, "a batch that is not final gets what it always got")
	_, err = e.Put(e.ctx, id, lease.Fence{Node: f.Node, Token: f.Token - 1}, last)
	require.ErrorIs(t, err, edgeindex.ErrLeaseLost, "an older token did not finish it")
	require.ErrorIs(t, e.Finish(e.ctx, id, f), edgeindex.ErrLeaseLost, "finished already")
	_, err = e.Check(e.ctx, id, f)
	require.ErrorIs(t, err, edgeindex.ErrLeaseLost)
	require.ErrorIs(t, err, edgeindex.ErrFinished, "the lease check says f's grant finished it")

	lanes, err := e.Lanes(e.ctx, "g")
	require.NoError(t, err)
	require.Len(t, lanes, 1)
	require.Equal(t, int64(85), lanes[0].Headers, "the lane counts the range's headers")
	require.Equal(t, int64(1), lanes[0].RangesDone)
	require.Equal(t, int64(101), lanes[0].Next)
}

// A final batch that is a duplicate while its sender holds the range (the
// last batch was posted without final) finishes the range; a stale holder's
// final batch is refused, and says nothing about the range being done.
func testFinalBatchFences(t *testing.T, e *env) {
	e.group(t, "g", false)
	e.ranges(t, "g", 1, 100, lease.LaneHistory)
	a := e.grant(t, "a")
	_, err := e.Put(e.ctx, a.Range.ID, fence(a), batch.Batch{From: 1, To: 100, Headers: 100})
	require.NoError(t, err)
	e.clock.Advance(ttl + time.Second)
	b := e.grant(t, "b")
	require.Equal(t, a.Range.ID, b.Range.ID)

	final := batch.Batch{From: 1, To: 100, Headers: 100, Final: true}
	_, err = e.Put(e.ctx, a.Range.ID, fence(a), final)
	require.ErrorIs(t, err, edgeindex.ErrLeaseLost, "the stale holder")
	require.NotErrorIs(t, err, edgeindex.ErrFinished)
	require.Equal(t, lease.StateLeased, e.get(t, a.Range.ID).State)

	res, err := e.Put(e.ctx, b.Range.ID, fence(b), final)
	require.NoError(t, err)
	require.Equal(t, batch.Result{Next: 101, Duplicate: true, Done: true}, res)
	r := e.get(t, b.Range.ID)
	require.Equal(t, lease.StateDone, r.State)
	require.Equal(t, int64(100), r.Headers, "a duplicate counts no headers")

	_, err = e.Put(e.ctx, a.Range.ID, fence(a), final)
	require.ErrorIs(t, err, edgeindex.ErrLeaseLost, "the stale holder, once the range is done")
	require.NotErrorIs(t, err, edgeindex.ErrFinished)
}
