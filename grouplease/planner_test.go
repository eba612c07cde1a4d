package grouplease_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/internal/syncbuf"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// openStore opens a new SQLite store for the test, closed at its end.
func openStore(t *testing.T) *sqlstore.Store {
	t.Helper()
	st, err := sqlstore.Open(t.Context(), "sqlite://"+filepath.Join(t.TempDir(), "db"), sqlstore.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return st
}

// watermarks is a provider whose high moves; a group named "down" fails.
type watermarks struct {
	mu   sync.Mutex
	high int64
}

var errDown = errors.New("provider down")

func (w *watermarks) Watermarks(ctx context.Context, group string) (int64, int64, error) {
	if group == "down" {
		return 0, 0, errDown
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return 1, w.high, nil
}

func TestPlanner(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := openStore(t)
	var err error
	for _, name := range []string{"g", "down"} {
		_, err := st.AddGroup(ctx, grouplease.Group{Name: name, RangeSize: 100, ChunkSize: 10})
		require.NoError(t, err)
		require.NoError(t, st.SetPlan(ctx, name, grouplease.GroupPlan{Tail: true, History: true}))
	}
	_, err = st.AddGroup(ctx, grouplease.Group{Name: "unplanned"})
	require.NoError(t, err)

	src := &watermarks{high: 250}
	kicks := 0
	p, err := grouplease.NewPlanner(grouplease.PlannerConfig{Store: st, Source: src, Planned: func() { kicks++ }})
	require.NoError(t, err)

	added, err := p.Pass(ctx)
	require.ErrorIs(t, err, errDown, "a group the provider fails for is reported")
	require.ErrorContains(t, err, `"down"`)
	require.Len(t, added, 3, "the other group is planned all the same: history 1..250")
	require.Equal(t, 1, kicks)
	for _, r := range added {
		require.Equal(t, "g", r.Group)
		require.Equal(t, lease.LaneHistory, r.Lane)
	}

	added, _ = p.Pass(ctx)
	require.Empty(t, added)
	require.Equal(t, 1, kicks, "a pass that plans nothing kicks nobody")

	src.mu.Lock()
	src.high = 420
	src.mu.Unlock()
	added, _ = p.Pass(ctx)
	require.Equal(t, []lease.Span{{From: 251, To: 350}, {From: 351, To: 420}}, []lease.Span{
		{From: added[0].Start, To: added[0].End}, {From: added[1].Start, To: added[1].End}})
	require.Equal(t, lease.LaneTail, added[0].Lane)
}

func TestPlannerRun(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	st := openStore(t)
	_, err := st.AddGroup(ctx, grouplease.Group{Name: "g", RangeSize: 100})
	require.NoError(t, err)
	require.NoError(t, st.SetPlan(ctx, "g", grouplease.GroupPlan{History: true}))
	src := &watermarks{high: 10}
	planned := make(chan struct{}, 16)
	p, err := grouplease.NewPlanner(grouplease.PlannerConfig{Store: st, Source: src, Interval: time.Millisecond,
		Planned: func() { planned <- struct{}{} }})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	select {
	case <-planned:
	case <-time.After(10 * time.Second):
		t.Fatal("Run never planned")
	}
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
}

func TestPlannerConfig(t *testing.T) {
	t.Parallel()
	_, err := grouplease.NewPlanner(grouplease.PlannerConfig{})
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
	_, err = grouplease.NewPlanner(grouplease.PlannerConfig{Store: (*sqlstore.Store)(nil), Source: &watermarks{}, Interval: -time.Second})
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
}

// watermarksFunc is a provider that answers with a function.
type watermarksFunc func() (int64, int64)

func (f watermarksFunc) Watermarks(context.Context, string) (int64, int64, error) {
	low, high := f()
	return low, high, nil
}

// TestPlannerHeldLogged: a reply the store holds back is logged, once per
// poll that holds it, with the reply and what is trusted.
func TestPlannerHeldLogged(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := openStore(t)
	_, err := st.AddGroup(ctx, grouplease.Group{Name: "g", RangeSize: 100})
	require.NoError(t, err)
	require.NoError(t, st.SetPlan(ctx, "g", grouplease.GroupPlan{Tail: true}))
	reply := [2]int64{1, 1000}
	var log syncbuf.Buffer
	p, err := grouplease.NewPlanner(grouplease.PlannerConfig{Store: st, Source: watermarksFunc(func() (int64, int64) { return reply[0], reply[1] }),
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	require.NoError(t, err)
	_, err = p.Pass(ctx)
	require.NoError(t, err)
	require.NotContains(t, log.String(), "not trusted")

	reply = [2]int64{500000, 499999}
	_, err = p.Pass(ctx)
	require.NoError(t, err)
	require.Contains(t, log.String(), `planner: group \"g\": watermarks 500000..499999 not trusted until a later poll confirms them`)
	require.Contains(t, log.String(), "trustedLow=1 trustedHigh=1000")
	require.Equal(t, 1, strings.Count(log.String(), "not trusted"))
}

// dateFinder answers FindDate with a function, counting the calls.
type dateFinder struct {
	mu    sync.Mutex
	calls int
	fn    func(since time.Time) (grouplease.DatePoint, error)
}

func (d *dateFinder) FindDate(_ context.Context, _ string, since time.Time) (grouplease.DatePoint, error) {
	d.mu.Lock()
	d.calls++
	d.mu.Unlock()
	return d.fn(since)
}

// TestPlannerBackfillHistoryDate: the planner finds the article of a
// plan's date once, before the first split, and history starts there; a
// failed search holds history, not the tail, and is tried again; a
// planner without a date finder reports the group every pass.
func TestPlannerBackfillHistoryDate(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := openStore(t)
	since := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	for _, name := range []string{"g", "h"} {
		_, err := st.AddGroup(ctx, grouplease.Group{Name: name, RangeSize: 100})
		require.NoError(t, err)
		require.NoError(t, st.SetPlan(ctx, name, grouplease.GroupPlan{Tail: true, History: true, HistorySince: since}))
	}
	src := &watermarks{high: 250}
	errSearch := errors.New("search failed")
	fail := true
	finder := &dateFinder{fn: func(s time.Time) (grouplease.DatePoint, error) {
		require.True(t, since.Equal(s))
		if fail {
			return grouplease.DatePoint{}, errSearch
		}
		return grouplease.DatePoint{Article: 151, Date: since.Add(time.Minute), Calls: 9}, nil
	}}

	// No date finder: the tail splits, history waits, the group is reported.
	bare, err := grouplease.NewPlanner(grouplease.PlannerConfig{Store: st, Source: src})
	require.NoError(t, err)
	added, err := bare.Pass(ctx)
	require.ErrorIs(t, err, grouplease.ErrNoDateFinder)
	require.ErrorContains(t, err, `"g"`)
	require.Empty(t, added)

	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	p, err := grouplease.NewPlanner(grouplease.PlannerConfig{Store: st, Source: src, Dates: finder, Clock: clk})
	require.NoError(t, err)
	_, err = p.Pass(ctx)
	require.ErrorIs(t, err, errSearch, "a failed search is reported")
	fail = false
	added, err = p.Pass(ctx)
	require.NoError(t, err)
	require.Empty(t, added)
	require.Equal(t, 2, finder.calls, "a failed search waits an Interval before it is tried again")
	clk.Advance(time.Minute)
	added, err = p.Pass(ctx)
	require.NoError(t, err)
	require.Equal(t, 4, finder.calls, "each group searched again after the failure")
	var spans []lease.Span
	for _, r := range added {
		require.Equal(t, lease.LaneHistory, r.Lane)
		if r.Group == "g" {
			spans = append(spans, lease.Span{From: r.Start, To: r.End})
		}
	}
	require.Equal(t, []lease.Span{{From: 151, To: 250}}, spans, "history from the article of the date up to the split")
	plans, err := st.Plans(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(151), plans[0].HistoryFrom)
	require.True(t, since.Add(time.Minute).Equal(plans[0].HistoryFromDate))

	_, err = p.Pass(ctx)
	require.NoError(t, err)
	require.Equal(t, 4, finder.calls, "a date found is not searched again")
}

// TestPlannerBackfillDateSearchDoesNotHoldOtherTails: a date search on a
// slow or hung provider (nntp's FindDate may take 4 × Timeout, 4 minutes
// by default) does not hold up the tail of the other groups.
func TestPlannerBackfillDateSearchDoesNotHoldOtherTails(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := openStore(t)
	since := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	_, err := st.AddGroup(ctx, grouplease.Group{Name: "slow@a", RangeSize: 100})
	require.NoError(t, err)
	require.NoError(t, st.SetPlan(ctx, "slow@a", grouplease.GroupPlan{Tail: true, History: true, HistorySince: since}))
	_, err = st.AddGroup(ctx, grouplease.Group{Name: "fast@b", RangeSize: 100})
	require.NoError(t, err)
	require.NoError(t, st.SetPlan(ctx, "fast@b", grouplease.GroupPlan{Tail: true}))

	release := make(chan struct{})
	finder := &dateFinder{fn: func(time.Time) (grouplease.DatePoint, error) {
		<-release // provider a's OVER hangs until the search's deadline
		return grouplease.DatePoint{Article: 1}, nil
	}}
	src := &watermarks{high: 250}
	p, err := grouplease.NewPlanner(grouplease.PlannerConfig{Store: st, Source: src, Dates: finder})
	require.NoError(t, err)
	done := make(chan struct{})
	go func() { defer close(done); p.Pass(ctx) }()
	defer func() { close(release); <-done }()

	require.Eventually(t, func() bool {
		plans, err := st.Plans(ctx)
		require.NoError(t, err)
		for _, pl := range plans {
			if pl.Group == "fast@b" && pl.TailNext > 0 {
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "fast@b's tail waits for slow@a's date search")
}
