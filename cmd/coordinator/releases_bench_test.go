package main

import (
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// BenchmarkReleases checks that release building keeps up with the
// pipeline. It runs the demo once (200,000 synthetic articles, SQLite,
// four collating workers over loopback HTTP) and reports its items/s: the
// items stored, over the time from the first worker's start to the last
// range done. Then, on the demo's own database, it builds releases from
// the whole results feed, again and again from an empty release store,
// and reports the builder's items/s and the ratio (the target: 2×):
//
//	go test -run '^$' -bench Releases -benchtime 5x ./cmd/coordinator/
func BenchmarkReleases(b *testing.B) {
	dir := b.TempDir()
	m := NewMain(io.Discard, io.Discard)
	res, err := m.runDemo(b.Context(), dir, benchArticles, 4, 10_000, io.Discard, nil)
	m.Close()
	require.NoError(b, err)
	demo := float64(res.Items) / res.Elapsed.Seconds()

	store, err := sqlstore.Open(b.Context(), "sqlite://"+filepath.Join(dir, "edgeindex.db"), sqlstore.Config{})
	require.NoError(b, err)
	defer store.Close()
	var building time.Duration
	var items int64
	for b.Loop() {
		for _, table := range []string{"release_files", "release_groups", "releases", "feed_cursors"} {
			_, err := store.DB().Exec("DELETE FROM " + table)
			require.NoError(b, err)
		}
		bld, err := release.NewBuilder(release.Config{Store: store})
		require.NoError(b, err)
		start := time.Now()
		n, err := bld.Pass(b.Context())
		building += time.Since(start)
		require.NoError(b, err)
		require.Equal(b, res.Items, n, "the builder consumed the whole feed")
		items += n
	}
	rate := float64(items) / building.Seconds()
	b.ReportMetric(demo, "demo-items/s")
	b.ReportMetric(rate, "builder-items/s")
	b.ReportMetric(rate/demo, "x-demo")
}
