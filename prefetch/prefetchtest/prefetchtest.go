// Package prefetchtest is the test environment of the prefetcher's tests,
// shared by package prefetch's and package spool's (whose crash test needs
// spool's own test hooks): a real SQLite store with ranges to fetch, a disk
// spool, a corpus, the synthetic source, and a clock whose waits pass at
// once.
package prefetchtest

import (
	"path/filepath"
	"slices"
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

// Env is a real SQLite store with ranges 1..50 (leased, capture off),
// 51..100 (pending), 101..150 (pending, capture), chunks of 10, a disk
// spool and a corpus. A range reported corrupt waits 1 ms.
type Env struct {
	Store  *sqlstore.Store
	Spool  *spool.Disk
	Corpus *corpus.Disk
	Source sources.ChunkSource
	Leased lease.Lease
}

// NewEnv makes an Env, closed at the test's end.
func NewEnv(t testing.TB) *Env {
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
	return &Env{Store: st, Spool: sp, Corpus: cp, Source: src, Leased: l}
}

// Config is a prefetcher's Config over e for owner, on a PassClock.
func (e *Env) Config(owner string) prefetch.Config {
	return prefetch.Config{Source: e.Source, Spool: e.Spool, Corpus: e.Corpus, Claims: e.Store, Targets: e.Store,
		Owner: owner, Clock: &PassClock{}}
}

// PassClock is an injected clock whose waits pass at once; it records
// them.
type PassClock struct {
	mu    sync.Mutex
	waits []time.Duration
}

// Now is the wall clock's.
func (c *PassClock) Now() time.Time { return time.Now() }

// After records d and returns a channel that is ready at once.
func (c *PassClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	c.waits = append(c.waits, d)
	c.mu.Unlock()
	ch := make(chan time.Time, 1)
	ch <- time.Now()
	return ch
}

// Waits lists the waits asked for so far.
func (c *PassClock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.waits)
}
