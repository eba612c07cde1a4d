package sqlstore_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/internal/pgtest"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// Range add and planning lock a group's row (FOR NO KEY UPDATE), and so did
// the grant of the group's other lane, when a lane grant locked every row
// of its join. A lane grant locks only the lane's row: it must not answer
// "no work" while the group's row is locked.
func TestGrantLaneNotHiddenByGroupLock(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.URL(t), sqlstore.Config{})
	ctx := t.Context()
	g, err := s.AddGroup(ctx, grouplease.Group{Name: "o", Ordered: true, RangeSize: 100, ChunkSize: 10})
	require.NoError(t, err)
	_, err = s.AddRanges(ctx, grouplease.NewRanges{Group: "o", From: 1, To: 100, Lane: lease.LaneHistory})
	require.NoError(t, err)
	_, err = s.AddRanges(ctx, grouplease.NewRanges{Group: "o", From: 101, To: 200, Lane: lease.LaneTail})
	require.NoError(t, err)

	tx, err := s.DB().BeginTxx(ctx, nil)
	require.NoError(t, err)
	defer tx.Rollback()
	_, err = tx.ExecContext(ctx, "SELECT id FROM groups WHERE id = $1 FOR NO KEY UPDATE", g.ID)
	require.NoError(t, err)

	for _, lane := range []lease.Lane{lease.LaneHistory, lease.LaneTail} {
		gl, err := s.GrantLane(ctx, "n", lane, time.Minute)
		require.NoError(t, err, "the %s lane is granted while its group's row is locked", lane)
		require.Equal(t, g.ID, gl.Group.ID)
	}
}

// A database that holds headers summing past MaxInt64 (stored before
// batches were held to their span's count) still answers Lanes: the sum
// saturates. SQLite's SUM failed with "integer overflow", and PostgreSQL's
// cast of the numeric sum with "bigint out of range", so status and
// GET /v1/fleet failed for every admin.
func TestLaneHeadersSaturate(t *testing.T) {
	t.Parallel()
	onEachBackend(t, sqlstore.Config{}, func(t *testing.T, s *sqlstore.Store, _ *clock.Manual) {
		ctx := t.Context()
		_, err := s.AddGroup(ctx, grouplease.Group{Name: "o", Ordered: true, RangeSize: 1000, ChunkSize: 100})
		require.NoError(t, err)
		_, err = s.AddRanges(ctx, grouplease.NewRanges{Group: "o", From: 1, To: 3000, Lane: lease.LaneHistory})
		require.NoError(t, err)
		_, err = s.DB().ExecContext(ctx, "UPDATE ranges SET state = 'done', next_n = end_n + 1, headers = 6900000000000000000")
		require.NoError(t, err)
		lanes, err := s.Lanes(ctx, "o")
		require.NoError(t, err)
		require.Len(t, lanes, 1)
		require.Equal(t, int64(math.MaxInt64), lanes[0].Headers)
	})
}

// The prefetcher leaves out a pending range that waits out its retry
// delay after a corrupt report, as grants do: fetching it would count
// another attempt before its time. After the delay it is back in grant
// order.
func TestPrefetchTargetsRetryDelay(t *testing.T) {
	t.Parallel()
	onEachBackend(t, sqlstore.Config{RetryDelay: time.Minute}, func(t *testing.T, s *sqlstore.Store, clk *clock.Manual) {
		ctx := t.Context()
		_, err := s.AddGroup(ctx, grouplease.Group{Name: "g", RangeSize: 100, ChunkSize: 100})
		require.NoError(t, err)
		_, err = s.AddRanges(ctx, grouplease.NewRanges{Group: "g", From: 1, To: 300, Lane: lease.LaneHistory})
		require.NoError(t, err)
		l, err := s.Grant(ctx, "n", time.Minute)
		require.NoError(t, err)
		require.Equal(t, int64(1), l.Range.Start)
		r, err := s.Corrupt(ctx, l.Range.ID, lease.Fence{Node: "n", Token: l.Token}, 1, "bad")
		require.NoError(t, err)
		require.Equal(t, lease.StatePending, r.State)
		starts := func() []int64 {
			targets, err := s.PrefetchTargets(ctx, 10)
			require.NoError(t, err)
			var out []int64
			for _, tg := range targets {
				out = append(out, tg.Range.Start)
			}
			return out
		}
		require.Equal(t, []int64{101, 201}, starts(), "the corrupt range waits")
		clk.Advance(59 * time.Second)
		require.Equal(t, []int64{101, 201}, starts())
		clk.Advance(2 * time.Second)
		require.Equal(t, []int64{1, 101, 201}, starts(), "back in grant order after a minute")
		g, err := s.Grant(ctx, "n", time.Minute)
		require.NoError(t, err)
		require.Equal(t, l.Range.ID, g.Range.ID, "and granted first again")
	})
}

// onEachBackend runs fn in parallel subtests, one a backend, each with a
// store of its own opened with cfg and a manual clock, which fn gets too.
func onEachBackend(t *testing.T, cfg sqlstore.Config, fn func(t *testing.T, s *sqlstore.Store, clk *clock.Manual)) {
	t.Helper()
	for _, b := range pgtest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			clk := clock.NewManual(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
			cfg := cfg
			cfg.Clock = clk
			fn(t, open(t, b.URL(t), cfg), clk)
		})
	}
}

// A coordinator whose fetch outlived its chunk's claim, which another took
// and fetched since, counts no attempt when it finds the chunk bad.
func TestChunkCorruptNeedsTheClaim(t *testing.T) {
	t.Parallel()
	onEachBackend(t, sqlstore.Config{}, func(t *testing.T, s *sqlstore.Store, clk *clock.Manual) {
		ctx := t.Context()
		id, span := oneChunkRange(t, s)
		ok, err := s.ClaimChunk(ctx, id, span, "A", 50*time.Millisecond)
		require.NoError(t, err)
		require.True(t, ok)
		clk.Advance(100 * time.Millisecond) // A's fetch outlasts its claim
		ok, err = s.ClaimChunk(ctx, id, span, "B", time.Minute)
		require.NoError(t, err)
		require.True(t, ok, "B takes the claim that ran out")
		require.NoError(t, s.ChunkFetched(ctx, id, span, "B"))
		r, err := s.ChunkCorrupt(ctx, id, span, "A", "too large")
		require.NoError(t, err)
		require.Zero(t, r.Attempts, "A no longer held the claim")
		ok, err = s.ClaimChunk(ctx, id, span, "C", time.Minute)
		require.NoError(t, err)
		require.False(t, ok, "B's claim stands")

		ok, err = s.ClaimChunk(ctx, id, lease.Span{From: 1, To: 100}, "B", time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
		r, err = s.ChunkCorrupt(ctx, id, span, "B", "too large")
		require.NoError(t, err)
		require.Equal(t, 1, r.Attempts, "the holder's verdict counts")
	})
}

// A fetch's claim is renewed before each retry; FetchingClaims still
// tells how long the fetch has run since its owner first claimed the
// chunk. Another owner's claim, or a new claim of a fetched chunk, starts
// anew.
func TestFetchingClaimsRunningFor(t *testing.T) {
	t.Parallel()
	onEachBackend(t, sqlstore.Config{}, func(t *testing.T, s *sqlstore.Store, clk *clock.Manual) {
		ctx := t.Context()
		id, span := oneChunkRange(t, s)
		claim := func(owner string) {
			t.Helper()
			ok, err := s.ClaimChunk(ctx, id, span, owner, time.Minute)
			require.NoError(t, err)
			require.True(t, ok)
		}
		running := func() time.Duration {
			t.Helper()
			cs, err := s.FetchingClaims(ctx, 10)
			require.NoError(t, err)
			require.Len(t, cs, 1)
			return cs[0].RunningFor
		}
		claim("A")
		for range 3 { // three tries of 50 s, each renewing the claim
			clk.Advance(50 * time.Second)
			claim("A")
		}
		require.Equal(t, 150*time.Second, running(), "since A first claimed it")
		clk.Advance(2 * time.Minute) // A died; B takes the claim that ran out
		claim("B")
		require.Zero(t, running())
		clk.Advance(10 * time.Second)
		require.NoError(t, s.ChunkFetched(ctx, id, span, "B"))
		claim("B") // fetched, then claimed again: a new fetch
		clk.Advance(5 * time.Second)
		require.Equal(t, 5*time.Second, running())
	})
}

// oneChunkRange adds group g with one range of one chunk, 1..100, and
// returns the range's id and the chunk's span.
func oneChunkRange(t *testing.T, s *sqlstore.Store) (int64, lease.Span) {
	t.Helper()
	_, err := s.AddGroup(t.Context(), grouplease.Group{Name: "g", RangeSize: 100, ChunkSize: 100})
	require.NoError(t, err)
	rs, err := s.AddRanges(t.Context(), grouplease.NewRanges{Group: "g", From: 1, To: 100})
	require.NoError(t, err)
	return rs[0].ID, lease.Span{From: 1, To: 100}
}
