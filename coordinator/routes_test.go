package coordinator_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/blobstore"
	"github.com/edgeindex/edgeindex/coordinator"
	"github.com/edgeindex/edgeindex/internal/apidoctest"
	"github.com/edgeindex/edgeindex/spool"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// TestRoutesDocumented: every pattern on the coordinator's mux (the node
// API, the admin API, the probes and /metrics) is a route docs/api.md
// names, method and path alike.
func TestRoutesDocumented(t *testing.T) {
	t.Parallel()
	// The coordinator's part: the fleet reader's and the front door's
	// routes, named after it, are other servers'.
	named := apidoctest.Routes(apidoctest.Before(t, "Fleet reader"))
	dir := t.TempDir()
	store, err := sqlstore.Open(t.Context(), "sqlite://"+filepath.Join(dir, "edgeindex.db"), sqlstore.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	sp, err := spool.Open(filepath.Join(dir, "spool"), spool.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { sp.Close() })
	snaps, err := blobstore.OpenDir(filepath.Join(dir, "snapshots"))
	require.NoError(t, err)
	svc, err := coordinator.NewService(coordinator.Config{Store: store, Spool: sp, Snapshots: snaps, Metrics: coordinator.NewMetrics(nil)})
	require.NoError(t, err)
	patterns := coordinator.Patterns(coordinator.NewServer(svc))
	require.Len(t, patterns, 28, "the node API's 17 routes, the admin API's 8, /healthz, /readyz, /metrics")
	served := map[string]bool{}
	for _, p := range patterns {
		require.True(t, named[p], "the route %q is not in docs/api.md", p)
		served[p] = true
	}
	for route := range named {
		require.True(t, served[route], "docs/api.md names %q, which the coordinator does not serve", route)
	}
}
