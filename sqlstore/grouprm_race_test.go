package sqlstore_test

import (
	"database/sql"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/internal/pgtest"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// TestRemoveGroupRacesAWorker: on PostgreSQL a removal that has counted
// nothing leased and no results, and is then held up, while a worker is
// granted a range of the group and stores a batch, does not delete what
// the worker stored: it sees the change and refuses, as it would have
// from the start.
func TestRemoveGroupRacesAWorker(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.URL(t), sqlstore.Config{})
	ctx := t.Context()
	_, err := s.AddGroup(ctx, grouplease.Group{Name: "g", RangeSize: 100, ChunkSize: 10})
	require.NoError(t, err)
	rs, err := s.AddRanges(ctx, grouplease.NewRanges{Group: "g", From: 1, To: 200, Lane: lease.LaneHistory})
	require.NoError(t, err)
	// An expired claim on the second range (it counts as nothing), locked
	// by an open transaction: the removal waits on it after counting.
	_, err = s.DB().ExecContext(ctx, `INSERT INTO chunk_claims (range_id, from_n, to_n, owner, expires_us) VALUES ($1, 101, 110, 'c', 0)`, rs[1].ID)
	require.NoError(t, err)
	hold, err := s.DB().BeginTx(ctx, nil)
	require.NoError(t, err)
	defer hold.Rollback()
	_, err = hold.ExecContext(ctx, `SELECT 1 FROM chunk_claims WHERE range_id = $1 FOR UPDATE`, rs[1].ID)
	require.NoError(t, err)
	holder := backendPID(t, hold)

	type removal struct {
		results int64
		err     error
	}
	done := make(chan removal, 1)
	go func() {
		_, n, err := s.RemoveGroup(ctx, "g", false)
		done <- removal{n, err}
	}()
	waitBlockedBy(t, s, holder, "the removal waits on the claim")

	l, err := s.Grant(ctx, "w", time.Minute)
	require.NoError(t, err)
	require.Equal(t, rs[0].ID, l.Range.ID)
	_, err = s.Put(ctx, l.Range.ID, lease.Fence{Node: l.Node, Token: l.Token},
		batch.Batch{From: 1, To: 50, Headers: 5, Items: []batch.Item{{Key: "k", Value: json.RawMessage(`{"k":1}`)}}})
	require.NoError(t, err)

	require.NoError(t, hold.Rollback())
	r := <-done
	require.ErrorIs(t, r.err, edgeindex.ErrConflict, "a range is leased now and has a result")
	var items int
	require.NoError(t, s.DB().QueryRowContext(ctx, `SELECT COUNT(*) FROM items`).Scan(&items))
	require.Equal(t, 1, items, "the worker's result stays")
	_, err = s.Group(ctx, "g")
	require.NoError(t, err, "and so does the group")
}

// TestAddRangesAfterRemoveIsNotFound: on PostgreSQL a write that waited
// on the lock of a group that a removal then deleted finds no group
// (ErrNotFound, a 404), not the foreign key error its insert would meet.
func TestAddRangesAfterRemoveIsNotFound(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.URL(t), sqlstore.Config{})
	ctx := t.Context()
	g, err := s.AddGroup(ctx, grouplease.Group{Name: "g", RangeSize: 100})
	require.NoError(t, err)
	remove, err := s.DB().BeginTx(ctx, nil)
	require.NoError(t, err)
	defer remove.Rollback()
	_, err = remove.ExecContext(ctx, `SELECT id FROM groups WHERE id = $1 FOR NO KEY UPDATE`, g.ID)
	require.NoError(t, err)
	holder := backendPID(t, remove)
	added := make(chan error, 1)
	go func() {
		_, err := s.AddRanges(ctx, grouplease.NewRanges{Group: "g", From: 1, To: 100, Lane: lease.LaneTail})
		added <- err
	}()
	waitBlockedBy(t, s, holder, "the add waits on the group's lock")
	_, err = remove.ExecContext(ctx, `DELETE FROM groups WHERE id = $1`, g.ID)
	require.NoError(t, err)
	require.NoError(t, remove.Commit())
	require.ErrorIs(t, <-added, edgeindex.ErrNotFound)
}

// backendPID is the server process of tx's connection.
func backendPID(t *testing.T, tx *sql.Tx) int {
	t.Helper()
	var pid int
	require.NoError(t, tx.QueryRowContext(t.Context(), `SELECT pg_backend_pid()`).Scan(&pid))
	return pid
}

// waitBlockedBy waits until a session waits on a lock of the server
// process holder: this test's own, not another test's on the shared
// server.
func waitBlockedBy(t *testing.T, s *sqlstore.Store, holder int, msg string) {
	t.Helper()
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, s.DB().QueryRowContext(t.Context(),
			`SELECT COUNT(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, holder).Scan(&n))
		return n > 0
	}, 10*time.Second, 10*time.Millisecond, msg)
}
