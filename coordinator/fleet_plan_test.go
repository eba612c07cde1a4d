package coordinator_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/grouplease"
)

// TestFleetPlans: a planned group's watermarks and lag are in the fleet
// status, for dashboards; a group without a plan has none.
func TestFleetPlans(t *testing.T) {
	t.Parallel()
	h := newHarness(t, backends[0].URL(t), nil)
	ctx := t.Context()
	g, err := h.store.AddGroup(ctx, grouplease.Group{Name: "planned", RangeSize: 100})
	require.NoError(t, err)
	_, err = h.store.AddGroup(ctx, grouplease.Group{Name: "plain"})
	require.NoError(t, err)
	require.NoError(t, h.store.SetPlan(ctx, "planned", grouplease.GroupPlan{Tail: true, Margin: 10}))
	_, err = h.store.PlanRanges(ctx, g.ID, 5, 1000)
	require.NoError(t, err)
	_, err = h.store.PlanRanges(ctx, g.ID, 5, 1200)
	require.NoError(t, err)

	r := h.do("GET", "/v1/fleet", adminToken, 0, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var f api.Fleet
	require.NoError(t, json.Unmarshal(r.body, &f))
	plans := map[string]*api.FleetPlan{}
	for _, fg := range f.Groups {
		plans[fg.Name] = fg.Plan
	}
	require.Nil(t, plans["plain"])
	p := plans["planned"]
	require.NotNil(t, p)
	require.True(t, p.Polled)
	require.Equal(t, int64(5), p.Low)
	require.Equal(t, int64(1200), p.High)
	require.Equal(t, int64(1191), p.TailNext)
	require.Equal(t, int64(1200-991+1), p.Lag, "the tail stored nothing from 991")
}

// TestFleetPlanError: the planner's last failure for a group is in its
// plan in the fleet status, with when it happened, and goes when cleared.
func TestFleetPlanError(t *testing.T) {
	t.Parallel()
	h := newHarness(t, backends[0].URL(t), nil)
	ctx := t.Context()
	g, err := h.store.AddGroup(ctx, grouplease.Group{Name: "typo", RangeSize: 100})
	require.NoError(t, err)
	require.NoError(t, h.store.SetPlan(ctx, "typo", grouplease.GroupPlan{Tail: true}))
	at := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	require.NoError(t, h.store.SetPlanError(ctx, g.ID, "411 No such group", at))

	plan := func() *api.FleetPlan {
		r := h.do("GET", "/v1/fleet", adminToken, 0, nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var f api.Fleet
		require.NoError(t, json.Unmarshal(r.body, &f))
		require.Len(t, f.Groups, 1)
		return f.Groups[0].Plan
	}
	p := plan()
	require.Equal(t, "411 No such group", p.Error)
	require.NotNil(t, p.ErrorAt)
	require.True(t, at.Equal(*p.ErrorAt))
	require.NoError(t, h.store.SetPlanError(ctx, g.ID, "", at))
	p = plan()
	require.Empty(t, p.Error)
	require.Nil(t, p.ErrorAt)
}
