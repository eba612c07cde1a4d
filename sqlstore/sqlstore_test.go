package sqlstore_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/edgeindex/edgeindex/internal/pgtest"
	"github.com/edgeindex/edgeindex/sqlstore"
	"github.com/edgeindex/edgeindex/storetest"
)

func TestMain(m *testing.M) {
	code := pgtest.Main(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}

// backends opens a new, empty store of each kind. Subtests are named after
// the backend: .../sqlite/... and .../postgres/...
var backends = []struct {
	name string
	url  func(t testing.TB) string
}{
	{"sqlite", func(t testing.TB) string { return "sqlite://" + filepath.Join(t.TempDir(), "edgeindex.db") }},
	{"postgres", pgtest.URL},
}

func opener(url func(testing.TB) string) storetest.Open {
	return func(t *testing.T, now func() time.Time) storetest.Backend {
		return open(t, url(t), sqlstore.Config{Now: now})
	}
}

func open(t testing.TB, url string, cfg sqlstore.Config) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.Open(t.Context(), url, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			storetest.Run(t, opener(b.url))
		})
	}
}

func TestConcurrent(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			storetest.RunConcurrent(t, opener(b.url), storetest.ConcurrentConfig{})
		})
	}
}

func TestFencingRace(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			storetest.RunFencingRace(t, opener(b.url))
		})
	}
}
