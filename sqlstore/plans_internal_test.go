package sqlstore

import (
	"database/sql"
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
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
		{"first poll empty", planRow{}, w(500000, 499999), w(0, 0), false},
		{"first poll 0 0", planRow{}, w(0, 0), w(0, 0), false},
		{"first poll 1 0", planRow{}, w(1, 0), w(0, 0), false},
		{"same", trusted(1, 1000), w(1, 1000), w(1, 1000), true},
		{"high grows", trusted(1, 1000), w(1, 1050), w(1, 1050), true},
		{"high grows to the bound", trusted(1, 1000), w(1, 1000+100), w(1, 1100), true},
		{"high jumps past the bound", trusted(1, 1000), w(1, 1101), w(1, 1000), true},
		{"high of 2^62", trusted(1, 1000), w(1, max), w(1, 1000), true},
		{"2^62 confirmed", pending(trusted(1, 1000), 1, max), w(1, max), w(1, max), true},
		{"2^62 then less, confirmed as less", pending(trusted(1, 1000), 1, max), w(1, 5000), w(1, 5000), true},
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
	require.ErrorIs(t, err, lease.ErrInvalid)

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
