package sqlstore

import (
	"io/fs"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMigrationVersions(t *testing.T) {
	t.Parallel()
	names, err := fs.Glob(migrations, "migrations/*.sql")
	require.NoError(t, err)
	versions, err := migrationVersions(names)
	require.NoError(t, err, "the embedded migrations are numbered 1, 2, 3...")
	require.Len(t, versions, len(names))

	for _, bad := range [][]string{
		{"m/0001_a.sql", "m/0001_b.sql"}, // a repeat
		{"m/0001_a.sql", "m/0003_c.sql"}, // a hole
		{"m/0002_b.sql"},                 // not from 1
		{"m/0001_a.sql", "m/init.sql"},   // no number
		{"m/0001_a.sql", "m/0002b.sql"},  // no underscore
	} {
		_, err := migrationVersions(bad)
		require.Error(t, err, "%v", bad)
	}
	v, err := migrationVersions([]string{"m/0002_b.sql", "m/0001_a.sql"})
	require.NoError(t, err)
	require.Equal(t, []int{1, 2}, v)
}

func TestForDialect(t *testing.T) {
	t.Parallel()
	body := "A;\n-- dialect: postgres\nP;\n-- dialect: sqlite\nS;\n  -- dialect: all\nB;\n"
	require.Equal(t, "A;\nP;\nB;\n", forDialect(body, "postgres"))
	require.Equal(t, "A;\nS;\nB;\n", forDialect(body, "sqlite"))
	require.Equal(t, "A;\n", forDialect("A;\n-- dialect: other\nX;\n", "sqlite"), "a dialect no store is")
}
