package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
)

// Lanes fence their ranges (docs/api.md, Fencing): a grant of a lane fences, in
// the same transaction, every range still leased under an older grant of
// that lane. The old holder's next write to such a range is refused and
// changes nothing; the new holder gets the range through Next, from its
// next, with a greater token. A repair range of the group, granted like an
// unordered range, is no part of the lane and keeps its lease.
func testLaneGrantFencesRanges(t *testing.T, e *env) {
	// The new holder is another node, then the same node under a new grant:
	// the token fences, not only the name. Each in a lane of its own.
	for i, c := range []struct {
		lane      lease.Lane
		newHolder string
	}{{lease.LaneHistory, "b"}, {lease.LaneTail, "a"}} {
		t.Run(fmt.Sprintf("%s to %s", c.lane, c.newHolder), func(t *testing.T) {
			laneFenceScenario(t, e, fmt.Sprintf("o%d", i), c.lane, c.newHolder)
		})
	}
}

func laneFenceScenario(t *testing.T, e *env, group string, h lease.Lane, newHolder string) {
	g := e.group(t, group, true)
	e.ranges(t, group, 1, 300, h) // 1-100, 101-200, 201-300

	// A holds the lane; its first range leaves article 50 missing, which
	// becomes a repair range in the same lane, leased by a plain grant.
	ga := e.grantLane(t, "a", h)
	l1, err := e.Next(e.ctx, g.ID, h, laneFence(ga), ttl)
	require.NoError(t, err)
	e.putMissing(t, l1, 50)
	e.clock.Advance(repairDelay)
	_, err = e.HeartbeatLane(e.ctx, g.ID, h, laneFence(ga), ttl) // expired, not granted again: renewed
	require.NoError(t, err)
	added, err := e.PlanRepairs(e.ctx)
	require.NoError(t, err)
	require.Equal(t, []lease.Span{{From: 50, To: 50}}, spansOf(added))
	rep := e.grant(t, "r")
	require.True(t, rep.Range.Repair)
	require.Equal(t, h, rep.Range.Lane)

	// A works on the lane's range 101-200: half of it is stored.
	la, err := e.Next(e.ctx, g.ID, h, laneFence(ga), ttl)
	require.NoError(t, err)
	require.Equal(t, int64(101), la.Range.Start)
	_, err = e.Put(e.ctx, la.Range.ID, fence(la), batch.Batch{From: 101, To: 150, Headers: 50, Items: items(group + "-a1")})
	require.NoError(t, err)

	// A's lane expires while its range lease is kept alive; B gets the lane.
	e.clock.Advance(ttl / 2)
	_, err = e.Heartbeat(e.ctx, la.Range.ID, fence(la), ttl)
	require.NoError(t, err)
	_, err = e.Heartbeat(e.ctx, rep.Range.ID, fence(rep), ttl)
	require.NoError(t, err)
	e.clock.Advance(ttl/2 + time.Second)
	gb := e.grantLane(t, newHolder, h)
	require.Equal(t, g.ID, gb.Group.ID)
	require.Greater(t, gb.Token, ga.Token)
	require.Equal(t, int64(151), gb.Next)

	// Every write of A on its range is refused and changes nothing.
	fa := fence(la)
	_, err = e.Put(e.ctx, la.Range.ID, fa, batch.Batch{From: 151, To: 200, Headers: 50, Items: items(group + "-late")})
	require.ErrorIs(t, err, edgeindex.ErrLeaseLost, "batch")
	_, err = e.Put(e.ctx, la.Range.ID, fa, batch.Batch{From: 101, To: 150, Headers: 50, Items: items(group + "-a1")})
	require.ErrorIs(t, err, edgeindex.ErrLeaseLost, "a retried batch")
	_, err = e.Heartbeat(e.ctx, la.Range.ID, fa, ttl)
	require.ErrorIs(t, err, edgeindex.ErrLeaseLost, "heartbeat")
	_, err = e.Check(e.ctx, la.Range.ID, fa)
	require.ErrorIs(t, err, edgeindex.ErrLeaseLost, "check")
	require.ErrorIs(t, e.Finish(e.ctx, la.Range.ID, fa), edgeindex.ErrLeaseLost, "finish")
	require.ErrorIs(t, e.Release(e.ctx, la.Range.ID, fa), edgeindex.ErrLeaseLost, "release")
	_, err = e.Corrupt(e.ctx, la.Range.ID, fa, 151, "bad")
	require.ErrorIs(t, err, edgeindex.ErrLeaseLost, "corrupt")
	// And so is every lane call of A's grant; its release frees nothing.
	_, err = e.Next(e.ctx, g.ID, h, laneFence(ga), ttl)
	require.ErrorIs(t, err, edgeindex.ErrLeaseLost, "next")
	_, err = e.HeartbeatLane(e.ctx, g.ID, h, laneFence(ga), ttl)
	require.ErrorIs(t, err, edgeindex.ErrLeaseLost, "heartbeat lane")
	require.ErrorIs(t, e.ReleaseLane(e.ctx, g.ID, h, laneFence(ga)), edgeindex.ErrLeaseLost, "release lane")
	require.ErrorIs(t, e.PutSnapshot(e.ctx, g.ID, h, laneFence(ga), grouplease.SnapshotFile{Snapshot: grouplease.Snapshot{Next: 151}, File: "x"}), edgeindex.ErrLeaseLost, "snapshot")

	r := e.get(t, la.Range.ID)
	require.NotEqual(t, lease.StateDone, r.State)
	require.Equal(t, int64(151), r.Next)
	require.Equal(t, int64(50), r.Headers)
	require.Zero(t, r.Attempts)
	stored := e.feed(t, group, 10, 2)
	require.Equal(t, group+"-a1", stored[1].Key, "only the batch stored before the grant")

	// The repair range is no part of the lane: its holder keeps it.
	rr := e.get(t, rep.Range.ID)
	require.Equal(t, lease.StateLeased, rr.State)
	_, err = e.Heartbeat(e.ctx, rep.Range.ID, fence(rep), ttl)
	require.NoError(t, err, "a repair range is not fenced by a lane grant")

	// B resumes A's range from its next, with a greater token, and goes on
	// in order.
	lb, err := e.Next(e.ctx, g.ID, h, laneFence(gb), ttl)
	require.NoError(t, err)
	require.Equal(t, la.Range.ID, lb.Range.ID, "the new holder gets the fenced range, not the one after it")
	require.Equal(t, int64(151), lb.Range.Next)
	require.Greater(t, lb.Token, la.Token)
	require.Equal(t, newHolder, lb.Node)
	e.fill(t, lb, 50)
	require.NoError(t, e.Finish(e.ctx, lb.Range.ID, fence(lb)))
	l3, err := e.Next(e.ctx, g.ID, h, laneFence(gb), ttl)
	require.NoError(t, err)
	require.Equal(t, int64(201), l3.Range.Start)
	e.fill(t, l3, 100)
	require.NoError(t, e.Finish(e.ctx, l3.Range.ID, fence(l3)))
	_, err = e.Next(e.ctx, g.ID, h, laneFence(gb), ttl)
	require.ErrorIs(t, err, lease.ErrNoWork)

	lanes, err := e.Lanes(e.ctx, group)
	require.NoError(t, err)
	require.Len(t, lanes, 1)
	require.Equal(t, map[lease.State]int64{lease.StateDone: 3}, lanes[0].Ranges)
	require.Equal(t, int64(99+100+100), lanes[0].Headers)
	require.Equal(t, int64(3), lanes[0].RangesDone)

	// The repair range finishes on its own, and is counted in its lane's
	// progress, as a finished range always was.
	_, err = e.Put(e.ctx, rep.Range.ID, fence(rep), batch.Batch{From: 50, To: 50, Headers: 1})
	require.NoError(t, err)
	require.NoError(t, e.Finish(e.ctx, rep.Range.ID, fence(rep)))
	lanes, err = e.Lanes(e.ctx, group)
	require.NoError(t, err)
	require.Equal(t, int64(300), lanes[0].Headers)
	require.Equal(t, int64(4), lanes[0].RangesDone)
	require.Equal(t, map[lease.State]int64{lease.StateDone: 3}, lanes[0].Ranges, "lane counts by state leave repair ranges out")
}

// An expired lane lease is only eligible to be granted again (docs/api.md,
// Fencing): until another grant, its holder goes on writing to its range,
// renews the lane, and finishes.
func testLaneExpiredNotRegranted(t *testing.T, e *env) {
	g := e.group(t, "o", true)
	e.ranges(t, "o", 1, 200, lease.LaneTail)
	h := lease.LaneTail
	ga := e.grantLane(t, "a", h)
	la, err := e.Next(e.ctx, g.ID, h, laneFence(ga), ttl)
	require.NoError(t, err)
	e.clock.Advance(2 * ttl) // the lane and the range lease both expired

	_, err = e.Put(e.ctx, la.Range.ID, fence(la), batch.Batch{From: 1, To: 50, Headers: 50})
	require.NoError(t, err)
	_, err = e.Heartbeat(e.ctx, la.Range.ID, fence(la), ttl)
	require.NoError(t, err)
	_, err = e.Corrupt(e.ctx, la.Range.ID, fence(la), 51, "bad")
	require.NoError(t, err, "corrupt")
	e.clock.Advance(2 * ttl)
	la, err = e.Next(e.ctx, g.ID, h, laneFence(ga), ttl) // granted again under the same lane grant
	require.NoError(t, err)
	require.Equal(t, int64(51), la.Range.Next)
	e.clock.Advance(2 * ttl)
	e.fill(t, la, 50)
	require.NoError(t, e.Finish(e.ctx, la.Range.ID, fence(la)), "finish after the lane expired")
	exp, err := e.HeartbeatLane(e.ctx, g.ID, h, laneFence(ga), ttl)
	require.NoError(t, err)
	require.Equal(t, e.clock.Now().Add(ttl), exp)
	l2, err := e.Next(e.ctx, g.ID, h, laneFence(ga), ttl)
	require.NoError(t, err)
	require.Equal(t, int64(101), l2.Range.Start)
	_, err = e.GrantLane(e.ctx, "b", h, ttl)
	require.ErrorIs(t, err, lease.ErrNoWork, "a renewed lane is not granted")
}

// A lane grant and the old holder's finish of the range race: exactly one
// wins, and neither fails for another reason (a deadlock, say). When the
// finish wins, the new holder goes on with the next range; when the grant
// wins, the finish is refused and the new holder resumes the range.
func testLaneFenceRace(t *testing.T, e *env) {
	const rounds = 30
	g := e.group(t, "o", true)
	e.ranges(t, "o", 1, int64(rounds+1)*100, lease.LaneHistory)
	h := lease.LaneHistory
	l, err := e.Next(e.ctx, g.ID, h, laneFence(e.grantLane(t, "w0", h)), ttl)
	require.NoError(t, err)
	finished := 0
	for i := 1; i <= rounds; i++ {
		e.fill(t, l, 100)
		e.clock.Advance(ttl + time.Second)
		var (
			eg     errgroup.Group
			gl     grouplease.GroupLease
			finErr error
		)
		start := make(chan struct{})
		eg.Go(func() error {
			<-start
			finErr = e.Finish(e.ctx, l.Range.ID, fence(l))
			if finErr != nil && !errors.Is(finErr, edgeindex.ErrLeaseLost) {
				return fmt.Errorf("finish: %w", finErr)
			}
			return nil
		})
		eg.Go(func() error {
			<-start
			var err error
			gl, err = e.GrantLane(e.ctx, fmt.Sprintf("w%d", i), h, ttl)
			if err != nil {
				return fmt.Errorf("grant lane: %w", err)
			}
			return nil
		})
		close(start)
		require.NoError(t, eg.Wait(), "round %d", i)
		next, err := e.Next(e.ctx, g.ID, h, laneFence(gl), ttl)
		require.NoError(t, err, "round %d", i)
		if finErr == nil {
			finished++
			require.Equal(t, l.Range.End+1, next.Range.Start, "round %d: the finish came first", i)
			require.Equal(t, lease.StateDone, e.get(t, l.Range.ID).State)
		} else {
			require.Equal(t, l.Range.ID, next.Range.ID, "round %d: the grant came first", i)
			require.Greater(t, next.Token, l.Token)
			require.NoError(t, e.Finish(e.ctx, next.Range.ID, fence(next)))
			next, err = e.Next(e.ctx, g.ID, h, laneFence(gl), ttl)
			require.NoError(t, err, "round %d", i)
		}
		l = next
	}
	t.Logf("%d of %d finishes came before the lane grant", finished, rounds)
	lanes, err := e.Lanes(e.ctx, "o")
	require.NoError(t, err)
	require.Equal(t, int64(rounds), lanes[0].RangesDone)
	require.Equal(t, int64(rounds*100), lanes[0].Headers)
}
