package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
)

// since is the date the backfill-to-a-date cases plan history back to: in
// the past of the wall clock, which GroupPlan.Check compares it with.
var since = time.Date(2025, 11, 3, 0, 0, 0, 0, time.UTC)

// testBackfillHistoryDate: history starts at the article found for the
// plan's date, clamped to the low watermark; found before the split or
// after the tail's; every article older plans no history.
func testBackfillHistoryDate(t *testing.T, e *env) {
	found := since.Add(90 * time.Second)
	const base = int64(1) << 41 // numbers past 2^40 plan like any other

	// Found before the first split, as the planner does it.
	g := e.plan(t, "g", grouplease.GroupPlan{History: true, HistorySince: since})
	st := e.planOf(t, g.ID)
	require.True(t, since.Equal(st.HistorySince))
	require.Zero(t, st.HistoryFrom, "not searched yet")
	require.NoError(t, e.SetHistoryStart(e.ctx, g.ID, since, grouplease.DatePoint{Article: base + 701, Date: found, Calls: 30}))
	st = e.planOf(t, g.ID)
	require.Equal(t, base+701, st.HistoryFrom)
	require.True(t, found.Equal(st.HistoryFromDate))
	added, err := rangesOf(e.PlanRanges(e.ctx, g.ID, base+1, base+1000))
	require.NoError(t, err)
	require.Equal(t, []lease.Span{{From: base + 701, To: base + 800}, {From: base + 801, To: base + 900}, {From: base + 901, To: base + 1000}},
		spansOf(added), "history starts at the article of the date")
	require.NoError(t, e.SetHistoryStart(e.ctx, g.ID, since, grouplease.DatePoint{Article: base + 5, Date: found}))
	require.Equal(t, base+701, e.planOf(t, g.ID).HistoryFrom, "once history is planned, a late search changes nothing")

	// Not found by the split (a provider that failed the search): the
	// tail goes on, history starts once it is found.
	h := e.plan(t, "h", grouplease.GroupPlan{Tail: true, History: true, HistorySince: since})
	added, err = rangesOf(e.PlanRanges(e.ctx, h.ID, 1, 1000))
	require.NoError(t, err)
	require.Empty(t, added, "history waits for its date; the tail has nothing yet")
	st = e.planOf(t, h.ID)
	require.Equal(t, int64(1001), st.TailNext)
	require.Zero(t, st.HistoryNext)
	require.NoError(t, e.SetHistoryStart(e.ctx, h.ID, since.Add(time.Hour), grouplease.DatePoint{Article: 10, Date: found}))
	require.Zero(t, e.planOf(t, h.ID).HistoryFrom, "a search for another date than the plan's records nothing")
	require.NoError(t, e.SetHistoryStart(e.ctx, h.ID, since, grouplease.DatePoint{Article: 851, Date: found}))
	added, err = rangesOf(e.PlanRanges(e.ctx, h.ID, 1, 1100))
	require.NoError(t, err)
	require.Equal(t, []lease.Span{{From: 1001, To: 1100}, {From: 851, To: 950}, {From: 951, To: 1000}}, spansOf(added),
		"the tail plans on, history from the article found up to the split")
	require.Equal(t, lease.LaneTail, added[0].Lane)
	require.Equal(t, lease.LaneHistory, added[1].Lane)

	// The article found below the low watermark: history starts at low.
	l := e.plan(t, "l", grouplease.GroupPlan{History: true, HistorySince: since})
	require.NoError(t, e.SetHistoryStart(e.ctx, l.ID, since, grouplease.DatePoint{Article: 5, Date: found}))
	added, err = rangesOf(e.PlanRanges(e.ctx, l.ID, 300, 450))
	require.NoError(t, err)
	require.Equal(t, []lease.Span{{From: 300, To: 399}, {From: 400, To: 450}}, spansOf(added))

	// Every article older: the finder says high + 1, and history plans nothing.
	o := e.plan(t, "o", grouplease.GroupPlan{Tail: true, History: true, HistorySince: since})
	require.NoError(t, e.SetHistoryStart(e.ctx, o.ID, since, grouplease.DatePoint{Article: 1001}))
	st = e.planOf(t, o.ID)
	require.Equal(t, int64(1001), st.HistoryFrom)
	require.True(t, st.HistoryFromDate.IsZero())
	added, err = rangesOf(e.PlanRanges(e.ctx, o.ID, 1, 1000))
	require.NoError(t, err)
	require.Empty(t, added)
	added, err = rangesOf(e.PlanRanges(e.ctx, o.ID, 1, 1050))
	require.NoError(t, err)
	require.Equal(t, []lease.Span{{From: 1001, To: 1050}}, spansOf(added), "only the tail plans")
	require.Equal(t, lease.LaneTail, added[0].Lane)
}

// testBackfillHistoryDateReplan: a new date forgets the article found for
// the old one, the same date keeps it, and on a group already split the
// new date takes effect after a reset, as a new article count does.
func testBackfillHistoryDateReplan(t *testing.T, e *env) {
	found := since.Add(time.Minute)
	g := e.plan(t, "g", grouplease.GroupPlan{History: true, HistorySince: since})
	require.NoError(t, e.SetHistoryStart(e.ctx, g.ID, since, grouplease.DatePoint{Article: 400, Date: found}))
	require.NoError(t, e.SetPlan(e.ctx, "g", grouplease.GroupPlan{History: true, Tail: true, HistorySince: since}))
	require.Equal(t, int64(400), e.planOf(t, g.ID).HistoryFrom, "the same date keeps its article")
	later := since.Add(24 * time.Hour)
	require.NoError(t, e.SetPlan(e.ctx, "g", grouplease.GroupPlan{History: true, HistorySince: later}))
	require.Zero(t, e.planOf(t, g.ID).HistoryFrom, "a new date is searched again")
	require.NoError(t, e.SetHistoryStart(e.ctx, g.ID, later, grouplease.DatePoint{Article: 601, Date: later}))
	added, err := rangesOf(e.PlanRanges(e.ctx, g.ID, 1, 800))
	require.NoError(t, err)
	require.Equal(t, []lease.Span{{From: 601, To: 700}, {From: 701, To: 800}}, spansOf(added))

	// A new date on a split group: the cursors are kept until a reset.
	require.NoError(t, e.SetPlan(e.ctx, "g", grouplease.GroupPlan{History: true, HistorySince: since}))
	st := e.planOf(t, g.ID)
	require.Zero(t, st.HistoryFrom)
	require.Equal(t, int64(801), st.HistoryNext)
	require.NoError(t, e.SetHistoryStart(e.ctx, g.ID, since, grouplease.DatePoint{Article: 200, Date: found}))
	require.Zero(t, e.planOf(t, g.ID).HistoryFrom, "history is planned: a search changes nothing before a reset")
	_, err = e.ResetPlan(e.ctx, "g")
	require.NoError(t, err)
	require.NoError(t, e.SetHistoryStart(e.ctx, g.ID, since, grouplease.DatePoint{Article: 200, Date: found}))
	added, err = rangesOf(e.PlanRanges(e.ctx, g.ID, 1, 900))
	require.NoError(t, err)
	require.Equal(t, []lease.Span{{From: 200, To: 299}, {From: 300, To: 399}, {From: 400, To: 499}, {From: 500, To: 599}, {From: 600, To: 600}, {From: 801, To: 900}},
		spansOf(added), "after the reset history starts at the new date's article and fills around the old ranges")
	_, err = e.ResetPlan(e.ctx, "g")
	require.NoError(t, err)
	require.Zero(t, e.planOf(t, g.ID).HistoryFrom, "a reset searches the date again")
}

func testBackfillHistoryDateBadInput(t *testing.T, e *env) {
	g := e.plan(t, "g", grouplease.GroupPlan{History: true, HistorySince: since})
	for _, p := range []grouplease.GroupPlan{
		{History: true, HistoryBack: 10, HistorySince: since},
		{History: true, HistorySince: time.Now().Add(time.Hour)},
		{History: true, HistorySince: time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC)},
	} {
		require.ErrorIs(t, e.SetPlan(e.ctx, "g", p), edgeindex.ErrInvalid, "%+v", p)
	}
	for _, p := range []grouplease.DatePoint{{Article: 0}, {Article: -3}, {Article: grouplease.MaxArticle + 2}} {
		require.ErrorIs(t, e.SetHistoryStart(e.ctx, g.ID, since, p), edgeindex.ErrInvalid, "%+v", p)
	}
	require.ErrorIs(t, e.SetHistoryStart(e.ctx, g.ID, time.Time{}, grouplease.DatePoint{Article: 1}), edgeindex.ErrInvalid)
	require.ErrorIs(t, e.SetHistoryStart(e.ctx, g.ID+1000, since, grouplease.DatePoint{Article: 1}), edgeindex.ErrNotFound)
	e.group(t, "unplanned", false)
	u, err := e.Group(e.ctx, "unplanned")
	require.NoError(t, err)
	require.ErrorIs(t, e.SetHistoryStart(e.ctx, u.ID, since, grouplease.DatePoint{Article: 1}), edgeindex.ErrNotFound)
	st := e.planOf(t, g.ID)
	require.True(t, since.Equal(st.HistorySince), "refused calls change nothing")
	require.Zero(t, st.HistoryFrom)
}
