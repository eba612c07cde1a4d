package sqlstore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/release"
)

// TestFrontDoorOwnPool: with every connection of the front door's pool
// held (as slow searches would hold them), the coordination path still
// answers at once on each backend: a ping, a new node and its token's
// first check, a lease granted and renewed. A search, meanwhile, waits for
// the front door's pool and fails at its deadline.
func TestFrontDoorOwnPool(t *testing.T) {
	t.Parallel()
	openEach(t, func(t *testing.T, _ string, s *Store) {
		ctx := t.Context()
		_, err := s.AddGroup(ctx, grouplease.Group{Name: "g", RangeSize: 10, ChunkSize: 10})
		require.NoError(t, err)
		_, err = s.AddRanges(ctx, grouplease.NewRanges{Group: "g", From: 1, To: 100})
		require.NoError(t, err)
		for range s.cfg.FrontConns {
			c, err := s.fdb.Connx(ctx)
			require.NoError(t, err)
			t.Cleanup(func() { c.Close() })
		}

		fast, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		require.NoError(t, s.Ping(fast))
		hash := sha256.Sum256([]byte("token"))
		_, err = s.AddNode(fast, "n1", hash[:])
		require.NoError(t, err)
		n, err := s.Authenticate(fast, hash[:])
		require.NoError(t, err)
		require.Equal(t, "n1", n.Name)
		l, err := s.Grant(fast, "n1", time.Minute)
		require.NoError(t, err)
		_, err = s.Heartbeat(fast, l.Range.ID, lease.Fence{Node: "n1", Token: l.Token}, time.Minute)
		require.NoError(t, err)

		short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		_, err = s.SearchReleases(short, release.Search{})
		require.ErrorIs(t, err, context.DeadlineExceeded, "the search waited for the front door's pool")
	})
}

// TestSearchDeadlineSQLite: a search on SQLite past its bound stops (the
// driver interrupts the statement) with an error that is
// context.DeadlineExceeded, and the next search on the connection it
// used answers.
func TestSearchDeadlineSQLite(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), "sqlite://"+t.TempDir()+"/e.db", Config{FrontConns: 1})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	manyReleases(t, s, 30_000)
	s.searchTimeout = time.Millisecond
	for range 100 {
		// Read newest first (wordsFirst 0), every release is looked
		// through for a word none has.
		if _, err = s.search(t.Context(), release.Search{Words: []string{"many", "none"}}, 0, sqliteCategoryFirst); err != nil {
			break
		}
	}
	require.ErrorIs(t, err, context.DeadlineExceeded)
	s.searchTimeout = 0
	f, err := s.SearchReleases(t.Context(), release.Search{Words: []string{"many", "7"}, MinCompletion: 1})
	require.NoError(t, err)
	require.Len(t, f.Releases, 1)
}

// manyReleases writes n complete releases of 100 bytes named Many.i,
// posted at i microseconds, straight into the table (its triggers index
// them on SQLite).
func manyReleases(t *testing.T, s *Store, n int) {
	t.Helper()
	_, err := s.db.ExecContext(t.Context(), s.q(`WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
		INSERT INTO releases (set_key, name, poster, group_names, posted_us, last_us, files_seen, files_complete,
		files_expected, parts_seen, parts_expected, bytes, complete, updated_us, category, search_words)
		SELECT 'k' || i, 'Many.' || i, 'p', '["g"]', CAST(i AS BIGINT), CAST(i AS BIGINT), 1, 1, 0, 1, 1, 100, ?, 0, 8010, 'many ' || i FROM n`),
		n, true)
	require.NoError(t, err)
}

// TestAuthRefresh: a token Authenticate knows is checked in memory and
// re-read by authLoop, so a node removed through another store (another
// process) is refused within a few re-reads, and its token is not
// trusted again.
func TestAuthRefresh(t *testing.T) {
	t.Parallel()
	openEach(t, func(t *testing.T, url string, s *Store) {
		ctx := t.Context()
		other, err := Open(ctx, url, Config{})
		require.NoError(t, err)
		defer other.Close()
		hash := sha256.Sum256([]byte("refresh"))
		_, err = s.AddNode(ctx, "gone", hash[:])
		require.NoError(t, err)
		_, err = s.Authenticate(ctx, hash[:])
		require.NoError(t, err)
		require.NoError(t, other.RemoveNode(ctx, "gone"))
		require.Eventually(t, func() bool {
			_, err := s.Authenticate(ctx, hash[:])
			return errors.Is(err, edgeindex.ErrNotFound)
		}, 10*authFresh, authFresh/10)
	})
}

// TestAuthMemory: a known token is answered from memory even when the
// database cannot be read, and its re-read keeps it fresh.
func TestAuthMemory(t *testing.T) {
	t.Parallel()
	openEach(t, func(t *testing.T, _ string, s *Store) {
		ctx := t.Context()
		hash := sha256.Sum256([]byte("memory"))
		_, err := s.AddNode(ctx, "kept", hash[:])
		require.NoError(t, err)
		_, err = s.Authenticate(ctx, hash[:])
		require.NoError(t, err)
		s.refreshAuth(ctx)
		s.authMu.Lock()
		e := s.auth[string(hash[:])]
		s.authMu.Unlock()
		require.Equal(t, "kept", e.row.Name, "the re-read kept the token")

		done, cancel := context.WithCancel(ctx)
		cancel()
		n, err := s.Authenticate(done, hash[:])
		require.NoError(t, err, "no read: a done context does not matter")
		require.Equal(t, "kept", n.Name)
		_, err = s.Authenticate(done, []byte("unknown"))
		require.Error(t, err, "an unknown token is read, and the read fails")
		require.False(t, errors.Is(err, sql.ErrNoRows))
	})
}
