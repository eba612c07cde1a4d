package sqlstore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/internal/pgtest"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// TestOpenBadURLHidesPassword: a database URL that does not parse, or a
// key=value DSN, is refused without its password in the error: a driver's
// own parse error may hold the whole URL.
func TestOpenBadURLHidesPassword(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		"postgres://u:s3cret@127.0.0.1:bad/db",
		"postgres://u:s3%zzcret@127.0.0.1/db",
		"host=127.0.0.1 password=s3cret",
		"postgres://u:s3cret@127.0.0.1:99999999/db", // url.Parse takes these; pgx does not
		"postgres://u:s3cret@127.0.0.1/db?sslmode=bogus",
		"postgres://u:s3cret@127.0.0.1/db?default_query_exec_mode=fast",
	} {
		_, err := sqlstore.Open(t.Context(), raw, sqlstore.Config{})
		require.ErrorIs(t, err, sqlstore.ErrUnsupportedURL, raw)
		require.NotContains(t, err.Error(), "s3", raw)
	}
}

// TestOpenSQLiteMakesAPrivateDirectory: the directories Open makes for a
// SQLite database are the owner's only, as the database holds the hashes
// of node tokens and API keys, and the users.
func TestOpenSQLiteMakesAPrivateDirectory(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "var", "edgeindex")
	s, err := sqlstore.Open(t.Context(), "sqlite://"+filepath.Join(dir, "db"), sqlstore.Config{})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	for _, d := range []string{dir, filepath.Dir(dir)} {
		info, err := os.Stat(d)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o700), info.Mode().Perm(), d)
	}
}

// TestOpenRefuseForeign: with RefuseForeign, a database that holds tables
// or views but none of edgeindex's (another tool's schema_migrations is
// not edgeindex's) is refused and gets nothing; an empty one, and one
// edgeindex made, open. Without it, edgeindex's tables go beside.
func TestOpenRefuseForeign(t *testing.T) {
	t.Parallel()
	refuse := sqlstore.Config{RefuseForeign: true}
	foreign := map[string][]string{
		"a table":    {"CREATE TABLE invoices (id INTEGER PRIMARY KEY)"},
		"views only": {"CREATE VIEW invoices AS SELECT 1 AS id"},
		"another tool's schema_migrations": {
			"CREATE TABLE invoices (id INTEGER PRIMARY KEY)",
			"CREATE TABLE schema_migrations (version VARCHAR(255) PRIMARY KEY)", // Rails's
			"INSERT INTO schema_migrations VALUES ('20240101000000')",
		},
	}
	for _, b := range pgtest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			empty := b.URL(t)
			for range 2 { // made, then edgeindex's
				s, err := sqlstore.Open(t.Context(), empty, refuse)
				require.NoError(t, err)
				require.NoError(t, s.Close())
			}
			for name, setup := range foreign {
				u := b.URL(t)
				db, relations := rawDB(t, u)
				for _, q := range setup {
					_, err := db.ExecContext(t.Context(), q)
					require.NoError(t, err, name)
				}
				before := relations()
				_, err := sqlstore.Open(t.Context(), u, refuse)
				require.ErrorIs(t, err, sqlstore.ErrForeign, name)
				require.ErrorIs(t, err, edgeindex.ErrNotFound, name)
				require.Equal(t, before, relations(), "%s: nothing was made", name)
			}

			u := b.URL(t)
			db, relations := rawDB(t, u)
			_, err := db.ExecContext(t.Context(), foreign["a table"][0])
			require.NoError(t, err)
			s, err := sqlstore.Open(t.Context(), u, sqlstore.Config{})
			require.NoError(t, err, "without RefuseForeign edgeindex's tables go beside")
			require.NoError(t, s.Close())
			require.Contains(t, relations(), "schema_migrations")
			s, err = sqlstore.Open(t.Context(), u, refuse)
			require.NoError(t, err, "then the database is edgeindex's too")
			require.NoError(t, s.Close())
		})
	}
}

// rawDB opens the database of a store URL with its driver alone, and
// returns it with a func that lists its tables and views.
func rawDB(t *testing.T, storeURL string) (*sqlx.DB, func() []string) {
	driver, dsn := "pgx", storeURL
	q := `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY 1`
	if path, ok := strings.CutPrefix(storeURL, "sqlite://"); ok {
		driver, dsn = "sqlite", "file:"+path
		q = "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') ORDER BY 1"
	}
	db, err := sqlx.Open(driver, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	return db, func() []string {
		var names []string
		require.NoError(t, db.SelectContext(t.Context(), &names, q))
		return names
	}
}

// TestCancelledQueryEndsOnServer: a query whose context ends stops on
// the server too (a cancel request), rather than running on after its
// caller has gone: a client that starts searches and leaves would
// otherwise keep more of them running than the pool has connections.
func TestCancelledQueryEndsOnServer(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.URL(t), sqlstore.Config{})
	tag := fmt.Sprintf("cancelled-%d", time.Now().UnixNano())
	running := func() bool {
		var n int
		require.NoError(t, s.DB().GetContext(t.Context(), &n,
			"SELECT COUNT(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%' || $1", tag))
		return n > 0
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := s.DB().ExecContext(ctx, "SELECT pg_sleep(60) -- "+tag)
		done <- err
	}()
	require.Eventually(t, running, 5*time.Second, 10*time.Millisecond, "the query runs")
	cancel()
	require.Error(t, <-done)
	require.Eventually(t, func() bool { return !running() }, 5*time.Second, 20*time.Millisecond,
		"the cancelled query still runs on the server")
	var one int
	require.NoError(t, s.DB().GetContext(t.Context(), &one, "SELECT 1"), "the pool works on")
}
