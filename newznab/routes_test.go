package newznab

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// docRoute is a route as docs/api.md's Front door part names it, in bold
// ("**GET /details/{id}**"), the path ending at its query.
var docRoute = regexp.MustCompile(`\*\*(GET|POST) (/[^\s\[?*` + "`" + `]*)`)

// TestRoutesDocumented: every route of the Handler's mux is one the Front
// door part of docs/api.md names, and it names no other. A pattern without
// a method (/api, /api/) answers what the named routes' paths do not take,
// which the part says in words.
func TestRoutesDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "docs", "api.md"))
	require.NoError(t, err)
	_, part, found := strings.Cut(string(doc), "\n## Front door (Newznab)")
	require.True(t, found, "docs/api.md has a Front door part")
	part, _, _ = strings.Cut(part, "\n## ")
	named := map[string]bool{}
	for _, m := range docRoute.FindAllStringSubmatch(part, -1) {
		named[m[1]+" "+m[2]] = true
	}
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
