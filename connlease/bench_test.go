package connlease_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/connlease"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/nntp"
	"github.com/edgeindex/edgeindex/nntp/nntptest"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// The benchmark's workload: chunks of benchChunk articles, each line
// delayed by benchLineDelay, so a fetch takes real time (some 5 ms) and
// the connections, not the CPU, bound the rate.
const (
	benchGroup     = "alt.binaries.bench"
	benchChunk     = 50
	benchArticles  = 200_000
	benchLineDelay = 100 * time.Microsecond
	benchConns     = 4
)

// BenchmarkConnectionBudget measures chunks fetched a second from a
// provider whose account allows 4 connections (the server refuses a fifth
// with 502), by prefetchers running as many fetches at once as their
// Source's MaxConns, as serve's does:
//
//   - one: one coordinator holding all 4, as before budgets (MaxConns 4,
//     so its fetches use 3 and keep one for GROUP);
//   - raw4: the physical limit, 4 connections all fetching (MaxConns 5,
//     fetches use 4, the server's limit bounds them);
//   - shared3: three coordinators, each with MaxConns 4, sharing a
//     connlease.SharedBudget of 4 in one SQLite database, each its own store
//     and holder as separate processes would be.
//
// Each reports chunks/s. The headline is shared3 / raw4, the share of the
// physical limit three coordinators reach through the budget (target
// 0.8 or more); one shows what a lone coordinator, keeping a connection
// for GROUP, reaches.
func BenchmarkConnectionBudget(b *testing.B) {
	srv, err := nntptest.New(nntptest.Config{MaxConns: benchConns, MaxConnsReply: 502, LineDelay: benchLineDelay,
		Groups: []nntptest.Group{{Name: benchGroup, Lines: nntptest.Lines(benchGroup, 1, benchArticles)}}})
	require.NoError(b, err)
	defer srv.Close()
	open := func(b *testing.B, maxConns int, budget connlease.Budget) *nntp.Source {
		cfg, err := nntp.ParseURL(srv.URL())
		require.NoError(b, err)
		cfg.MaxConns, cfg.Budget = maxConns, budget
		src, err := nntp.New(cfg)
		require.NoError(b, err)
		return src
	}
	b.Run("one", func(b *testing.B) {
		src := open(b, benchConns, nil)
		defer src.Close()
		benchFetch(b, srv, []*nntp.Source{src})
	})
	b.Run("raw4", func(b *testing.B) {
		src := open(b, benchConns+1, nil)
		defer src.Close()
		benchFetch(b, srv, []*nntp.Source{src})
	})
	b.Run("shared3", func(b *testing.B) {
		path := "sqlite://" + filepath.Join(b.TempDir(), "x.db")
		var srcs []*nntp.Source
		for i := range 3 {
			store, err := sqlstore.Open(b.Context(), path, sqlstore.Config{})
			require.NoError(b, err)
			defer store.Close()
			bud, err := connlease.New(connlease.Config{Store: store, Size: benchConns, Holder: fmt.Sprintf("c%d", i)})
			require.NoError(b, err)
			defer bud.Close()
			src := open(b, benchConns, bud)
			defer src.Close()
			srcs = append(srcs, src)
		}
		benchFetch(b, srv, srcs)
	})
}

// benchFetch fetches b.N chunks through srcs, each running MaxConns
// fetches at once, the chunks taken in turn from one counter.
func benchFetch(b *testing.B, srv *nntptest.Server, srcs []*nntp.Source) {
	before := srv.Stats().Refused
	var next atomic.Int64
	fetch := func(ctx context.Context, src *nntp.Source, n int64) error {
		for {
			i := next.Add(1) - 1
			if i >= n {
				return nil
			}
			from := (i*benchChunk)%(benchArticles-benchChunk) + 1
			if _, err := src.Fetch(ctx, benchGroup, lease.Span{From: from, To: from + benchChunk - 1}); err != nil {
				return err
			}
		}
	}
	run := func(n int64) time.Duration {
		next.Store(0)
		start := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for _, src := range srcs {
			for range src.MaxConns() {
				wg.Go(func() { errs <- fetch(b.Context(), src, n) })
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(b, err)
		}
		return time.Since(start)
	}
	run(int64(8 * len(srcs))) // dial, and settle who holds the slots
	b.ResetTimer()
	took := run(int64(b.N))
	b.StopTimer()
	b.ReportMetric(float64(b.N)/took.Seconds(), "chunks/s")
	require.Equal(b, before, srv.Stats().Refused, "the server refused a connection")
	require.LessOrEqual(b, srv.Stats().MaxOpen, benchConns)
}
