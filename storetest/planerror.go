package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/grouplease"
)

// testPlanErrors: the planner's last failure for a group is recorded, read
// back, replaced and cleared; a group without a plan records nothing, and
// a message over the bound is refused and changes nothing.
func testPlanErrors(t *testing.T, e *env) {
	g := e.plan(t, "g", grouplease.GroupPlan{Tail: true})
	h := e.plan(t, "h", grouplease.GroupPlan{Tail: true})
	bare := e.group(t, "unplanned", false)
	at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)

	got, err := e.PlanErrors(e.ctx)
	require.NoError(t, err)
	require.Empty(t, got)

	require.NoError(t, e.SetPlanError(e.ctx, g.ID, "411 No such group", at))
	require.NoError(t, e.SetPlanError(e.ctx, h.ID, "first", at))
	require.NoError(t, e.SetPlanError(e.ctx, h.ID, "second", at.Add(time.Minute)))
	require.NoError(t, e.SetPlanError(e.ctx, bare.ID, "no plan", at), "a plan removed while polled")
	got, err = e.PlanErrors(e.ctx)
	require.NoError(t, err)
	require.Equal(t, map[int64]grouplease.PlanError{
		g.ID: {Message: "411 No such group", At: at},
		h.ID: {Message: "second", At: at.Add(time.Minute)},
	}, got, "the last failure of each planned group, to the microsecond")

	err = e.SetPlanError(e.ctx, g.ID, strings.Repeat("x", grouplease.MaxPlanError+1), at)
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
	require.NoError(t, e.SetPlanError(e.ctx, h.ID, "", at), "an empty message clears")
	require.NoError(t, e.SetPlanError(e.ctx, h.ID, "", at), "clearing twice is no error")
	got, err = e.PlanErrors(e.ctx)
	require.NoError(t, err)
	require.Equal(t, map[int64]grouplease.PlanError{g.ID: {Message: "411 No such group", At: at}}, got)
}
