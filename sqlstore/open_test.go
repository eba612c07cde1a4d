package sqlstore_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

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
