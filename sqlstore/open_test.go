package sqlstore_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/internal/pgtest"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// TestOpenBadURLHidesPassword: a database URL that does not parse, or a
// key=value DSN, is refused without its password in the error: lib/pq's
// own parse error holds the whole URL.
func TestOpenBadURLHidesPassword(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		"postgres://u:s3cret@127.0.0.1:bad/db",
		"postgres://u:s3%zzcret@127.0.0.1/db",
		"host=127.0.0.1 password=s3cret",
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
// but none of edgeindex's is refused and gets no table; an empty one, and
// one edgeindex made, open. Without it, edgeindex's tables go beside.
func TestOpenRefuseForeign(t *testing.T) {
	t.Parallel()
	refuse := sqlstore.Config{RefuseForeign: true}
	for _, b := range pgtest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			empty := b.URL(t)
			for range 2 { // made, then edgeindex's
				s, err := sqlstore.Open(t.Context(), empty, refuse)
				require.NoError(t, err)
				require.NoError(t, s.Close())
			}

			foreign := b.URL(t)
			driver, dsn := "postgres", foreign
			if path, ok := strings.CutPrefix(foreign, "sqlite://"); ok {
				driver, dsn = "sqlite", "file:"+path
			}
			db, err := sqlx.Open(driver, dsn)
			require.NoError(t, err)
			defer db.Close()
			_, err = db.ExecContext(t.Context(), "CREATE TABLE invoices (id INTEGER PRIMARY KEY)")
			require.NoError(t, err)
			tables := func() []string {
				q := "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1"
				if driver == "sqlite" {
					q = "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY 1"
				}
				var names []string
				require.NoError(t, db.SelectContext(t.Context(), &names, q))
				return names
			}

			_, err = sqlstore.Open(t.Context(), foreign, refuse)
			require.ErrorIs(t, err, sqlstore.ErrForeign)
			require.ErrorIs(t, err, edgeindex.ErrNotFound)
			require.Equal(t, []string{"invoices"}, tables(), "nothing was made")

			s, err := sqlstore.Open(t.Context(), foreign, sqlstore.Config{})
			require.NoError(t, err, "without RefuseForeign edgeindex's tables go beside")
			require.NoError(t, s.Close())
			require.Contains(t, tables(), "schema_migrations")
			s, err = sqlstore.Open(t.Context(), foreign, refuse)
			require.NoError(t, err, "then the database is edgeindex's too")
			require.NoError(t, s.Close())
		})
	}
}
