package fleet

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// docRoute is a route as docs/api.md's Fleet reader part names it, in
// bold ("**GET /v1/seat?key=...**"), the path ending at its query.
var docRoute = regexp.MustCompile(`\*\*GET (/[^\s\[?*` + "`" + `]*)`)

// TestRoutesDocumented: the reader serves every route the Fleet reader
// part of docs/api.md names, and that part names every route it serves.
func TestRoutesDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "docs", "api.md"))
	require.NoError(t, err)
	_, part, found := strings.Cut(string(doc), "\n## Fleet reader")
	require.True(t, found, "docs/api.md has a Fleet reader part")
	part, _, _ = strings.Cut(part, "\n## ")
	named := map[string]bool{}
	for _, m := range docRoute.FindAllStringSubmatch(part, -1) {
		named[m[1]] = true
	}
	served := map[string]bool{"/readyz": true} // fleetcache.Server's own
	var c *Coordinators
	for _, r := range c.routes() {
		served[r.Path] = true
	}
	for path := range served {
		require.True(t, named[path], "the route GET %s is not in docs/api.md's Fleet reader part", path)
	}
	for path := range named {
		require.True(t, served[path], "docs/api.md names GET %s, which the fleet reader does not serve", path)
	}
}
