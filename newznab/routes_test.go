package newznab

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/internal/apidoctest"
)

// TestRoutesDocumented: every route of the Handler's mux is one the Front
// door part of docs/api.md names, and it names no other. A pattern without
// a method (/api, /api/) answers what the named routes' paths do not take,
// which the part says in words.
func TestRoutesDocumented(t *testing.T) {
	t.Parallel()
	part := apidoctest.Part(t, "Front door (Newznab)")
	named := apidoctest.Routes(part)
	served := map[string]bool{}
	var h *Handler
	for _, r := range h.routes() {
		method, path, ok := strings.Cut(r.pattern, " ")
		if !ok {
			require.Contains(t, part, "`"+r.pattern, "the method-less pattern %q is described", r.pattern)
			continue
		}
		route := method + " " + strings.TrimSuffix(path, "{$}")
		require.True(t, named[route], "the route %q is not in docs/api.md's Front door part", route)
		served[route] = true
	}
	for route := range named {
		require.True(t, served[route], "docs/api.md names %q, which the Handler does not serve", route)
	}
}
