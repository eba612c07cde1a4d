package sqlstore

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

// pgxURL keeps what a URL says, drops lib/pq's binary_parameters, and
// fills in the exec mode and lib/pq's sslmode=require where it says none.
func TestPgxURL(t *testing.T) {
	t.Setenv("PGSSLMODE", "")
	query := func(raw string) url.Values {
		u, err := url.Parse(pgxURL(raw))
		require.NoError(t, err)
		return u.Query()
	}
	q := query("postgres://u:p@db:5432/x?binary_parameters=yes&search_path=s")
	require.False(t, q.Has("binary_parameters"))
	require.Equal(t, "s", q.Get("search_path"))
	require.Equal(t, "cache_describe", q.Get("default_query_exec_mode"))
	require.Equal(t, "require", q.Get("sslmode"), "lib/pq's default, not pgx's prefer")

	q = query("postgres://db/x?sslmode=verify-full&default_query_exec_mode=cache_statement")
	require.Equal(t, "verify-full", q.Get("sslmode"))
	require.Equal(t, "cache_statement", q.Get("default_query_exec_mode"))

	t.Setenv("PGSSLMODE", "disable")
	require.False(t, query("postgres://db/x").Has("sslmode"), "PGSSLMODE is pgx's to read")

	require.Equal(t, "postgres://u:p@db:bad/x", pgxURL("postgres://u:p@db:bad/x"), "a bad URL is pgx's to report")
}
