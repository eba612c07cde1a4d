package storetest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
)

// groupRemover is a backend that removes groups and plans, as an
// operator undoes a mistyped group (coordinator group rm, group plan
// --plan none).
type groupRemover interface {
	RemoveGroup(ctx context.Context, name string, force bool) (ranges []int64, results int64, err error)
	RemovePlan(ctx context.Context, group string) error
}

func remover(t *testing.T, e *env) groupRemover {
	t.Helper()
	r, ok := e.Backend.(groupRemover)
	if !ok {
		t.Skip("the backend removes no groups")
	}
	return r
}

// reusesIDs reports whether the backend gives a removed row's id to the
// next row added (SQLite): it removes no group that has ranges.
func reusesIDs(e *env) bool {
	b, ok := e.Backend.(interface{ Backend() string })
	return ok && b.Backend() == "sqlite"
}

// testGroupRemoveTypo: a group without ranges, as a mistyped one is, is
// removed on every backend with its plan and the planner's error, and its
// id, the largest, is not given to the group added next.
func testGroupRemoveTypo(t *testing.T, e *env) {
	rm := remover(t, e)
	e.group(t, "kept", false)
	typo := e.plan(t, "alt.binaries.tvv", grouplease.GroupPlan{Tail: true})
	require.NoError(t, e.SetPlanError(e.ctx, typo.ID, "411 No such group", e.clock.Now()))
	ranges, results, err := rm.RemoveGroup(e.ctx, "alt.binaries.tvv", false)
	require.NoError(t, err)
	require.Empty(t, ranges)
	require.Zero(t, results)
	errs, err := e.PlanErrors(e.ctx)
	require.NoError(t, err)
	require.Empty(t, errs)
	right := e.group(t, "alt.binaries.tv", false)
	require.Greater(t, right.ID, typo.ID, "a removed group's id is never handed on")
	_, _, err = rm.RemoveGroup(e.ctx, "alt.binaries.tv", false)
	require.NoError(t, err)
	again := e.group(t, "alt.binaries.tvv", false)
	require.Greater(t, again.ID, right.ID)
}

// testGroupRemove: a group is removed with everything of it, and only
// when nothing of it is leased and it has no results, unless forced. A
// backend that reuses ids removes no group that has ranges, forced or not.
func testGroupRemove(t *testing.T, e *env) {
	rm := remover(t, e)
	if reusesIDs(e) {
		e.group(t, "gone", false)
		gone := e.ranges(t, "gone", 1, 300, lease.LaneHistory)
		_, _, err := rm.RemoveGroup(e.ctx, "gone", true)
		require.ErrorIs(t, err, edgeindex.ErrConflict, "its range ids would be handed on")
		require.ErrorContains(t, err, "SQLite")
		_, err = e.Group(e.ctx, "gone")
		require.NoError(t, err, "nothing was removed")
		require.Equal(t, gone[2], e.get(t, gone[2].ID))
		return
	}
	g := e.group(t, "gone", false)
	gone := e.ranges(t, "gone", 1, 300, lease.LaneHistory)
	require.NoError(t, e.SetPlan(e.ctx, "gone", grouplease.GroupPlan{Tail: true}))
	require.NoError(t, e.SetPlanError(e.ctx, g.ID, "411 No such group", e.clock.Now()))
	e.group(t, "kept", false)
	kept := e.ranges(t, "kept", 1000, 1099, lease.LaneHistory)

	l := e.grant(t, "a")
	require.Equal(t, gone[0].ID, l.Range.ID)
	_, _, err := rm.RemoveGroup(e.ctx, "gone", false)
	require.ErrorIs(t, err, edgeindex.ErrConflict, "a range is leased")
	e.fill(t, l, 100)
	_, _, err = rm.RemoveGroup(e.ctx, "gone", false)
	require.ErrorIs(t, err, edgeindex.ErrConflict, "it has results")

	ranges, results, err := rm.RemoveGroup(e.ctx, "gone", true)
	require.NoError(t, err)
	require.Equal(t, []int64{gone[0].ID, gone[1].ID, gone[2].ID}, ranges)
	require.Equal(t, int64(1), results)
	_, err = e.Group(e.ctx, "gone")
	require.ErrorIs(t, err, edgeindex.ErrNotFound)
	for _, r := range gone {
		_, err := e.Range(e.ctx, r.ID)
		require.ErrorIs(t, err, edgeindex.ErrNotFound)
	}
	plans, err := e.Plans(e.ctx)
	require.NoError(t, err)
	require.Empty(t, plans, "the plan went with it")
	errs, err := e.PlanErrors(e.ctx)
	require.NoError(t, err)
	require.Empty(t, errs, "and the planner's last error")
	lanes, err := e.Lanes(e.ctx, "")
	require.NoError(t, err)
	require.Len(t, lanes, 1)
	require.Equal(t, "kept", lanes[0].Group)
	page, err := e.Results(e.ctx, batch.Query{})
	require.NoError(t, err)
	require.Empty(t, page.Results, "its results went with it")
	require.Equal(t, kept[0], e.get(t, kept[0].ID), "another group's ranges stay")
	_, _, err = rm.RemoveGroup(e.ctx, "gone", false)
	require.ErrorIs(t, err, edgeindex.ErrNotFound)

	// The name is free again, and an expired lease holds nothing.
	e.group(t, "gone", false)
	again := e.ranges(t, "gone", 1, 100, lease.LaneHistory)
	require.Len(t, again, 1)
	l = e.grant(t, "b") // before kept's range, in article order
	require.Equal(t, again[0].ID, l.Range.ID)
	_, _, err = rm.RemoveGroup(e.ctx, "gone", false)
	require.ErrorIs(t, err, edgeindex.ErrConflict)
	e.clock.Advance(2 * ttl)
	ranges, results, err = rm.RemoveGroup(e.ctx, "gone", false)
	require.NoError(t, err, "the lease expired")
	require.Equal(t, []int64{again[0].ID}, ranges)
	require.Zero(t, results)
}

// testGroupRemoveBusy: a leased lane of the group, and a live claim on a
// chunk of one of its ranges (a prefetcher fetching it), each keep an
// unforced removal off, as a leased range does; once the lane's lease
// and the claim expire they hold nothing. Forced, the removal takes them.
func testGroupRemoveBusy(t *testing.T, e *env) {
	rm := remover(t, e)
	if reusesIDs(e) {
		t.Skip("the backend removes no group that has ranges")
	}
	e.group(t, "laned", true)
	e.ranges(t, "laned", 1, 100, lease.LaneTail)
	e.grantLane(t, "a", lease.LaneTail)
	_, _, err := rm.RemoveGroup(e.ctx, "laned", false)
	require.ErrorIs(t, err, edgeindex.ErrConflict, "its lane is leased")

	e.group(t, "claimed", false)
	claimed := e.ranges(t, "claimed", 1, 100, lease.LaneHistory)
	ok, err := e.ClaimChunk(e.ctx, claimed[0].ID, lease.Span{From: 1, To: 50}, "prefetcher", ttl)
	require.NoError(t, err)
	require.True(t, ok)
	_, _, err = rm.RemoveGroup(e.ctx, "claimed", false)
	require.ErrorIs(t, err, edgeindex.ErrConflict, "a chunk of it is being fetched")
	_, err = e.Group(e.ctx, "claimed")
	require.NoError(t, err, "nothing was removed")
	require.Equal(t, claimed[0], e.get(t, claimed[0].ID))

	ranges, _, err := rm.RemoveGroup(e.ctx, "laned", true)
	require.NoError(t, err, "forced")
	require.Len(t, ranges, 1)
	lanes, err := e.Lanes(e.ctx, "")
	require.NoError(t, err)
	for _, ln := range lanes {
		require.NotEqual(t, "laned", ln.Group, "the leased lane went with it")
	}

	e.clock.Advance(2 * ttl)
	ranges, _, err = rm.RemoveGroup(e.ctx, "claimed", false)
	require.NoError(t, err, "the claim expired")
	require.Equal(t, []int64{claimed[0].ID}, ranges)
}

// testGroupRemovePlan: removing a plan stops the planning; the group and
// its ranges stay.
func testGroupRemovePlan(t *testing.T, e *env) {
	rm := remover(t, e)
	g := e.group(t, "g", false)
	rs := e.ranges(t, "g", 1, 100, lease.LaneTail)
	require.NoError(t, e.SetPlan(e.ctx, "g", grouplease.GroupPlan{Tail: true, History: true}))
	require.NoError(t, e.SetPlanError(e.ctx, g.ID, "411 No such group", e.clock.Now()))
	require.NoError(t, rm.RemovePlan(e.ctx, "g"))
	plans, err := e.Plans(e.ctx)
	require.NoError(t, err)
	require.Empty(t, plans)
	errs, err := e.PlanErrors(e.ctx)
	require.NoError(t, err)
	require.Empty(t, errs, "the planner's last error goes with the plan")
	require.Equal(t, rs[0], e.get(t, rs[0].ID))
	_, err = e.Group(e.ctx, "g")
	require.NoError(t, err)
	require.ErrorIs(t, rm.RemovePlan(e.ctx, "g"), edgeindex.ErrNotFound, "no plan left")
	require.ErrorIs(t, rm.RemovePlan(e.ctx, "nosuch"), edgeindex.ErrNotFound)
	require.NoError(t, e.SetPlan(e.ctx, "g", grouplease.GroupPlan{Tail: true}), "a new plan")
}
