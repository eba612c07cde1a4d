package sqlstore

import (
	"database/sql"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/grouplease"
)

// TestTrust is the rule that decides how much of a GROUP reply planning
// uses, case by case; the conformance suite (storetest's Plan* cases)
// checks what the rule does to cursors and missing articles.
func TestTrust(t *testing.T) {
	t.Parallel()
	const max = grouplease.MaxArticle
	n := func(v int64) sql.NullInt64 { return sql.NullInt64{Int64: v, Valid: true} }
	w := func(low, high int64) grouplease.Watermarks { return grouplease.Watermarks{Low: low, High: high} }
	trusted := func(low, high int64) planRow { return planRow{Low: n(low), High: n(high)} }
	pending := func(p planRow, low, high int64) planRow {
		p.PendingLow, p.PendingHigh = n(low), n(high)
		return p
	}
	for _, c := range []struct {
		name  string
		plan  planRow
		reply grouplease.Watermarks
		want  grouplease.Watermarks
		ok    bool
	}{
		{"first poll", planRow{}, w(5, 1000), w(5, 1000), true},
		{"first poll of 2^62", planRow{}, w(1, max), w(1, max), true},
		{"first poll after a reset, near the old high", pending(planRow{}, 1, 1000), w(1, 1050), w(1, 1050), true},
		{"first poll after a reset, far from the old high", pending(planRow{}, 1, 1000), w(1, max), w(1, max), false},
		{"first poll after a reset of an empty plan", pending(planRow{}, 500000, 499999), w(1, max), w(1, max), true},
		{"first poll empty", planRow{}, w(500000, 499999), w(0, 0), false},
		{"first poll 0 0", planRow{}, w(0, 0), w(0, 0), false},
		{"first poll 1 0", planRow{}, w(1, 0), w(0, 0), false},
		{"same", trusted(1, 1000), w(1, 1000), w(1, 1000), true},
		{"high grows", trusted(1, 1000), w(1, 1050), w(1, 1050), true},
		{"high grows to the bound", trusted(1, 1000), w(1, 1000+100), w(1, 1100), true},
		{"high jumps past the bound", trusted(1, 1000), w(1, 1101), w(1, 1000), true},
		{"high of 2^62", trusted(1, 1000), w(1, max), w(1, 1000), true},
		{"2^62 confirmed", pending(trusted(1, 1000), 1, max), w(1, max), w(1, max), true},
		{"2^62 then less: they differ, nothing confirmed", pending(trusted(1, 1000), 1, max), w(1, 5000), w(1, 1000), true},
		{"5000 confirmed by 5050", pending(trusted(1, 1000), 1, 5000), w(1, 5050), w(1, 5000), true},
		{"2^62 then 2^62 - 12345: they differ", pending(trusted(1, 1000), 1, max), w(1, max-12345), w(1, 1000), true},
		{"a lower high, then the real one: no jump from the tail's reach", planRow{Low: n(1), High: n(5), TailNext: n(100001)}, w(1, 100050), w(1, 100050), true},
		{"the tail's reach counts its margin", planRow{Low: n(1), High: n(5), TailNext: n(1001), Margin: 50}, w(1, 1120), w(1, 1120), true},
		{"a margin near MaxArticle", planRow{Low: n(1), High: n(5), TailNext: n(1001), Margin: max}, w(1, 1120), w(1, 1120), true},
		{"2^62 then normal", pending(trusted(1, 1000), 1, max), w(1, 1050), w(1, 1050), true},
		{"empty then 2^62", pending(trusted(1, 1000), 500000, 499999), w(1, max), w(1, 1000), true},
		{"high falls", trusted(1, 1000), w(1, 10), w(1, 10), true},
		{"high falls to 0 in 0 0 0", trusted(1, 1000), w(0, 0), w(1, 1000), true},
		{"empty", trusted(1, 1000), w(500000, 499999), w(1, 1000), true},
		{"empty below the low", trusted(1, 1000), w(1, 0), w(1, 1000), true},
		{"empty confirmed", pending(trusted(1, 1000), 500000, 499999), w(500000, 499999), w(500000, 1000), true},
		{"empty then normal", pending(trusted(1, 1000), 500000, 499999), w(1, 1000), w(1, 1000), true},
		{"empty then a low past it", pending(trusted(1, 1000), 500000, 499999), w(500001, 500050), w(500000, 500050), true},
		{"empty then a low and a high past it", pending(trusted(1, 1000), 500000, 499999), w(500001, 500100), w(500000, 1000), true},
		{"0 0 0 then a low", pending(trusted(1, 1000), 0, 0), w(300, 1000), w(1, 1000), true},
		{"low rises", trusted(1, 1000), w(300, 1000), w(1, 1000), true},
		{"low rises twice", pending(trusted(1, 1000), 300, 1000), w(400, 1000), w(300, 1000), true},
		{"low rises, then less", pending(trusted(1, 1000), 300, 1000), w(200, 1000), w(200, 1000), true},
		{"low falls", trusted(300, 1000), w(1, 1000), w(1, 1000), true},
		{"low 0 to 1", trusted(0, 1000), w(1, 1000), w(1, 1000), true},
		{"low of 2^62", trusted(1, 1000), w(max, max), w(1, 1000), true},
		{"all 2^62, confirmed", pending(trusted(1, 1000), max, max), w(max, max), w(max, max), true},
		{"low held, high grows", pending(trusted(1, 1000), 300, 1000), w(1, 1050), w(1, 1050), true},
	} {
		got, ok := trust(c.plan, c.reply, 100)
		require.Equal(t, c.ok, ok, c.name)
		if ok {
			require.Equal(t, c.want, got, c.name)
		}
	}
}

func TestHighJump(t *testing.T) {
	t.Parallel()
	open := func(cfg Config) *Store {
		s, err := Open(t.Context(), "sqlite://"+filepath.Join(t.TempDir(), "db"), cfg)
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}
	g := grouplease.Group{RangeSize: 500}
	require.Equal(t, int64(10*500*DefaultPlanAhead), open(Config{}).highJump(g), "the default: 10 × range size × PlanAhead")
	require.Equal(t, int64(10*500*4), open(Config{PlanAhead: 4}).highJump(g))
	require.Equal(t, int64(7), open(Config{HighJump: 7}).highJump(g))
	require.Equal(t, grouplease.MaxArticle, open(Config{HighJump: math.MaxInt64}).highJump(g))
	require.Equal(t, grouplease.MaxArticle, open(Config{}).highJump(grouplease.Group{RangeSize: math.MaxInt64}), "no overflow")
	require.Equal(t, grouplease.MaxArticle, open(Config{PlanAhead: math.MaxInt}).highJump(g), "no overflow")

	_, err := Open(t.Context(), "sqlite://"+filepath.Join(t.TempDir(), "db"), Config{HighJump: -1})
	require.ErrorIs(t, err, edgeindex.ErrInvalid)

	// A store with a bound of its own holds a jump past it.
	s := open(Config{HighJump: 50})
	grp, err := s.AddGroup(t.Context(), grouplease.Group{Name: "g", RangeSize: 10, ChunkSize: 10})
	require.NoError(t, err)
	require.NoError(t, s.SetPlan(t.Context(), "g", grouplease.GroupPlan{Tail: true}))
	_, err = s.PlanRanges(t.Context(), grp.ID, 1, 100)
	require.NoError(t, err)
	p, err := s.PlanRanges(t.Context(), grp.ID, 1, 150)
	require.NoError(t, err)
	require.Nil(t, p.Held, "a jump of 50 is trusted")
	require.Len(t, p.Ranges, 5)
	p, err = s.PlanRanges(t.Context(), grp.ID, 1, 201)
	require.NoError(t, err)
	require.Equal(t, &grouplease.Watermarks{Low: 1, High: 201}, p.Held, "a jump of 51 is held")
	require.Empty(t, p.Ranges)
}

// planStore is a SQLite store with group g (ranges of 100) and plan.
func planStore(t *testing.T, cfg Config, plan grouplease.GroupPlan) (*Store, int64) {
	t.Helper()
	s, err := Open(t.Context(), "sqlite://"+filepath.Join(t.TempDir(), "db"), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	g, err := s.AddGroup(t.Context(), grouplease.Group{Name: "g", RangeSize: 100, ChunkSize: 100})
	require.NoError(t, err)
	require.NoError(t, s.SetPlan(t.Context(), "g", plan))
	return s, g.ID
}

func planOf(t *testing.T, s *Store) grouplease.PlanStatus {
	t.Helper()
	ps, err := s.Plans(t.Context())
	require.NoError(t, err)
	require.Len(t, ps, 1)
	return ps[0]
}

// A server that alternates a lagging reply (1..5) with the real one, as
// one stale backend behind a balancer does, must not stop the tail: the
// lower high was trusted at once, and the real one then looked like a
// jump from it, so the trusted high stayed 5 and the lag 0 for good.
func TestTrustAlternatingLaggingReply(t *testing.T) {
	t.Parallel()
	s, id := planStore(t, Config{PlanAhead: 4}, grouplease.GroupPlan{Tail: true}) // bound 10 × 100 × 4
	_, err := s.PlanRanges(t.Context(), id, 1, 100000)
	require.NoError(t, err)
	real := int64(100000)
	for range 20 {
		_, err = s.PlanRanges(t.Context(), id, 1, 5)
		require.NoError(t, err)
		real += 100
		_, err = s.PlanRanges(t.Context(), id, 1, real)
		require.NoError(t, err)
	}
	p := planOf(t, s)
	require.Equal(t, real, p.High, "the real high is trusted")
	require.Nil(t, p.Held)
	require.Equal(t, real-100000, p.Lag, "the new articles wait for the tail (4 ranges ahead at most)")
}

// Two odd replies in a row that differ (2^62, then 2^62 − 12345) confirm
// nothing: nothing is planned past the real end.
func TestTrustTwoOddReplies(t *testing.T) {
	t.Parallel()
	s, id := planStore(t, Config{PlanAhead: 4}, grouplease.GroupPlan{Tail: true})
	_, err := s.PlanRanges(t.Context(), id, 1, 1000)
	require.NoError(t, err)
	for _, high := range []int64{grouplease.MaxArticle, grouplease.MaxArticle - 12345} {
		p, err := s.PlanRanges(t.Context(), id, 1, high)
		require.NoError(t, err)
		require.Empty(t, p.Ranges, "nothing planned for a high of %d", high)
	}
	planned, err := s.PlanRanges(t.Context(), id, 1, 1010)
	require.NoError(t, err)
	require.Len(t, planned.Ranges, 1)
	require.Equal(t, [2]int64{1001, 1010}, [2]int64{planned.Ranges[0].Start, planned.Ranges[0].End}, "the real new articles")
	p := planOf(t, s)
	require.Equal(t, int64(1010), p.High)
	require.Equal(t, int64(1011), p.TailNext)
}

// A reset of a plan with a history bound plans every article above the
// group's ranges: the new split's history reaches down to them, so none
// between the old ranges and the new split is left unplanned.
func TestResetPlanLeavesNoGap(t *testing.T) {
	t.Parallel()
	s, id := planStore(t, Config{PlanAhead: 1000}, grouplease.GroupPlan{Tail: true, History: true, HistoryBack: 500})
	_, err := s.PlanRanges(t.Context(), id, 1, 1000)
	require.NoError(t, err)
	_, err = s.ResetPlan(t.Context(), "g")
	require.NoError(t, err)
	_, err = s.PlanRanges(t.Context(), id, 1, 5000)
	require.NoError(t, err)
	rs, err := s.Ranges(t.Context(), grouplease.RangeFilter{Group: "g", Limit: 10000})
	require.NoError(t, err)
	covered := map[int64]bool{}
	for _, r := range rs {
		for n := r.Start; n <= r.End; n++ {
			require.False(t, covered[n], "article %d planned twice", n)
			covered[n] = true
		}
	}
	for n := int64(501); n <= 5000; n++ { // 1..500: below the history bound of the first split
		require.True(t, covered[n], "article %d is planned", n)
	}
}

// The first poll after a reset is checked against the watermarks trusted
// before it: one reply of 2^62 then plans nothing, and the real group is
// trusted once two polls agree on it.
func TestResetPlanFirstPollChecked(t *testing.T) {
	t.Parallel()
	s, id := planStore(t, Config{PlanAhead: 4}, grouplease.GroupPlan{Tail: true, History: true})
	_, err := s.PlanRanges(t.Context(), id, 1, 1000)
	require.NoError(t, err)
	_, err = s.ResetPlan(t.Context(), "g")
	require.NoError(t, err)
	p, err := s.PlanRanges(t.Context(), id, 1, grouplease.MaxArticle)
	require.NoError(t, err)
	require.Empty(t, p.Ranges, "one odd reply right after the reset plans nothing")
	require.NotNil(t, p.Held)
	p, err = s.PlanRanges(t.Context(), id, 1, 1010)
	require.NoError(t, err)
	require.NotNil(t, p.Held, "the odd reply took the place of the old watermarks: two polls must agree")
	p, err = s.PlanRanges(t.Context(), id, 1, 1010)
	require.NoError(t, err)
	require.Nil(t, p.Held)
	st := planOf(t, s)
	require.Equal(t, int64(1010), st.High)
	require.Equal(t, int64(1011), st.TailNext, "split at the real high")
}

// retryAt doubles the retry delay with each attempt, at most to a day,
// without overflow however long the configured delay is.
func TestRetryAt(t *testing.T) {
	t.Parallel()
	s := &Store{cfg: Config{RetryDelay: 10 * time.Second}}
	for attempts, want := range map[int]time.Duration{0: 10 * time.Second, 1: 10 * time.Second, 2: 20 * time.Second, 5: 160 * time.Second, 30: 24 * time.Hour} {
		require.Equal(t, want.Microseconds(), s.retryAt(0, attempts), "attempts %d", attempts)
	}
	s.cfg.RetryDelay = math.MaxInt64
	require.Equal(t, (24 * time.Hour).Microseconds(), s.retryAt(0, 5), "a huge delay is a day, not an overflow")
}
