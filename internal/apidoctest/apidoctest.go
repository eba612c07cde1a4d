package apidoctest

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// route is a route as docs/api.md names it: a method and a path, in a
// heading ("### POST /v1/lease → ...") or in bold ("**GET /v1/fleet**"),
// the path ending at its optional part ("[?then=lease]") or its query.
var route = regexp.MustCompile("(?m)(?:^#+ |\\*\\*)(GET|POST|PUT|DELETE|PATCH) (/[^\\s\\[?*`]*)")

// Doc returns docs/api.md's text.
func Doc(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	require.True(t, ok, "the test-support package's own path")
	doc, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "docs", "api.md"))
	require.NoError(t, err)
	return string(doc)
}

// Before returns the text of docs/api.md before its part titled title
// ("## title").
func Before(t testing.TB, title string) string {
	t.Helper()
	text, _, found := strings.Cut(Doc(t), "\n## "+title)
	require.True(t, found, "docs/api.md has a %s part", title)
	return text
}

// Part returns the text of docs/api.md's part titled title ("## title"),
// up to the next part.
func Part(t testing.TB, title string) string {
	t.Helper()
	_, part, found := strings.Cut(Doc(t), "\n## "+title)
	require.True(t, found, "docs/api.md has a %s part", title)
	part, _, _ = strings.Cut(part, "\n## ")
	return part
}

// Routes returns the routes text names, each as "METHOD /path".
func Routes(text string) map[string]bool {
	named := map[string]bool{}
	for _, m := range route.FindAllStringSubmatch(text, -1) {
		named[m[1]+" "+m[2]] = true
	}
	return named
}
