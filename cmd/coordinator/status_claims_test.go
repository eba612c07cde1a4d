package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/prefetch"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// TestStatusOrphanedClaims: a claim renewed on time is a fetch running
// (stuck once it ran for --stuck); one whose coordinator stopped renewing
// it is listed as orphaned, with how long it has been silent and when it
// is taken over, "now" once it ran out, until another takes it.
func TestStatusOrphanedClaims(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clk := clock.NewManual(time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC))
	store, err := sqlstore.Open(ctx, "sqlite://"+t.TempDir()+"/e.db", sqlstore.Config{Clock: clk})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	_, err = store.AddGroup(ctx, grouplease.Group{Name: "alt.binaries.claims", RangeSize: 100, ChunkSize: 10})
	require.NoError(t, err)
	_, err = store.AddRanges(ctx, grouplease.NewRanges{Group: "alt.binaries.claims", From: 1, To: 100})
	require.NoError(t, err)
	ttl := prefetch.DefaultClaimTTL
	rs, err := store.Ranges(ctx, grouplease.RangeFilter{Limit: 1})
	require.NoError(t, err)
	id := rs[0].ID
	claim := func(owner string, from int64) {
		t.Helper()
		ok, err := store.ClaimChunk(ctx, id, lease.Span{From: from, To: from + 9}, owner, ttl)
		require.NoError(t, err)
		require.True(t, ok)
	}
	claim("alive", 1)
	claim("gone", 11)
	report := func() (statusReport, string) {
		t.Helper()
		r, err := readStatus(ctx, store, ttl, time.Minute)
		require.NoError(t, err)
		var out bytes.Buffer
		require.NoError(t, r.print(&out, time.Minute, ttl))
		return r, out.String()
	}
	r, out := report()
	require.Empty(t, r.orphaned, "both were just claimed")
	require.NotContains(t, out, "stopped renewing")

	clk.Advance(ttl/3 + renewGrace + time.Second)
	claim("alive", 1) // renewed on time
	r, out = report()
	require.Len(t, r.orphaned, 1)
	require.Equal(t, "gone", r.orphaned[0].Owner)
	require.Contains(t, out, "Claims whose coordinator stopped renewing them")
	require.Regexp(t, `alt\.binaries\.claims\s+\d+\s+11-20\s+gone\s+8s\s+7s`, out)

	clk.Advance(ttl)
	claim("alive", 1)
	r, out = report()
	require.Len(t, r.orphaned, 1, "ran out: listed until another takes it")
	require.Regexp(t, `11-20\s+gone\s+23s\s+now`, out)
	claim("taker", 11)
	r, _ = report()
	require.Empty(t, r.orphaned)
}
