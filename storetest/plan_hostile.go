package storetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
)

// The cases below are a provider's odd GROUP replies (issue 17): one reply
// must not move a cursor for good, expire articles or plan past the real
// end. The groups have ranges of 100, so the default bound on a high's
// jump is 10 × 100 × planAhead.
const highJump = 10 * 100 * planAhead

// poll is one PlanRanges call that must succeed.
func (e *env) poll(t *testing.T, groupID, low, high int64) grouplease.Planned {
	t.Helper()
	p, err := e.PlanRanges(e.ctx, groupID, low, high)
	require.NoError(t, err, "watermarks %d..%d", low, high)
	return p
}

// repairs runs a repair pass (which counts expired articles lost) and
// returns the group's missing counts.
func (e *env) repairs(t *testing.T, groupID int64) grouplease.Missing {
	t.Helper()
	_, err := e.PlanRepairs(e.ctx)
	require.NoError(t, err)
	return e.planOf(t, groupID).Missing
}

// waitingMissing stores the first granted range with the given offsets
// from its start missing, and returns their numbers.
func (e *env) waitingMissing(t *testing.T, offsets ...int64) []int64 {
	t.Helper()
	l := e.grant(t, "a")
	nums := make([]int64, len(offsets))
	for i, o := range offsets {
		nums[i] = l.Range.Start + o
	}
	e.putMissing(t, l, nums...)
	return nums
}

// maxEnd is the highest article any range of the group covers.
func (e *env) maxEnd(t *testing.T, group string) int64 {
	t.Helper()
	all, err := e.Ranges(e.ctx, grouplease.RangeFilter{Group: group, Limit: 10_000})
	require.NoError(t, err)
	end := int64(0)
	for _, r := range all {
		end = max(end, r.End)
	}
	return end
}

// testPlanEmptyReply: one empty group's reply (RFC 3977's low > high) moves
// no cursor, expires no missing article, keeps the lag, and the group is
// planned on when it answers normally again.
func testPlanEmptyReply(t *testing.T, e *env) {
	g := e.plan(t, "g", grouplease.GroupPlan{Tail: true, History: true})
	require.Len(t, e.poll(t, g.ID, 1, 1000).Ranges, 10, "history 1..1000")
	require.Len(t, e.poll(t, g.ID, 1, 2000).Ranges, 10, "the tail 1001..2000")
	e.waitingMissing(t, 4, 9, 49) // in the tail's first range, granted first
	require.Equal(t, grouplease.Missing{Waiting: 3}, e.repairs(t, g.ID))
	before := e.planOf(t, g.ID)
	require.Equal(t, int64(2001), before.TailNext)
	require.Equal(t, int64(1001), before.HistoryNext)
	require.Equal(t, int64(2000-1101+1), before.Lag)

	p := e.poll(t, g.ID, 500000, 499999)
	require.Empty(t, p.Ranges)
	require.Equal(t, grouplease.Missing{Waiting: 3}, e.repairs(t, g.ID), "nothing expires on one reply")
	st := e.planOf(t, g.ID)
	require.Equal(t, int64(1), st.Low)
	require.Equal(t, int64(2000), st.High)
	require.Equal(t, before.TailNext, st.TailNext)
	require.Equal(t, before.HistoryNext, st.HistoryNext)
	require.Equal(t, before.HistoryEnd, st.HistoryEnd)
	require.Equal(t, before.Lag, st.Lag, "the lag still counts what is not stored")
	require.Equal(t, &grouplease.Watermarks{Low: 500000, High: 499999}, p.Held)
	require.Equal(t, grouplease.Watermarks{Low: 1, High: 2000}, p.Trusted)
	require.Equal(t, &grouplease.Watermarks{Low: 500000, High: 499999}, st.Held, "status shows the reply held back")

	// The group answers normally again: 2001..4000 are planned.
	p = e.poll(t, g.ID, 1, 4000)
	require.Nil(t, p.Held)
	require.Equal(t, []lease.Span{{From: 2001, To: 2100}}, spansOf(p.Ranges[:1]))
	require.Len(t, p.Ranges, 20)
	st = e.planOf(t, g.ID)
	require.Nil(t, st.Held)
	require.Equal(t, int64(4001), st.TailNext)
	require.Equal(t, int64(4000-1101+1), st.Lag)
	require.Equal(t, grouplease.Missing{Waiting: 3}, e.repairs(t, g.ID))

	// Empty and normal replies in turn never confirm each other.
	for range 3 {
		require.NotNil(t, e.poll(t, g.ID, 500000, 499999).Held)
		require.Nil(t, e.poll(t, g.ID, 1, 4000).Held)
	}
	// The other empty forms, "1 0" and "0 0 0", move nothing either, and
	// are held back: they do not match the articles known.
	for _, w := range []grouplease.Watermarks{{Low: 1, High: 0}, {Low: 0, High: 0}, {Low: 0, High: 0}} {
		p := e.poll(t, g.ID, w.Low, w.High)
		require.Empty(t, p.Ranges)
		require.Equal(t, &w, p.Held)
		st = e.planOf(t, g.ID)
		require.Equal(t, int64(4001), st.TailNext)
		require.Equal(t, int64(1), st.Low, "an empty group's reply never lowers the low")
		require.Equal(t, int64(4000), st.High, "an empty group's reply never moves the high")
		require.Equal(t, int64(4000-1101+1), st.Lag)
		require.Equal(t, grouplease.Missing{Waiting: 3}, e.repairs(t, g.ID))
	}
	require.Nil(t, e.poll(t, g.ID, 1, 4000).Held)
}

// testPlanEmptyFirstReply: an empty group's reply on the first poll sets
// no cursor; the first poll that reports articles splits the group.
func testPlanEmptyFirstReply(t *testing.T, e *env) {
	g := e.plan(t, "g", grouplease.GroupPlan{Tail: true, History: true})
	var held []grouplease.Planned
	for range 2 {
		p := e.poll(t, g.ID, 500000, 499999)
		require.Empty(t, p.Ranges)
		held = append(held, p)
	}
	st := e.planOf(t, g.ID)
	require.False(t, st.Polled, "no reply trusted yet")
	require.Equal(t, e.clock.Now(), st.PolledAt, "but polled")
	require.Zero(t, st.TailNext, "no split yet")
	require.Zero(t, st.Lag)
	for _, p := range held {
		require.Equal(t, &grouplease.Watermarks{Low: 500000, High: 499999}, p.Held)
		require.Zero(t, p.Trusted)
	}
	require.Equal(t, &grouplease.Watermarks{Low: 500000, High: 499999}, st.Held)

	p := e.poll(t, g.ID, 1, 300)
	require.Nil(t, p.Held)
	require.Equal(t, []lease.Span{{From: 1, To: 100}, {From: 101, To: 200}, {From: 201, To: 300}}, spansOf(p.Ranges))
	st = e.planOf(t, g.ID)
	require.Nil(t, st.Held)
	require.True(t, st.Polled)
	require.Equal(t, int64(301), st.TailNext)
}

// testPlanLowConfirmed: a low that rises counts once a second poll
// confirms it, as far as both polls agree; one that falls counts at once.
func testPlanLowConfirmed(t *testing.T, e *env) {
	g := e.plan(t, "g", grouplease.GroupPlan{Tail: true, History: true})
	e.poll(t, g.ID, 1, 1000)
	missing := e.waitingMissing(t, 9, 19, 29) // 10, 20, 30 in history's 1..100
	require.Equal(t, []int64{10, 20, 30}, missing)

	// Up, then back: nothing expires.
	var held []bool
	for _, low := range []int64{25, 1, 25} {
		p := e.poll(t, g.ID, low, 1000)
		require.Equal(t, grouplease.Missing{Waiting: 3}, e.repairs(t, g.ID), "low %d", low)
		require.Equal(t, int64(1), e.planOf(t, g.ID).Low)
		held = append(held, p.Held != nil)
	}
	require.Equal(t, []bool{true, false, true}, held)

	// Two polls in a row above 15: the lesser of them, 15, is trusted.
	p := e.poll(t, g.ID, 15, 1000)
	require.Nil(t, p.Held, "a low below the previous reply's is confirmed whole")
	require.Equal(t, grouplease.Watermarks{Low: 15, High: 1000}, p.Trusted)
	require.Equal(t, grouplease.Missing{Waiting: 2, Lost: 1}, e.repairs(t, g.ID), "10 expired")

	// A low rising every poll is trusted one poll behind.
	require.Equal(t, int64(15), e.poll(t, g.ID, 22, 1000).Trusted.Low)
	require.Equal(t, int64(22), e.poll(t, g.ID, 40, 1000).Trusted.Low)
	require.Equal(t, grouplease.Missing{Waiting: 1, Lost: 2}, e.repairs(t, g.ID), "20 expired, 30 waits")
	require.Equal(t, &grouplease.Watermarks{Low: 40, High: 1000}, e.planOf(t, g.ID).Held)

	// A falling low is trusted at once, and expires nothing.
	p = e.poll(t, g.ID, 5, 1000)
	require.Nil(t, p.Held)
	require.Equal(t, int64(5), e.planOf(t, g.ID).Low)
	require.Equal(t, grouplease.Missing{Waiting: 1, Lost: 2}, e.repairs(t, g.ID))

	// An empty group confirmed by two polls: articles below its low
	// expired, and the cursors move up to it.
	e.poll(t, g.ID, 5000, 4999)
	require.Equal(t, int64(1001), e.planOf(t, g.ID).TailNext)
	p = e.poll(t, g.ID, 5000, 4999)
	require.Equal(t, int64(5000), p.Trusted.Low)
	st := e.planOf(t, g.ID)
	require.Nil(t, st.Held, "confirmed: the empty group's high means nothing")
	require.Equal(t, int64(5000), st.TailNext)
	require.Equal(t, int64(5000), st.Low)
	require.Equal(t, int64(1000), st.High)
	require.Zero(t, st.Lag)
	require.Equal(t, grouplease.Missing{Lost: 3}, e.repairs(t, g.ID))
	p = e.poll(t, g.ID, 5000, 5150)
	require.Equal(t, []lease.Span{{From: 5000, To: 5099}, {From: 5100, To: 5150}}, spansOf(p.Ranges))
}

// testPlanHighJump: a high far past the trusted one plans nothing until a
// second poll confirms it; a confirmed one plans at most planAhead ranges.
func testPlanHighJump(t *testing.T, e *env) {
	g := e.plan(t, "g", grouplease.GroupPlan{Tail: true})
	e.poll(t, g.ID, 1, 1000)
	p := e.poll(t, g.ID, 1, grouplease.MaxArticle)
	require.Zero(t, len(p.Ranges), "one reply of 2^62 plans nothing past the real end")
	require.Equal(t, &grouplease.Watermarks{Low: 1, High: grouplease.MaxArticle}, p.Held)
	require.Equal(t, int64(1000), p.Trusted.High)
	st := e.planOf(t, g.ID)
	require.Equal(t, int64(1000), st.High)
	require.Equal(t, int64(1001), st.TailNext)
	require.Equal(t, &grouplease.Watermarks{Low: 1, High: grouplease.MaxArticle}, st.Held)

	// Back to normal: the tail goes on from the real end.
	p = e.poll(t, g.ID, 1, 1100)
	require.Nil(t, p.Held)
	require.Equal(t, []lease.Span{{From: 1001, To: 1100}}, spansOf(p.Ranges))

	// A jump within the bound is trusted at once; one past it is held.
	p = e.poll(t, g.ID, 1, 1100+highJump)
	require.Nil(t, p.Held)
	require.Equal(t, int64(1100+highJump), p.Trusted.High)
	open := 1 + len(p.Ranges)
	require.Equal(t, planAhead, open, "planning stops at the lane's limit")
	tailNext := e.planOf(t, g.ID).TailNext
	p = e.poll(t, g.ID, 1, 1100+2*highJump+1)
	require.NotNil(t, p.Held)
	require.Equal(t, int64(1100+highJump), p.Trusted.High)

	// Huge highs in turn with normal ones are never trusted.
	for range 3 {
		require.NotNil(t, e.poll(t, g.ID, 1, grouplease.MaxArticle).Held)
		require.Nil(t, e.poll(t, g.ID, 1, 1100+highJump).Held)
	}
	require.Equal(t, tailNext, e.planOf(t, g.ID).TailNext)
	require.Equal(t, int64(1000+100*planAhead), e.maxEnd(t, "g"), "nothing planned past the highs trusted")
}

// testPlanHighConfirmed: a huge high that the next poll confirms (within
// the jump bound of it) is trusted, as far as both polls agree, and
// planning past it still stops at planAhead unfinished ranges.
func testPlanHighConfirmed(t *testing.T, e *env) {
	g := e.plan(t, "g", grouplease.GroupPlan{Tail: true})
	e.poll(t, g.ID, 1, 1000)
	require.NotNil(t, e.poll(t, g.ID, 1, grouplease.MaxArticle).Held)
	require.NotNil(t, e.poll(t, g.ID, 1, 5_000_000).Held, "two odd highs that differ confirm nothing")
	p := e.poll(t, g.ID, 1, 5_000_000)
	require.Nil(t, p.Held, "two polls agree on 5,000,000")
	require.Equal(t, int64(5_000_000), p.Trusted.High)
	require.Len(t, p.Ranges, planAhead)
	require.Equal(t, int64(1001+100*planAhead-1), e.maxEnd(t, "g"))

	h := e.plan(t, "h", grouplease.GroupPlan{Tail: true})
	e.poll(t, h.ID, 1, 1000)
	require.Empty(t, e.poll(t, h.ID, 1, grouplease.MaxArticle).Ranges)
	p = e.poll(t, h.ID, 1, grouplease.MaxArticle)
	require.Nil(t, p.Held)
	require.Equal(t, grouplease.MaxArticle, p.Trusted.High)
	require.Len(t, p.Ranges, planAhead, "a confirmed 2^62 plans planAhead ranges ahead, no more")
	require.Empty(t, e.poll(t, h.ID, 1, grouplease.MaxArticle).Ranges)
	require.Equal(t, int64(1000+100*planAhead), e.maxEnd(t, "h"))

	// A high that falls is trusted at once and moves no cursor back.
	p = e.poll(t, h.ID, 1, 1200)
	require.Nil(t, p.Held)
	st := e.planOf(t, h.ID)
	require.Equal(t, int64(1200), st.High)
	require.Equal(t, int64(1001+100*planAhead), st.TailNext)

	// An empty reply between two huge ones confirms neither.
	require.NotNil(t, e.poll(t, h.ID, 1, grouplease.MaxArticle).Held)
	require.NotNil(t, e.poll(t, h.ID, 300000, 299999).Held)
	require.NotNil(t, e.poll(t, h.ID, 1, grouplease.MaxArticle).Held)
	require.Equal(t, int64(1200), e.planOf(t, h.ID).High)
}

// testPlanReset: a reset clears the cursors, the next poll that agrees
// with the watermarks trusted before it splits the group again and plans
// every article no range covers, and the articles counted lost by expiry
// wait for a repair again.
func testPlanReset(t *testing.T, e *env) {
	g := e.plan(t, "g", grouplease.GroupPlan{Tail: true, History: true})
	e.poll(t, g.ID, 1, 1000)
	e.waitingMissing(t, 9, 19) // 10, 20 in history's 1..100
	// The provider says twice that the group is empty above 500000, then
	// comes back renumbered as before: the tail waits far ahead.
	e.poll(t, g.ID, 500000, 499999)
	e.poll(t, g.ID, 500000, 499999)
	require.Equal(t, grouplease.Missing{Lost: 2}, e.repairs(t, g.ID))
	require.Empty(t, e.poll(t, g.ID, 1, 2000).Ranges)
	require.Equal(t, int64(500000), e.planOf(t, g.ID).TailNext)

	revived, err := e.ResetPlan(e.ctx, "g")
	require.NoError(t, err)
	require.Equal(t, int64(2), revived)
	st := e.planOf(t, g.ID)
	require.False(t, st.Polled)
	require.Zero(t, st.TailNext)
	require.Zero(t, st.HistoryNext)
	require.Equal(t, &grouplease.Watermarks{Low: 1, High: 2000}, st.Held,
		"the watermarks trusted before the reset wait as the previous reply, for the next one to agree with")
	require.Equal(t, grouplease.Missing{Waiting: 2}, st.Missing)
	require.Equal(t, grouplease.GroupPlan{Tail: true, History: true}, st.GroupPlan, "the plan is kept")

	p := e.poll(t, g.ID, 1, 2000)
	require.Len(t, p.Ranges, 10)
	require.Equal(t, lease.Span{From: 1001, To: 1100}, spansOf(p.Ranges)[0], "history plans what no range covers")
	require.Equal(t, lease.LaneHistory, p.Ranges[0].Lane)
	st = e.planOf(t, g.ID)
	require.Equal(t, int64(2001), st.TailNext)
	require.Equal(t, int64(2001), st.HistoryNext)
	require.Zero(t, st.Lag)
	e.clock.Advance(repairDelay)
	added, err := e.PlanRepairs(e.ctx)
	require.NoError(t, err)
	require.Equal(t, []lease.Span{{From: 10, To: 10}, {From: 20, To: 20}}, spansOf(added), "the revived articles are fetched again")

	// An article lost after its last try stays lost.
	for try := 1; try <= repairTries; try++ {
		for range 2 {
			l := e.grant(t, "a")
			require.True(t, l.Range.Repair)
			e.putMissing(t, l, l.Range.Start)
		}
		e.clock.Advance(repairDelay)
		_, err := e.PlanRepairs(e.ctx)
		require.NoError(t, err)
	}
	require.Equal(t, grouplease.Missing{Lost: 2}, e.planOf(t, g.ID).Missing)
	revived, err = e.ResetPlan(e.ctx, "g")
	require.NoError(t, err)
	require.Zero(t, revived)
	require.Equal(t, grouplease.Missing{Lost: 2}, e.planOf(t, g.ID).Missing)

	_, err = e.ResetPlan(e.ctx, "nope")
	require.ErrorIs(t, err, edgeindex.ErrNotFound)
	e.group(t, "unplanned", false)
	_, err = e.ResetPlan(e.ctx, "unplanned")
	require.ErrorIs(t, err, edgeindex.ErrNotFound)
}
