package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/lease"
)

func testGrantOrder(t *testing.T, e *env) {
	e.group(t, "g1", false)
	e.group(t, "g2", false)
	e.ranges(t, "g1", 1000, 1199, lease.LaneHistory)
	e.ranges(t, "g2", 500, 599, lease.LaneHistory)
	e.ranges(t, "g1", 5000, 5099, lease.LaneTail)
	e.ranges(t, "g2", 4000, 4099, lease.LaneTail)

	var got []int64
	for range 5 {
		l := e.grant(t, "n1")
		require.Equal(t, lease.StateLeased, l.Range.State)
		require.Equal(t, int64(10), l.ChunkSize)
		require.Equal(t, "n1", l.Node)
		require.Equal(t, e.clock.Now().Add(ttl), l.ExpiresAt)
		require.EqualValues(t, ttl, l.TTL)
		got = append(got, l.Range.Start)
	}
	require.Equal(t, []int64{4000, 5000, 500, 1000, 1100}, got, "tail first, then the lowest start")
	_, err := e.Grant(e.ctx, "n1", ttl)
	require.ErrorIs(t, err, lease.ErrNoWork)
}

func testGrantSkipsOrdered(t *testing.T, e *env) {
	e.group(t, "ordered", true)
	e.ranges(t, "ordered", 1, 100, lease.LaneTail)
	_, err := e.Grant(e.ctx, "n1", ttl)
	require.ErrorIs(t, err, lease.ErrNoWork, "an ordered group's ranges go only through its lanes")

	e.group(t, "plain", false)
	e.ranges(t, "plain", 1, 10, lease.LaneHistory)
	l := e.grant(t, "n1")
	e.fill(t, l, 10)
	require.NoError(t, e.Finish(e.ctx, l.Range.ID, fence(l)))
	_, err = e.Grant(e.ctx, "n1", ttl)
	require.ErrorIs(t, err, lease.ErrNoWork, "a done range is never granted again")
}

func testExpiryAndRegrant(t *testing.T, e *env) {
	e.group(t, "g", false)
	e.ranges(t, "g", 1, 100, lease.LaneHistory)
	a := e.grant(t, "a")
	_, err := e.Put(e.ctx, a.Range.ID, fence(a), batch.Batch{From: 1, To: 30, Headers: 30, Items: items("x")})
	require.NoError(t, err)

	// Not expired: nobody else gets it.
	e.clock.Advance(ttl - time.Second)
	_, err = e.Grant(e.ctx, "b", ttl)
	require.ErrorIs(t, err, lease.ErrNoWork)

	// Expired but not granted again: the holder's heartbeat renews it.
	e.clock.Advance(2 * time.Second)
	exp, err := e.Heartbeat(e.ctx, a.Range.ID, fence(a), ttl)
	require.NoError(t, err)
	require.Equal(t, e.clock.Now().Add(ttl), exp)
	_, err = e.Grant(e.ctx, "b", ttl)
	require.ErrorIs(t, err, lease.ErrNoWork)

	// Expired and granted to b: b resumes from next with a greater token.
	e.clock.Advance(ttl + time.Second)
	b := e.grant(t, "b")
	require.Equal(t, a.Range.ID, b.Range.ID)
	require.Equal(t, int64(31), b.Range.Next, "a re-grant keeps next")
	require.Greater(t, b.Token, a.Token)
	require.Equal(t, int64(30), b.Range.Headers)

	// a woke up: every write is refused and changes nothing.
	_, err = e.Heartbeat(e.ctx, a.Range.ID, fence(a), ttl)
	require.ErrorIs(t, err, edgeindex.ErrLeaseLost)
	_, err = e.Put(e.ctx, a.Range.ID, fence(a), batch.Batch{From: 31, To: 40, Items: items("late")})
	require.ErrorIs(t, err, edgeindex.ErrLeaseLost)
	require.Equal(t, int64(31), e.get(t, a.Range.ID).Next)

	// A's token even with b's name is refused: the token fences too.
	_, err = e.Heartbeat(e.ctx, a.Range.ID, lease.Fence{Node: "b", Token: a.Token}, ttl)
	require.ErrorIs(t, err, edgeindex.ErrLeaseLost)
}

func testFencing(t *testing.T, e *env) {
	e.group(t, "g", false)
	e.ranges(t, "g", 1, 100, lease.LaneHistory)
	l := e.grant(t, "a")
	id := l.Range.ID
	stale := []lease.Fence{
		{Node: "a", Token: l.Token - 1},
		{Node: "a", Token: l.Token + 1},
		{Node: "b", Token: l.Token},
	}
	for _, f := range stale {
		_, err := e.Heartbeat(e.ctx, id, f, ttl)
		require.ErrorIs(t, err, edgeindex.ErrLeaseLost)
		_, err = e.Check(e.ctx, id, f)
		require.ErrorIs(t, err, edgeindex.ErrLeaseLost)
		_, err = e.Put(e.ctx, id, f, batch.Batch{From: 1, To: 100, Headers: 1, Items: items("x")})
		require.ErrorIs(t, err, edgeindex.ErrLeaseLost)
		require.ErrorIs(t, e.Finish(e.ctx, id, f), edgeindex.ErrLeaseLost)
		require.ErrorIs(t, e.Release(e.ctx, id, f), edgeindex.ErrLeaseLost)
		_, err = e.Corrupt(e.ctx, id, f, 1, "bad")
		require.ErrorIs(t, err, edgeindex.ErrLeaseLost)
	}
	r := e.get(t, id)
	require.Equal(t, lease.StateLeased, r.State)
	require.Equal(t, int64(1), r.Next)
	require.Zero(t, r.Attempts)

	got, err := e.Check(e.ctx, id, fence(l))
	require.NoError(t, err)
	require.Equal(t, l.Token, got.Token)
	require.Equal(t, l.Range.ID, got.Range.ID)

	for _, missing := range []error{
		func() error { _, err := e.Heartbeat(e.ctx, 999999, fence(l), ttl); return err }(),
		func() error { _, err := e.Check(e.ctx, 999999, fence(l)); return err }(),
		func() error { _, err := e.Put(e.ctx, 999999, fence(l), batch.Batch{From: 1, To: 1}); return err }(),
		e.Finish(e.ctx, 999999, fence(l)),
		e.Release(e.ctx, 999999, fence(l)),
	} {
		require.ErrorIs(t, missing, edgeindex.ErrNotFound)
	}
	_, err = e.Heartbeat(e.ctx, id, fence(l), -time.Second)
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
}

func testFinish(t *testing.T, e *env) {
	e.group(t, "g", false)
	e.ranges(t, "g", 1, 100, lease.LaneHistory)
	l := e.grant(t, "a")
	_, err := e.Put(e.ctx, l.Range.ID, fence(l), batch.Batch{From: 1, To: 50, Headers: 40, Items: items("x")})
	require.NoError(t, err)
	err = e.Finish(e.ctx, l.Range.ID, fence(l))
	require.ErrorIs(t, err, edgeindex.ErrConflict)
	require.ErrorContains(t, err, "reach 50")
	require.ErrorContains(t, err, "ends at 100")
	require.Equal(t, lease.StateLeased, e.get(t, l.Range.ID).State)

	_, err = e.Put(e.ctx, l.Range.ID, fence(l), batch.Batch{From: 51, To: 100, Headers: 45})
	require.NoError(t, err)
	require.NoError(t, e.Finish(e.ctx, l.Range.ID, fence(l)))
	r := e.get(t, l.Range.ID)
	require.Equal(t, lease.StateDone, r.State)
	require.Equal(t, int64(101), r.Next)
	require.Equal(t, int64(85), r.Headers)
	require.ErrorIs(t, e.Finish(e.ctx, l.Range.ID, fence(l)), edgeindex.ErrLeaseLost, "finishing twice")

	lanes, err := e.Lanes(e.ctx, "g")
	require.NoError(t, err)
	require.Len(t, lanes, 1)
	require.Equal(t, int64(85), lanes[0].Headers, "the lane counts the finished range's headers")
	require.Equal(t, int64(1), lanes[0].RangesDone)
	require.Equal(t, int64(101), lanes[0].Next)
	require.Equal(t, map[lease.State]int64{lease.StateDone: 1}, lanes[0].Ranges)
}

func testRelease(t *testing.T, e *env) {
	e.group(t, "g", false)
	e.ranges(t, "g", 1, 100, lease.LaneHistory)
	a := e.grant(t, "a")
	_, err := e.Put(e.ctx, a.Range.ID, fence(a), batch.Batch{From: 1, To: 20, Headers: 20})
	require.NoError(t, err)
	require.NoError(t, e.Release(e.ctx, a.Range.ID, fence(a)))
	r := e.get(t, a.Range.ID)
	require.Equal(t, lease.StatePending, r.State)
	require.Zero(t, r.Attempts)
	require.Equal(t, int64(21), r.Next)
	require.ErrorIs(t, e.Release(e.ctx, a.Range.ID, fence(a)), edgeindex.ErrLeaseLost)

	b := e.grant(t, "b") // at once: a released range needs no expiry
	require.Equal(t, a.Range.ID, b.Range.ID)
	require.Equal(t, int64(21), b.Range.Next)
	require.Greater(t, b.Token, a.Token)
}

func testCorrupt(t *testing.T, e *env) {
	e.group(t, "g", false)
	e.ranges(t, "g", 1, 100, lease.LaneHistory) // chunks 1-10, 11-20, ...
	l := e.grant(t, "a")
	for _, from := range []int64{0, 2, 15, 101} {
		_, err := e.Corrupt(e.ctx, l.Range.ID, fence(l), from, "bad gzip")
		require.ErrorIs(t, err, edgeindex.ErrInvalid, "from %d", from)
	}
	require.Equal(t, lease.StateLeased, e.get(t, l.Range.ID).State, "a refused report changes nothing")
	_, err := e.Put(e.ctx, l.Range.ID, fence(l), batch.Batch{From: 1, To: 20, Headers: 20})
	require.NoError(t, err)

	for attempt := 1; attempt <= 5; attempt++ {
		r, err := e.Corrupt(e.ctx, l.Range.ID, fence(l), 21, "bad gzip")
		require.NoError(t, err)
		require.Equal(t, attempt, r.Attempts)
		require.Equal(t, int64(21), r.Next, "next is kept")
		if attempt < 5 {
			require.Equal(t, lease.StatePending, r.State)
			e.clock.Advance(retryWait)
			l = e.grant(t, "a")
			continue
		}
		require.Equal(t, lease.StateFailed, r.State, "failed at the fifth attempt")
		require.Contains(t, r.Reason, "bad gzip")
		require.Contains(t, r.Reason, "21")
	}
	_, err = e.Grant(e.ctx, "a", ttl)
	require.ErrorIs(t, err, lease.ErrNoWork, "a failed range is not granted")

	n, err := e.Retry(e.ctx, "g")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	r := e.get(t, l.Range.ID)
	require.Equal(t, lease.StatePending, r.State)
	require.Zero(t, r.Attempts)
	require.Equal(t, int64(21), r.Next)
	n, err = e.Retry(e.ctx, "g", r.ID)
	require.NoError(t, err)
	require.Zero(t, n, "retry touches only failed ranges")
	_, err = e.Retry(e.ctx, "nope")
	require.ErrorIs(t, err, edgeindex.ErrNotFound)
}
