package fleet

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/internal/apidoctest"
)

// TestRoutesDocumented: the reader serves every route the Fleet reader
// part of docs/api.md names, and that part names every route it serves.
func TestRoutesDocumented(t *testing.T) {
	t.Parallel()
	named := apidoctest.Routes(apidoctest.Part(t, "Fleet reader"))
	served := map[string]bool{"GET /readyz": true} // fleetcache.Server's own
	var c *Coordinators
	for _, r := range c.routes() {
		served["GET "+r.Path] = true
	}
	for route := range served {
		require.True(t, named[route], "the route %s is not in docs/api.md's Fleet reader part", route)
	}
	for route := range named {
		require.True(t, served[route], "docs/api.md names %s, which the fleet reader does not serve", route)
	}
}
