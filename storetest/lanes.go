package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
)

func (e *env) grantLane(t *testing.T, nodeName string, lane lease.Lane) grouplease.GroupLease {
	t.Helper()
	gl, err := e.GrantLane(e.ctx, nodeName, lane, ttl)
	require.NoError(t, err)
	return gl
}

func laneFence(gl grouplease.GroupLease) lease.Fence {
	return lease.Fence{Node: gl.Node, Token: gl.Token}
}

func testLaneGrant(t *testing.T, e *env) {
	e.group(t, "plain", false)
	e.ranges(t, "plain", 1, 100, lease.LaneHistory)
	_, err := e.GrantLane(e.ctx, "a", lease.LaneHistory, ttl)
	require.ErrorIs(t, err, lease.ErrNoWork, "unordered groups have no lanes to grant")

	g := e.group(t, "ordered", true)
	e.ranges(t, "ordered", 500, 699, lease.LaneHistory)
	_, err = e.GrantLane(e.ctx, "a", lease.LaneTail, ttl)
	require.ErrorIs(t, err, lease.ErrNoWork, "the tail lane has no ranges")
	_, err = e.GrantLane(e.ctx, "a", "sideways", ttl)
	require.ErrorIs(t, err, edgeindex.ErrInvalid)

	gl := e.grantLane(t, "a", lease.LaneHistory)
	require.Equal(t, grouplease.GroupRef{ID: g.ID, Name: "ordered"}, gl.Group)
	require.Equal(t, lease.LaneHistory, gl.Lane)
	require.Equal(t, int64(500), gl.Next)
	require.Nil(t, gl.Snapshot)
	require.Equal(t, e.clock.Now().Add(ttl), gl.ExpiresAt)
	_, err = e.GrantLane(e.ctx, "b", lease.LaneHistory, ttl)
	require.ErrorIs(t, err, lease.ErrNoWork, "a held lane is not granted")

	e.clock.Advance(ttl / 2)
	exp, err := e.HeartbeatLane(e.ctx, g.ID, lease.LaneHistory, laneFence(gl), ttl)
	require.NoError(t, err)
	require.Equal(t, e.clock.Now().Add(ttl), exp)
	_, err = e.HeartbeatLane(e.ctx, g.ID, lease.LaneHistory, lease.Fence{Node: "b", Token: gl.Token}, ttl)
	require.ErrorIs(t, err, edgeindex.ErrLeaseLost)
	_, err = e.HeartbeatLane(e.ctx, g.ID, lease.LaneTail, laneFence(gl), ttl)
	require.ErrorIs(t, err, edgeindex.ErrNotFound)

	e.clock.Advance(ttl + time.Second)
	gb := e.grantLane(t, "b", lease.LaneHistory)
	require.Greater(t, gb.Token, gl.Token, "an expired lane goes to the next asker, with a greater token")
	_, err = e.HeartbeatLane(e.ctx, g.ID, lease.LaneHistory, laneFence(gl), ttl)
	require.ErrorIs(t, err, edgeindex.ErrLeaseLost)

	lanes, err := e.Lanes(e.ctx, "ordered")
	require.NoError(t, err)
	require.Len(t, lanes, 1)
	require.Equal(t, "b", lanes[0].Holder)
	require.Equal(t, gb.Token, lanes[0].Token)
	require.Equal(t, int64(500), lanes[0].Next)
	require.Equal(t, map[lease.State]int64{lease.StatePending: 2}, lanes[0].Ranges)
}

func testLaneNext(t *testing.T, e *env) {
	g := e.group(t, "o", true)
	e.ranges(t, "o", 200, 399, lease.LaneHistory)
	e.ranges(t, "o", 1, 199, lease.LaneHistory) // added later, but earlier in article order
	gl := e.grantLane(t, "a", lease.LaneHistory)
	require.Equal(t, int64(1), gl.Next)
	f := laneFence(gl)

	var starts []int64
	for {
		l, err := e.Next(e.ctx, g.ID, lease.LaneHistory, f, ttl)
		if err != nil {
			require.ErrorIs(t, err, lease.ErrNoWork)
			break
		}
		again, err := e.Next(e.ctx, g.ID, lease.LaneHistory, f, ttl)
		require.NoError(t, err)
		require.Equal(t, l.Range.ID, again.Range.ID, "the holder's own range is handed back")
		require.Equal(t, l.Token, again.Token, "with the same token")
		starts = append(starts, l.Range.Start)
		e.fill(t, l, l.Range.End-l.Range.Start+1) // a header per article
		require.NoError(t, e.Finish(e.ctx, l.Range.ID, fence(l)))
	}
	require.Equal(t, []int64{1, 101, 200, 300}, starts, "ranges in article order")
	_, err := e.Next(e.ctx, g.ID, lease.LaneHistory, lease.Fence{Node: "b", Token: gl.Token}, ttl)
	require.ErrorIs(t, err, edgeindex.ErrLeaseLost)
	_, err = e.Next(e.ctx, g.ID+1000, lease.LaneHistory, f, ttl)
	require.ErrorIs(t, err, edgeindex.ErrNotFound)

	lanes, err := e.Lanes(e.ctx, "o")
	require.NoError(t, err)
	require.Equal(t, int64(399), lanes[0].Headers)
	require.Equal(t, int64(4), lanes[0].RangesDone)
	require.Equal(t, int64(400), lanes[0].Next)
	_, err = e.GrantLane(e.ctx, "b", lease.LaneHistory, ttl)
	require.ErrorIs(t, err, lease.ErrNoWork, "a lane whose ranges are done has no work")
}

func testLaneChangesHands(t *testing.T, e *env) {
	g := e.group(t, "o", true)
	e.ranges(t, "o", 1, 200, lease.LaneTail)
	ga := e.grantLane(t, "a", lease.LaneTail)
	la, err := e.Next(e.ctx, g.ID, lease.LaneTail, laneFence(ga), ttl)
	require.NoError(t, err)
	_, err = e.Put(e.ctx, la.Range.ID, fence(la), batch.Batch{From: 1, To: 40, Headers: 40})
	require.NoError(t, err)

	// Release: the range in progress goes back; the next holder resumes it.
	require.NoError(t, e.ReleaseLane(e.ctx, g.ID, lease.LaneTail, laneFence(ga)))
	require.Equal(t, lease.StatePending, e.get(t, la.Range.ID).State)
	require.ErrorIs(t, e.ReleaseLane(e.ctx, g.ID, lease.LaneTail, laneFence(ga)), edgeindex.ErrLeaseLost)

	gb := e.grantLane(t, "a", lease.LaneTail) // even the same node gets a new grant
	require.Equal(t, int64(41), gb.Next)
	lb, err := e.Next(e.ctx, g.ID, lease.LaneTail, laneFence(gb), ttl)
	require.NoError(t, err)
	require.Equal(t, la.Range.ID, lb.Range.ID)
	require.Equal(t, int64(41), lb.Range.Next)
	require.Greater(t, lb.Token, la.Token, "a new token")
	_, err = e.Put(e.ctx, la.Range.ID, fence(la), batch.Batch{From: 41, To: 50})
	require.ErrorIs(t, err, edgeindex.ErrLeaseLost, "the old grant is fenced")

	// Expiry: c takes the lane while b's range lease is still unexpired;
	// c's next grants that range again and b is fenced.
	e.clock.Advance(ttl / 2)
	_, err = e.Heartbeat(e.ctx, lb.Range.ID, fence(lb), ttl) // the range lease lives on
	require.NoError(t, err)
	e.clock.Advance(ttl/2 + time.Second)
	gc := e.grantLane(t, "c", lease.LaneTail)
	lc, err := e.Next(e.ctx, g.ID, lease.LaneTail, laneFence(gc), ttl)
	require.NoError(t, err)
	require.Equal(t, lb.Range.ID, lc.Range.ID)
	require.Greater(t, lc.Token, lb.Token)
	_, err = e.Heartbeat(e.ctx, lb.Range.ID, fence(lb), ttl)
	require.ErrorIs(t, err, edgeindex.ErrLeaseLost)
	_, err = e.Next(e.ctx, g.ID, lease.LaneTail, laneFence(gb), ttl)
	require.ErrorIs(t, err, edgeindex.ErrLeaseLost)
}

func testLaneFailedHead(t *testing.T, e *env) {
	g, err := e.AddGroup(e.ctx, grouplease.Group{Name: "o", Ordered: true, RangeSize: 100, ChunkSize: 100})
	require.NoError(t, err)
	e.ranges(t, "o", 1, 200, lease.LaneHistory)
	gl := e.grantLane(t, "a", lease.LaneHistory)
	for range 5 {
		l, err := e.Next(e.ctx, g.ID, lease.LaneHistory, laneFence(gl), ttl)
		require.NoError(t, err)
		require.Equal(t, int64(1), l.Range.Start)
		_, err = e.Corrupt(e.ctx, l.Range.ID, fence(l), 1, "truncated")
		require.NoError(t, err)
	}
	_, err = e.Next(e.ctx, g.ID, lease.LaneHistory, laneFence(gl), ttl)
	require.ErrorIs(t, err, lease.ErrNoWork, "a failed range blocks its lane: order is never broken")
	require.NoError(t, e.ReleaseLane(e.ctx, g.ID, lease.LaneHistory, laneFence(gl)))
	_, err = e.GrantLane(e.ctx, "a", lease.LaneHistory, ttl)
	require.ErrorIs(t, err, lease.ErrNoWork)
	n, err := e.Retry(e.ctx, "o")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	gl = e.grantLane(t, "a", lease.LaneHistory)
	l, err := e.Next(e.ctx, g.ID, lease.LaneHistory, laneFence(gl), ttl)
	require.NoError(t, err)
	require.Equal(t, int64(1), l.Range.Start)
}
