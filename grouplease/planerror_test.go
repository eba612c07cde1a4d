package grouplease_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/grouplease"
)

// failing is a provider that answers each group with the error set for it,
// or with watermarks 1..250.
type failing struct {
	mu  sync.Mutex
	err map[string]error
}

func (f *failing) set(group string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err[group] = err
}

func (f *failing) Watermarks(_ context.Context, group string) (int64, int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.err[group]; err != nil {
		return 0, 0, err
	}
	return 1, 250, nil
}

// TestPlannerRecordsErrors: a group the provider fails for has the failure
// recorded with the planner's clock, for status and the fleet; the other
// groups have none; a pass that polls the group cleanly clears it. A
// hostile provider's text is recorded on one line and bounded.
func TestPlannerRecordsErrors(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := openStore(t)
	ids := map[string]int64{}
	for _, name := range []string{"g", "typo", "evil"} {
		g, err := st.AddGroup(ctx, grouplease.Group{Name: name, RangeSize: 100})
		require.NoError(t, err)
		require.NoError(t, st.SetPlan(ctx, name, grouplease.GroupPlan{Tail: true}))
		ids[name] = g.ID
	}
	src := &failing{err: map[string]error{}}
	src.set("typo", errors.New("GROUP typo: 411 No such group"))
	src.set("evil", errors.New("500 \u202e\u2028"+strings.Repeat("\x1b[2J\r\n☠", 4000)))
	clk := clock.NewManual(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	p, err := grouplease.NewPlanner(grouplease.PlannerConfig{Store: st, Source: src, Clock: clk})
	require.NoError(t, err)

	_, err = p.Pass(ctx)
	require.ErrorContains(t, err, "411 No such group")
	got, err := st.PlanErrors(ctx)
	require.NoError(t, err)
	require.Len(t, got, 2, "only the failing groups: %v", got)
	require.Equal(t, grouplease.PlanError{Message: "GROUP typo: 411 No such group", At: clk.Now()}, got[ids["typo"]])
	evil := got[ids["evil"]].Message
	require.LessOrEqual(t, len(evil), grouplease.MaxPlanError)
	require.True(t, utf8.ValidString(evil) && strings.HasSuffix(evil, "…"), "cut at a rune: %q", evil)
	require.NotContains(t, evil, "\n")
	require.NotContains(t, evil, "\x1b")
	require.NotContains(t, evil, "\u202e", "no bidi override")
	require.NotContains(t, evil, "\u2028", "no line separator")

	clk.Advance(time.Minute)
	src.set("typo", nil)
	_, err = p.Pass(ctx)
	require.Error(t, err, "evil still fails")
	got, err = st.PlanErrors(ctx)
	require.NoError(t, err)
	require.NotContains(t, got, ids["typo"], "a clean poll clears the failure")
	require.Equal(t, clk.Now(), got[ids["evil"]].At, "a failure again is recorded again")
}

// TestPlannerKeepsDateErrorWhileWaiting: a failed date search stays
// recorded while the search waits out its backoff, though the polls
// succeed, and goes once a search succeeds.
func TestPlannerKeepsDateErrorWhileWaiting(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := openStore(t)
	since := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	g, err := st.AddGroup(ctx, grouplease.Group{Name: "g", RangeSize: 100})
	require.NoError(t, err)
	require.NoError(t, st.SetPlan(ctx, "g", grouplease.GroupPlan{Tail: true, History: true, HistorySince: since}))
	fail := true
	finder := &dateFinder{fn: func(time.Time) (grouplease.DatePoint, error) {
		if fail {
			return grouplease.DatePoint{}, errors.New("date search: no Date parses")
		}
		return grouplease.DatePoint{Article: 100, Date: since}, nil
	}}
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	p, err := grouplease.NewPlanner(grouplease.PlannerConfig{Store: st, Source: &failing{err: map[string]error{}},
		Dates: finder, Clock: clk})
	require.NoError(t, err)

	_, err = p.Pass(ctx)
	require.Error(t, err)
	fail = false
	_, err = p.Pass(ctx)
	require.NoError(t, err, "the search waits: nothing failed this pass")
	got, err := st.PlanErrors(ctx)
	require.NoError(t, err)
	require.Contains(t, got[g.ID].Message, "no Date parses", "still the group's last failure")

	clk.Advance(time.Minute)
	_, err = p.Pass(ctx)
	require.NoError(t, err)
	got, err = st.PlanErrors(ctx)
	require.NoError(t, err)
	require.Empty(t, got, "the search succeeded")
}

// TestPlannerDateBackoffPastSixtyFourFailures: the wait after a failed
// date search stays at 64 Intervals however many searches failed before;
// the doubling must not overflow to no wait at all.
func TestPlannerDateBackoffPastSixtyFourFailures(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := openStore(t)
	_, err := st.AddGroup(ctx, grouplease.Group{Name: "g", RangeSize: 100})
	require.NoError(t, err)
	require.NoError(t, st.SetPlan(ctx, "g", grouplease.GroupPlan{Tail: true, History: true,
		HistorySince: time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)}))
	finder := &dateFinder{fn: func(time.Time) (grouplease.DatePoint, error) {
		return grouplease.DatePoint{}, errors.New("no Date parses")
	}}
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	p, err := grouplease.NewPlanner(grouplease.PlannerConfig{Store: st, Source: &failing{err: map[string]error{}},
		Dates: finder, Clock: clk, Interval: time.Minute})
	require.NoError(t, err)
	for range 70 {
		_, err := p.Pass(ctx)
		require.Error(t, err)
		clk.Advance(64 * time.Minute)
	}
	require.Equal(t, 70, finder.calls, "one search after each wait of 64 Intervals")
	_, err = p.Pass(ctx) // the 71st search fails: the next waits 64 Intervals too
	require.Error(t, err)
	clk.Advance(time.Minute)
	_, err = p.Pass(ctx)
	require.NoError(t, err, "the search waits")
	require.Equal(t, 71, finder.calls, "no search one Interval after the 71st failure")
}
