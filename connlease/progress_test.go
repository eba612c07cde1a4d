package connlease_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/connlease"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/nntp"
	"github.com/edgeindex/edgeindex/nntp/nntptest"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// Three Sources sharing a budget of 4, each with three fetchers that keep
// their connections busy, all make progress: every Source completes its
// fetches while the others go on fetching, rather than one waiting until
// the others' connections go idle (they never do here). The server never
// refuses a connection.
func TestConnectionBudgetEverySourceProgresses(t *testing.T) {
	t.Parallel()
	srv, err := nntptest.New(nntptest.Config{MaxConns: benchConns, MaxConnsReply: 502, LineDelay: benchLineDelay,
		Groups: []nntptest.Group{{Name: benchGroup, Lines: nntptest.Lines(benchGroup, 1, 1000)}}})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	path := "sqlite://" + filepath.Join(t.TempDir(), "x.db")
	const sources, fetchers, want = 3, 3, 10
	var srcs []*nntp.Source
	for i := range sources {
		store, err := sqlstore.Open(t.Context(), path, sqlstore.Config{})
		require.NoError(t, err)
		t.Cleanup(func() { store.Close() })
		bud := newBudget(t, connlease.Config{Store: store, Size: benchConns, Holder: fmt.Sprintf("c%d", i)})
		cfg, err := nntp.ParseURL(srv.URL())
		require.NoError(t, err)
		cfg.MaxConns, cfg.Budget = fetchers+1, bud
		src, err := nntp.New(cfg)
		require.NoError(t, err)
		t.Cleanup(func() { src.Close() }) // before the Budget's Close: cleanups run last first
		srcs = append(srcs, src)
	}
	ctx := ctxT(t)
	var done [sources]atomic.Int64
	behind := func() bool { // some Source has fewer than want fetches
		for i := range done {
			if done[i].Load() < want {
				return true
			}
		}
		return false
	}
	var wg sync.WaitGroup
	for k, src := range srcs {
		for range fetchers {
			wg.Go(func() {
				for n := 0; behind(); n++ {
					from := int64(n*benchChunk%900 + 1)
					if _, err := src.Fetch(ctx, benchGroup, lease.Span{From: from, To: from + benchChunk - 1}); err != nil {
						if ctx.Err() == nil {
							t.Error(err)
						}
						return
					}
					done[k].Add(1)
				}
			})
		}
	}
	wg.Wait()
	for k := range done {
		require.GreaterOrEqual(t, done[k].Load(), int64(want), "source %d starved while the others fetched", k)
	}
	require.NoError(t, context.Cause(ctx))
	require.Zero(t, srv.Stats().Refused, "the server refused a connection")
}
