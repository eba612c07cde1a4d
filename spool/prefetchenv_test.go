package spool_test

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/corpus"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/prefetch"
	"github.com/edgeindex/edgeindex/sources"
	"github.com/edgeindex/edgeindex/spool"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// This is a copy of the test environment of package prefetch, for
// TestPrefetchAfterCrash, which lives here because it needs spool.Crash,
// which only this package's tests have.

// prefetchEnv is a real SQLite store with ranges 1..50 (leased, capture
// off), 51..100 (pending), 101..150 (pending, capture), chunks of 10, a
// disk spool and a corpus. A range reported corrupt waits 1 ms.
type prefetchEnv struct {
	store  *sqlstore.Store
	spool  *spool.Disk
	corpus *corpus.Disk
	src    sources.ChunkSource
	leased lease.Lease
}

func newPrefetchEnv(t *testing.T) *prefetchEnv {
	t.Helper()
	ctx := t.Context()
	st, err := sqlstore.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "db"), sqlstore.Config{RetryDelay: time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	_, err = st.AddGroup(ctx, grouplease.Group{Name: "alt.test", RangeSize: 50, ChunkSize: 10})
	require.NoError(t, err)
	_, err = st.AddRanges(ctx, grouplease.NewRanges{Group: "alt.test", From: 1, To: 100})
	require.NoError(t, err)
	_, err = st.AddRanges(ctx, grouplease.NewRanges{Group: "alt.test", From: 101, To: 150, Capture: true})
	require.NoError(t, err)
	l, err := st.Grant(ctx, "w", time.Minute)
	require.NoError(t, err)
	sp, err := spool.Open(t.TempDir(), spool.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { sp.Close() })
	cp, err := corpus.Open(t.TempDir(), corpus.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { cp.Close() })
	src, err := sources.NewSynthetic(sources.SyntheticConfig{})
	require.NoError(t, err)
	return &prefetchEnv{store: st, spool: sp, corpus: cp, src: src, leased: l}
}

func (e *prefetchEnv) config(owner string) prefetch.Config {
	return prefetch.Config{Source: e.src, Spool: e.spool, Corpus: e.corpus, Claims: e.store, Targets: e.store,
		Owner: owner, Clock: &passClock{}}
}

// passClock is an injected clock whose waits pass at once; it records them.
type passClock struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (c *passClock) Now() time.Time { return time.Now() }

func (c *passClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	c.waits = append(c.waits, d)
	c.mu.Unlock()
	ch := make(chan time.Time, 1)
	ch <- time.Now()
	return ch
}
