package storetest

import (
	"fmt"
	"math"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
)

// The cases below assume the backend's defaults: 256 unfinished ranges
// planned ahead per lane, 3 repair tries, 5 minutes between tries.
const (
	planAhead   = 256
	repairTries = 3
	repairDelay = 5 * time.Minute
)

func (e *env) plan(t *testing.T, name string, p grouplease.GroupPlan) grouplease.Group {
	t.Helper()
	g := e.group(t, name, false)
	require.NoError(t, e.SetPlan(e.ctx, name, p))
	return g
}

func (e *env) planOf(t *testing.T, groupID int64) grouplease.PlanStatus {
	t.Helper()
	plans, err := e.Plans(e.ctx)
	require.NoError(t, err)
	for _, p := range plans {
		if p.GroupID == groupID {
			return p
		}
	}
	t.Fatalf("group %d has no plan", groupID)
	return grouplease.PlanStatus{}
}

// rangesOf is the ranges a PlanRanges call added, and its error.
func rangesOf(p grouplease.Planned, err error) ([]lease.Range, error) { return p.Ranges, err }

func spansOf(rs []lease.Range) []lease.Span {
	out := make([]lease.Span, len(rs))
	for i, r := range rs {
		out[i] = lease.Span{From: r.Start, To: r.End}
	}
	return out
}

func testPlanTailAndHistory(t *testing.T, e *env) {
	g := e.plan(t, "g", grouplease.GroupPlan{Tail: true, History: true, Margin: 10})
	st := e.planOf(t, g.ID)
	require.False(t, st.Polled)
	require.Equal(t, "g", st.Group)

	// The first poll splits the group at high − margin + 1 = 991: the tail
	// has nothing yet, history plans 1..990 in ranges of 100.
	added, err := rangesOf(e.PlanRanges(e.ctx, g.ID, 1, 1000))
	require.NoError(t, err)
	require.Len(t, added, 10)
	for _, r := range added {
		require.Equal(t, lease.LaneHistory, r.Lane)
		require.Equal(t, lease.StatePending, r.State)
		require.Equal(t, r.Start, r.Next)
	}
	require.Equal(t, lease.Span{From: 1, To: 100}, spansOf(added)[0])
	require.Equal(t, lease.Span{From: 901, To: 990}, spansOf(added)[9])
	st = e.planOf(t, g.ID)
	require.True(t, st.Polled)
	require.Equal(t, e.clock.Now(), st.PolledAt)
	require.Equal(t, int64(1), st.Low)
	require.Equal(t, int64(1000), st.High)
	require.Equal(t, int64(991), st.TailNext)
	require.Equal(t, int64(991), st.HistoryNext)
	require.Equal(t, int64(990), st.HistoryEnd)
	require.Equal(t, int64(10), st.Lag, "the margin is not indexed yet")

	// New posts: the tail plans up to high − margin, the last range shorter.
	added, err = rangesOf(e.PlanRanges(e.ctx, g.ID, 1, 1250))
	require.NoError(t, err)
	require.Equal(t, []lease.Span{{From: 991, To: 1090}, {From: 1091, To: 1190}, {From: 1191, To: 1240}}, spansOf(added))
	for _, r := range added {
		require.Equal(t, lease.LaneTail, r.Lane)
	}
	added, err = rangesOf(e.PlanRanges(e.ctx, g.ID, 1, 1250))
	require.NoError(t, err)
	require.Empty(t, added, "a second poll with the same watermarks plans nothing")
	st = e.planOf(t, g.ID)
	require.Equal(t, int64(1241), st.TailNext)
	require.Equal(t, int64(1250-991+1), st.Lag)

	// The tail's first range stored: the lag shrinks by its articles.
	l := e.grant(t, "a")
	require.Equal(t, int64(991), l.Range.Start, "tail ranges are granted first")
	e.fill(t, l, 100)
	require.NoError(t, e.Finish(e.ctx, l.Range.ID, fence(l)))
	require.Equal(t, int64(1250-1091+1), e.planOf(t, g.ID).Lag)

	// The watermark going back (a provider renumbering, a bad poll) plans nothing.
	added, err = rangesOf(e.PlanRanges(e.ctx, g.ID, 1, 500))
	require.NoError(t, err)
	require.Empty(t, added)
}

func testPlanHistoryBack(t *testing.T, e *env) {
	g := e.plan(t, "g", grouplease.GroupPlan{History: true, HistoryBack: 300})
	added, err := rangesOf(e.PlanRanges(e.ctx, g.ID, 1, 5_000_000_000))
	require.NoError(t, err)
	require.Equal(t, []lease.Span{
		{From: 5_000_000_001 - 300, To: 5_000_000_001 - 201},
		{From: 5_000_000_001 - 200, To: 5_000_000_001 - 101},
		{From: 5_000_000_001 - 100, To: 5_000_000_000},
	}, spansOf(added), "article numbers past 2^32 plan like any other")
	added, err = rangesOf(e.PlanRanges(e.ctx, g.ID, 1, 5_000_001_000))
	require.NoError(t, err)
	require.Empty(t, added, "a plan without tail never plans past where history ends")

	// The low watermark rising above the history cursor skips expired articles.
	h := e.plan(t, "h", grouplease.GroupPlan{History: true})
	added, err = rangesOf(e.PlanRanges(e.ctx, h.ID, 0, 0))
	require.NoError(t, err)
	require.Empty(t, added, "an empty group (0 0) plans nothing")
	added, err = rangesOf(e.PlanRanges(e.ctx, h.ID, 1, 0))
	require.NoError(t, err)
	require.Empty(t, added, "an empty group (low = high + 1) plans nothing")
}

func testPlanAroundRanges(t *testing.T, e *env) {
	g := e.plan(t, "g", grouplease.GroupPlan{Tail: true, History: true})
	e.ranges(t, "g", 1, 150, lease.LaneHistory)
	e.ranges(t, "g", 300, 310, lease.LaneTail)
	_, err := e.PlanRanges(e.ctx, g.ID, 1, 400)
	require.NoError(t, err)
	all, err := e.Ranges(e.ctx, grouplease.RangeFilter{Group: "g"})
	require.NoError(t, err)
	spans := spansOf(all)
	sort.Slice(spans, func(i, j int) bool { return spans[i].From < spans[j].From })
	require.Equal(t, []lease.Span{{From: 1, To: 100}, {From: 101, To: 150}, {From: 151, To: 250}, {From: 251, To: 299},
		{From: 300, To: 310}, {From: 311, To: 400}}, spans, "planning fills the gaps between the ranges the group has")
	_, err = e.PlanRanges(e.ctx, g.ID, 1, 401)
	require.NoError(t, err)
	r, err := e.Ranges(e.ctx, grouplease.RangeFilter{Group: "g", After: all[len(all)-1].ID})
	require.NoError(t, err)
	require.Equal(t, []lease.Span{{From: 401, To: 401}}, spansOf(r))
	require.Equal(t, lease.LaneTail, r[0].Lane)
}

func testPlanAhead(t *testing.T, e *env) {
	g := e.plan(t, "g", grouplease.GroupPlan{History: true})
	added, err := rangesOf(e.PlanRanges(e.ctx, g.ID, 1, 100*(planAhead+50)))
	require.NoError(t, err)
	require.Len(t, added, planAhead, "planning stops at the lane's limit of unfinished ranges")
	require.Equal(t, int64(100*planAhead+1), e.planOf(t, g.ID).HistoryNext)
	added, err = rangesOf(e.PlanRanges(e.ctx, g.ID, 1, 100*(planAhead+50)))
	require.NoError(t, err)
	require.Empty(t, added)
	for range 2 {
		l := e.grant(t, "a")
		e.fill(t, l, 1)
		require.NoError(t, e.Finish(e.ctx, l.Range.ID, fence(l)))
	}
	added, err = rangesOf(e.PlanRanges(e.ctx, g.ID, 1, 100*(planAhead+50)))
	require.NoError(t, err)
	require.Equal(t, []lease.Span{{From: 100*planAhead + 1, To: 100*planAhead + 100}, {From: 100*planAhead + 101, To: 100*planAhead + 200}},
		spansOf(added), "finished ranges make room for more, from the cursor")
}

// A group of 10^9 articles costs the database what planning keeps ahead,
// however often it is planned: at most planAhead unfinished ranges in each
// lane (issue 21), not a row per range of the group.
func testPlanBillion(t *testing.T, e *env) {
	g := e.plan(t, "g", grouplease.GroupPlan{Tail: true, History: true})
	const high = 1_000_000_000
	for range 3 { // the first reply, then its confirmations
		_, err := e.PlanRanges(e.ctx, g.ID, 1, high)
		require.NoError(t, err)
	}
	rs, err := e.Ranges(e.ctx, grouplease.RangeFilter{Group: "g", Limit: 10 * planAhead})
	require.NoError(t, err)
	lanes := map[lease.Lane]int{}
	for _, r := range rs {
		lanes[r.Lane]++
	}
	require.Equal(t, planAhead, lanes[lease.LaneHistory], "history keeps planAhead ranges ahead")
	require.LessOrEqual(t, lanes[lease.LaneTail], planAhead)
	require.LessOrEqual(t, len(rs), 2*planAhead, "no more rows than the two lanes' limits")
	st := e.planOf(t, g.ID)
	require.Equal(t, int64(high), st.High, "the billion is trusted")
	require.LessOrEqual(t, st.HistoryNext, int64(100*planAhead+1), "the rest of the history waits for room, not planned")
}

func testPlanBadInput(t *testing.T, e *env) {
	e.group(t, "g", false)
	for _, p := range []grouplease.GroupPlan{{}, {Tail: true, Margin: -1}, {History: true, HistoryBack: -5}} {
		require.ErrorIs(t, e.SetPlan(e.ctx, "g", p), edgeindex.ErrInvalid, "%+v", p)
	}
	require.ErrorIs(t, e.SetPlan(e.ctx, "nope", grouplease.GroupPlan{Tail: true}), edgeindex.ErrNotFound)
	g, err := e.Group(e.ctx, "g")
	require.NoError(t, err)
	_, err = e.PlanRanges(e.ctx, g.ID, 1, 100)
	require.ErrorIs(t, err, edgeindex.ErrNotFound, "a group without a plan")
	_, err = e.PlanRanges(e.ctx, g.ID+1000, 1, 100)
	require.ErrorIs(t, err, edgeindex.ErrNotFound, "no such group")
	require.NoError(t, e.SetPlan(e.ctx, "g", grouplease.GroupPlan{Tail: true}))
	for _, w := range [][2]int64{{-1, 100}, {1, -5}, {1, math.MaxInt64}, {math.MaxInt64, math.MaxInt64}} {
		_, err = e.PlanRanges(e.ctx, g.ID, w[0], w[1])
		require.ErrorIs(t, err, edgeindex.ErrInvalid, "a provider's garbage watermarks %v", w)
	}
	// A range size near int64's end plans one range, not an overflow.
	huge, err := e.AddGroup(e.ctx, grouplease.Group{Name: "huge", RangeSize: math.MaxInt64})
	require.NoError(t, err)
	require.NoError(t, e.SetPlan(e.ctx, "huge", grouplease.GroupPlan{History: true}))
	added, err := rangesOf(e.PlanRanges(e.ctx, huge.ID, 1, grouplease.MaxArticle))
	require.NoError(t, err)
	require.Equal(t, []lease.Span{{From: 1, To: grouplease.MaxArticle}}, spansOf(added))
	all, err := e.Ranges(e.ctx, grouplease.RangeFilter{Group: "g"})
	require.NoError(t, err)
	require.Empty(t, all, "refused calls plan nothing")
}

// testPlanConcurrent has planners race on one group, as coordinators that
// share a database do: no article is planned twice.
func testPlanConcurrent(t *testing.T, e *env) {
	g := e.plan(t, "g", grouplease.GroupPlan{Tail: true, History: true, Margin: 5})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 8 {
		wg.Go(func() {
			for i := range 8 {
				if _, err := e.PlanRanges(e.ctx, g.ID, 1, int64(1000+137*i+w)); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	all, err := e.Ranges(e.ctx, grouplease.RangeFilter{Group: "g", Limit: 10000})
	require.NoError(t, err)
	spans := spansOf(all)
	sort.Slice(spans, func(i, j int) bool { return spans[i].From < spans[j].From })
	next := int64(1)
	for _, s := range spans {
		require.Equal(t, next, s.From, "ranges tile the group with no overlap and no hole: %v", spans)
		next = s.To + 1
	}
	require.Equal(t, e.planOf(t, g.ID).TailNext, next)
}

// missing stores one batch over the whole lease with the missing articles.
func (e *env) putMissing(t *testing.T, l lease.Lease, missing ...int64) {
	t.Helper()
	r := e.get(t, l.Range.ID)
	_, err := e.Put(e.ctx, r.ID, fence(l), batch.Batch{From: r.Next, To: r.End, Headers: r.End - r.Next + 1 - int64(len(missing)),
		Items: items(fmt.Sprintf("k%d-%d", r.ID, r.Next)), Missing: missing})
	require.NoError(t, err)
	require.NoError(t, e.Finish(e.ctx, r.ID, fence(l)))
}

func testRepair(t *testing.T, e *env) {
	g := e.plan(t, "g", grouplease.GroupPlan{History: true})
	e.ranges(t, "g", 1, 20, lease.LaneHistory)
	l := e.grant(t, "a")
	e.putMissing(t, l, 3, 4, 5, 8, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20)
	require.Equal(t, grouplease.Missing{Waiting: 14}, e.planOf(t, g.ID).Missing)

	added, err := e.PlanRepairs(e.ctx)
	require.NoError(t, err)
	require.Empty(t, added, "missing articles wait before they are fetched again")
	e.clock.Advance(repairDelay)
	added, err = e.PlanRepairs(e.ctx)
	require.NoError(t, err)
	require.Equal(t, []lease.Span{{From: 3, To: 5}, {From: 8, To: 8}, {From: 11, To: 20}}, spansOf(added),
		"runs of consecutive missing articles, a chunk (10) at most each")
	for _, r := range added {
		require.True(t, r.Repair)
		require.Equal(t, lease.LaneHistory, r.Lane)
	}
	again, err := e.PlanRepairs(e.ctx)
	require.NoError(t, err)
	require.Empty(t, again, "articles in a repair range are not planned twice")
	require.Equal(t, grouplease.Missing{Repairing: 14}, e.planOf(t, g.ID).Missing)

	// Repair ranges go through the same lease, batch and finish path.
	got := map[int64]lease.Lease{}
	for range 3 {
		l := e.grant(t, "a")
		require.True(t, l.Range.Repair)
		got[l.Range.Start] = l
	}
	_, err = e.Grant(e.ctx, "a", ttl)
	require.ErrorIs(t, err, lease.ErrNoWork)
	e.putMissing(t, got[3], 4)   // 3 and 5 arrived
	e.putMissing(t, got[8])      // 8 arrived
	e.putMissing(t, got[11], 20) // one missing again
	require.Equal(t, grouplease.Missing{Waiting: 2, Repaired: 12}, e.planOf(t, g.ID).Missing)

	// Articles that never come are tried RepairTries times, then counted lost.
	for try := 2; try <= repairTries; try++ {
		e.clock.Advance(repairDelay)
		added, err := e.PlanRepairs(e.ctx)
		require.NoError(t, err)
		require.Equal(t, []lease.Span{{From: 4, To: 4}, {From: 20, To: 20}}, spansOf(added))
		for range added {
			l := e.grant(t, "a")
			e.putMissing(t, l, l.Range.Start)
		}
	}
	require.Equal(t, grouplease.Missing{Repaired: 12, Lost: 2}, e.planOf(t, g.ID).Missing)
	e.clock.Advance(repairDelay)
	added, err = e.PlanRepairs(e.ctx)
	require.NoError(t, err)
	require.Empty(t, added, "lost articles are not retried forever")
}

func testRepairOrderedAndExpired(t *testing.T, e *env) {
	g := e.group(t, "o", true)
	require.NoError(t, e.SetPlan(e.ctx, "o", grouplease.GroupPlan{History: true}))
	e.ranges(t, "o", 1, 200, lease.LaneHistory)
	gl := e.grantLane(t, "a", lease.LaneHistory)
	l, err := e.Next(e.ctx, g.ID, lease.LaneHistory, laneFence(gl), ttl)
	require.NoError(t, err)
	e.putMissing(t, l, 7, 50)
	e.clock.Advance(repairDelay)
	// The provider expired article 7 meanwhile: it is lost, not repaired.
	_, err = e.PlanRanges(e.ctx, g.ID, 10, 200)
	require.NoError(t, err)
	added, err := e.PlanRepairs(e.ctx)
	require.NoError(t, err)
	require.Equal(t, []lease.Span{{From: 50, To: 50}}, spansOf(added))
	require.Equal(t, grouplease.Missing{Repairing: 1, Lost: 1}, e.planOf(t, g.ID).Missing)

	// A repair range of an ordered group is granted like an unordered one,
	// and never stands in the lane's order.
	r := e.grant(t, "b")
	require.True(t, r.Range.Repair)
	require.Equal(t, int64(50), r.Range.Start)
	next, err := e.Next(e.ctx, g.ID, lease.LaneHistory, laneFence(gl), ttl)
	require.NoError(t, err)
	require.Equal(t, int64(101), next.Range.Start, "the lane goes on past the repair range")
	lanes, err := e.Lanes(e.ctx, "o")
	require.NoError(t, err)
	require.Equal(t, map[lease.State]int64{lease.StateDone: 1, lease.StateLeased: 1}, lanes[0].Ranges, "lane counts leave repair ranges out")

	// A stale holder's batch on a repair range changes nothing.
	_, err = e.Put(e.ctx, r.Range.ID, lease.Fence{Node: "b", Token: r.Token + 1}, batch.Batch{From: 50, To: 50})
	require.ErrorIs(t, err, edgeindex.ErrLeaseLost)
	require.Equal(t, grouplease.Missing{Repairing: 1, Lost: 1}, e.planOf(t, g.ID).Missing)

	// A repair range that fails counts one try.
	for i := 0; ; i++ {
		rg, err := e.Corrupt(e.ctx, r.Range.ID, fence(r), 50, "bad")
		require.NoError(t, err)
		if rg.State == lease.StateFailed {
			break
		}
		e.clock.Advance(retryWait)
		r = e.grant(t, "b")
	}
	e.clock.Advance(repairDelay)
	added, err = e.PlanRepairs(e.ctx)
	require.NoError(t, err)
	require.Equal(t, []lease.Span{{From: 50, To: 50}}, spansOf(added), "the article is tried again")
}

func testMissingBadInput(t *testing.T, e *env) {
	g := e.plan(t, "g", grouplease.GroupPlan{History: true})
	e.ranges(t, "g", 1, 20, lease.LaneHistory)
	l := e.grant(t, "a")
	for _, m := range [][]int64{{0}, {21}, {5, 5}, {6, 5}, {1, 3, 2}} {
		_, err := e.Put(e.ctx, l.Range.ID, fence(l), batch.Batch{From: 1, To: 20, Missing: m})
		require.ErrorIs(t, err, batch.ErrMalformed, "%v", m)
	}
	require.Equal(t, int64(1), e.get(t, l.Range.ID).Next, "a refused batch stores nothing")
	require.Equal(t, grouplease.Missing{}, e.planOf(t, g.ID).Missing)
}
