package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/internal/pgtest"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// heard is a chunk ListenChunks reported.
type heard struct {
	id   int64
	span lease.Span
}

// listen runs s.ListenChunks until the test ends, on the channels it
// returns.
func listen(t *testing.T, s *sqlstore.Store) (<-chan heard, <-chan struct{}) {
	t.Helper()
	got, missed := make(chan heard, 16), make(chan struct{}, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- s.ListenChunks(ctx, func(id int64, span lease.Span) { got <- heard{id, span} }, func() { missed <- struct{}{} })
	}()
	t.Cleanup(func() {
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
	})
	return got, missed
}

// claimedChunk adds a group of one range on s and claims its first chunk
// for coordinator coord.
func claimedChunk(t *testing.T, s *sqlstore.Store, coord string) (int64, lease.Span) {
	t.Helper()
	ctx := t.Context()
	_, err := s.AddGroup(ctx, grouplease.Group{Name: "g", RangeSize: 100, ChunkSize: 10})
	require.NoError(t, err)
	rs, err := s.AddRanges(ctx, grouplease.NewRanges{Group: "g", From: 1, To: 100})
	require.NoError(t, err)
	span := lease.Span{From: 1, To: 10}
	ok, err := s.ClaimChunk(ctx, rs[0].ID, span, coord, time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	return rs[0].ID, span
}

// marks is a condition for require.Eventually: s marks the chunk fetched
// (again), and got hears of it within 100 ms.
func marks(t *testing.T, s *sqlstore.Store, coord string, got <-chan heard, id int64, span lease.Span) func() bool {
	return func() bool {
		require.NoError(t, s.ChunkFetched(t.Context(), id, span, coord))
		select {
		case h := <-got:
			require.Equal(t, heard{id, span}, h)
			return true
		case <-time.After(100 * time.Millisecond):
			return false
		}
	}
}

// A chunk marked fetched on one store is heard at once by a listener on
// another store of the same schema, its own included, and by none of
// another schema; a fetch that fails to mark (no claim) notifies nobody.
func TestListenChunks(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	a, b := open(t, url, sqlstore.Config{}), open(t, url, sqlstore.Config{})
	other := open(t, pgtest.URL(t), sqlstore.Config{})
	heardB, _ := listen(t, b)
	heardA, _ := listen(t, a)
	heardOther, _ := listen(t, other)

	ctx := t.Context()
	// Listen returns once LISTEN is acknowledged; a notification sent before
	// that is not heard, so the test sends until b hears one.
	id, span := claimedChunk(t, a, "coord-a")
	require.Eventually(t, marks(t, a, "coord-a", heardB, id, span), 30*time.Second, time.Millisecond)
	require.Eventually(t, marks(t, a, "coord-a", heardA, id, span), 30*time.Second, time.Millisecond, "a coordinator hears its own chunks too")

	span2 := lease.Span{From: 11, To: 20}
	require.ErrorIs(t, a.ChunkFetched(ctx, id, span2, "coord-a"), edgeindex.ErrLeaseLost, "no claim: nothing marked")
	ok, err := b.ClaimChunk(ctx, id, span2, "coord-b", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, b.ChunkFetched(ctx, id, span2, "coord-b"))
	for h := (heard{id, span}); h == (heard{id, span}); { // after the notifications of the loops above
		select {
		case h = <-heardB:
		case <-time.After(30 * time.Second):
			t.Fatal("the chunk marked on b is not heard")
		}
		if h != (heard{id, span}) {
			require.Equal(t, heard{id, span2}, h, "only the chunk that was marked is heard")
		}
	}
	select {
	case h := <-heardOther:
		t.Fatalf("a store of another schema heard %v", h)
	default:
	}
}

// On SQLite there is nothing to listen to.
func TestListenChunksSQLite(t *testing.T) {
	t.Parallel()
	s := open(t, backends[0].URL(t), sqlstore.Config{})
	require.NoError(t, s.ListenChunks(t.Context(), func(int64, lease.Span) { t.Error("heard") }, func() { t.Error("missed") }))
}

// A listener whose connection is lost (its backend terminated) says so
// (missed), connects again by itself, and hears the chunks marked after.
func TestListenChunksReconnects(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.URL(t), sqlstore.Config{})
	heardS, missed := listen(t, s)
	ctx := t.Context()
	id, span := claimedChunk(t, s, "coord")
	hears := marks(t, s, "coord", heardS, id, span)
	require.Eventually(t, hears, 30*time.Second, time.Millisecond)

	var killed int
	require.NoError(t, s.DB().GetContext(ctx, &killed, `SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE query LIKE 'LISTEN %' AND query LIKE '%' || current_schema() || '%'`))
	require.Equal(t, 1, killed)
	select {
	case <-missed:
	case <-time.After(30 * time.Second):
		t.Fatal("the lost connection is not reported")
	}
	for len(heardS) > 0 { // heard before the connection was lost
		<-heardS
	}
	require.Eventually(t, hears, 30*time.Second, time.Millisecond, "heard again on the new connection")
}
