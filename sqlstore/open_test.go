package sqlstore_test

import (
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
