package coordinator_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/blobstore"
	"github.com/edgeindex/edgeindex/coordinator"
	"github.com/edgeindex/edgeindex/spool"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// docRoute is a route as docs/api.md names it: a method and a path, in a
// heading ("### POST /v1/lease → ...") or in bold ("**GET /v1/fleet**"),
// the path ending at its optional part ("[?then=lease]") or its query.
var docRoute = regexp.MustCompile("(?m)(?:^#+ |\\*\\*)(GET|POST|PUT|DELETE|PATCH) (/[^\\s\\[?*`]*)")

// TestRoutesDocumented: every pattern on the coordinator's mux (the node
// API, the admin API, the probes and /metrics) is a route docs/api.md
// names, method and path alike.
func TestRoutesDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "docs", "api.md"))
	require.NoError(t, err)
	// The coordinator's part: the fleet reader's and the front door's
	// routes, named after it, are other servers'.
	own, _, found := strings.Cut(string(doc), "\n## Fleet reader")
	require.True(t, found, "docs/api.md has a Fleet reader part")
	named := map[string]bool{}
	for _, m := range docRoute.FindAllStringSubmatch(own, -1) {
		named[m[1]+" "+m[2]] = true
	}
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
	require.Len(t, patterns, 24, "the node API's 13 routes, the admin API's 8, /healthz, /readyz, /metrics")
	served := map[string]bool{}
	for _, p := range patterns {
		require.True(t, named[p], "the route %q is not in docs/api.md", p)
		served[p] = true
	}
	for route := range named {
		require.True(t, served[route], "docs/api.md names %q, which the coordinator does not serve", route)
	}
}
