package nntp_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/nntp"
	"github.com/edgeindex/edgeindex/nntp/nntptest"
	"github.com/edgeindex/edgeindex/overview"
)

// The hostile-provider cases of issue 17 at the Source: each misbehaviour
// of nntptest ends in a clear error, in bounded time and memory. Tests that
// measure the heap are not parallel: parallel tests run only after every
// sequential one has ended, so the heap is theirs.

// heapPeak samples the live heap while fn runs and returns its peak above
// the heap before fn.
func heapPeak(t *testing.T, fn func()) uint64 {
	t.Helper()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > base && ms.HeapAlloc-base > peak.Load() {
				peak.Store(ms.HeapAlloc - base)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	fn()
	close(done)
	wg.Wait()
	return peak.Load()
}

// TestFetchTrickleCut: a server that sends a byte every 20ms, well inside
// the read timeout, never finishes a response; the fetch is cut by its
// deadline, says how long it ran and what it read, and is counted.
func TestFetchTrickleCut(t *testing.T) {
	t.Parallel()
	for _, compress := range []bool{false, true} {
		srv := serve(t, nntptest.Config{Trickle: 20 * time.Millisecond, Compress: compress, Groups: oneGroup(nntptest.Lines(testGroup, 1, 100))})
		src := open(t, srv, func(c *nntp.Config) {
			c.Timeout, c.MinRate, c.Compress = 300*time.Millisecond, 1<<20, gzipIf(compress)
		})
		_, err := src.Fetch(ctxT(t), testGroup, span(1, 100))
		require.ErrorIs(t, err, nntp.ErrDeadline, "compress %t", compress)
		require.Contains(t, err.Error(), "bytes read")
		st := src.Stats()
		require.Equal(t, int64(1), st.CutDeadline)
		require.Zero(t, st.InFlight, "the cut fetch is no longer in flight")

		srv.Update(func(c *nntptest.Config) { c.Trickle = 0 })
		_, err = src.Fetch(ctxT(t), testGroup, span(1, 100))
		require.NoError(t, err, "the cut connection was dropped")
	}
}

// TestFetchDeadlineFromSpan: the deadline grows with the span, at the
// floor rate: a span of 1000 articles at 100 KiB/s may take 10 s more
// than Timeout, so a server 20 ms a line (2 s in all) is not cut.
func TestFetchDeadlineFromSpan(t *testing.T) {
	t.Parallel()
	srv := serve(t, nntptest.Config{LineDelay: 2 * time.Millisecond, Groups: oneGroup(nntptest.Lines(testGroup, 1, 1000))})
	src := open(t, srv, func(c *nntp.Config) { c.Timeout, c.MinRate = 500*time.Millisecond, 100<<10 })
	_, err := src.Fetch(ctxT(t), testGroup, span(1, 1000))
	require.NoError(t, err)
}

// TestWatermarksBesideStuckFetches: with every fetch stuck on a trickling
// server, GROUP still gets a connection of the budget at once.
func TestWatermarksBesideStuckFetches(t *testing.T) {
	t.Parallel()
	const stuck = "alt.stuck"
	srv := serve(t, nntptest.Config{Trickle: 50 * time.Millisecond, Only: []string{stuck}, Groups: []nntptest.Group{
		{Name: stuck, Lines: nntptest.Lines(stuck, 1, 100)},
		{Name: testGroup, Lines: nntptest.Lines(testGroup, 1, 100)},
	}})
	src := open(t, srv, func(c *nntp.Config) { c.MaxConns, c.Timeout = 3, 10*time.Second })
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() { src.Fetch(ctx, stuck, span(1, 100)) })
	}
	defer func() { cancel(); wg.Wait() }()
	require.Eventually(t, func() bool { return src.Stats().InFlight == 2 && srv.Stats().Commands["OVER"] == 2 },
		10*time.Second, 5*time.Millisecond, "two fetches hold connections, four wait")
	wctx, wcancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer wcancel()
	low, high, err := src.Watermarks(wctx, testGroup)
	require.NoError(t, err, "GROUP waited behind the stuck fetches")
	require.Equal(t, [2]int64{1, 100}, [2]int64{low, high})
	require.LessOrEqual(t, srv.Stats().MaxOpen, 3, "the budget holds")
	require.Greater(t, src.Stats().Oldest, time.Duration(0))
}

// TestFetchEndlessLongLines: lines too long to keep, forever, are cut by
// the byte bound, with the heap flat.
func TestFetchEndlessLongLines(t *testing.T) {
	for _, compress := range []bool{false, true} {
		srv := serve(t, nntptest.Config{EndlessLong: 2 << 20, Compress: compress, Groups: oneGroup(nntptest.Lines(testGroup, 1, 10))})
		src := open(t, srv, func(c *nntp.Config) { c.MaxFetchBytes, c.Compress = 24<<20, gzipIf(compress) })
		var err error
		peak := heapPeak(t, func() { _, err = src.Fetch(ctxT(t), testGroup, span(1, 10)) })
		require.ErrorIs(t, err, nntp.ErrChunkTooLarge, "compress %t", compress)
		require.Less(t, peak, uint64(16<<20), "compress %t: heap peak %d", compress, peak)
		require.Equal(t, int64(1), src.Stats().CutTooLarge)
	}
}

// TestFetchEndlessOutOfSpan: out-of-span lines, forever, count against
// the drop limit as they arrive.
func TestFetchEndlessOutOfSpan(t *testing.T) {
	t.Parallel()
	srv := serve(t, nntptest.Config{EndlessLong: 300, Groups: oneGroup(nntptest.Lines(testGroup, 1, 10))})
	src := open(t, srv, nil)
	_, err := src.Fetch(ctxT(t), testGroup, span(1, 10))
	require.ErrorIs(t, err, nntp.ErrProtocol)
}

// TestHugeChunkRefused: 200 in-span lines of about 1 MiB, each under the
// line limit, would make a chunk past the frame limit; the source refuses
// it as a bad chunk, holding no more than its bound.
func TestHugeChunkRefused(t *testing.T) {
	srv := serve(t, nntptest.Config{HugeLines: overview.MaxLineBytes - 100, Groups: oneGroup(nntptest.Lines(testGroup, 1, 200))})
	src := open(t, srv, nil)
	var err error
	peak := heapPeak(t, func() { _, err = src.Fetch(ctxT(t), testGroup, span(1, 200)) })
	require.ErrorIs(t, err, nntp.ErrChunkTooLarge)
	require.ErrorIs(t, err, overview.ErrBadChunk, "the range counts a corrupt attempt")
	require.Less(t, peak, uint64(3*nntp.DefaultMaxChunkBytes), "heap peak %d", peak)
	t.Logf("heap peak %d MiB", peak>>20)

	// A lower bound, set in the URL, holds too; a chunk under it is served.
	small := open(t, srv, func(c *nntp.Config) { c.MaxChunkBytes = 4 << 20 })
	_, err = small.Fetch(ctxT(t), testGroup, span(1, 200))
	require.ErrorIs(t, err, nntp.ErrTooLarge)
	chunk, err := small.Fetch(ctxT(t), testGroup, span(1, 3))
	require.NoError(t, err)
	n := 0
	require.NoError(t, overview.ReadChunk(chunk, func(overview.Overview) error { n++; return nil }))
	require.Equal(t, 3, n, "the three huge lines, each under the line limit")
}

// TestCapabilitiesBounded: a CAPABILITIES list of huge lines, or of too
// many, is refused as soon as it passes a bound, never held whole.
func TestCapabilitiesBounded(t *testing.T) {
	cases := []struct {
		name         string
		lines, bytes int
	}{
		{"huge lines", 200, 1000 << 10},
		{"many lines", 5000, 10},
		{"many bytes", 200, 4000},
	}
	for _, c := range cases {
		srv := serve(t, nntptest.Config{CapLines: c.lines, CapLineBytes: c.bytes})
		src := open(t, srv, nil)
		var err error
		peak := heapPeak(t, func() { err = src.Check(ctxT(t)) })
		require.ErrorIs(t, err, nntp.ErrTooLarge, c.name)
		require.NotErrorIs(t, err, overview.ErrBadChunk, "%s: a bad list says nothing of a span", c.name)
		require.Contains(t, err.Error(), "CAPABILITIES", c.name)
		require.Less(t, peak, uint64(8<<20), "%s: heap peak %d", c.name, peak)
	}
	// A long list within the bounds is fine.
	srv := serve(t, nntptest.Config{CapLines: 100, CapLineBytes: 200})
	require.NoError(t, open(t, srv, nil).Check(ctxT(t)))
}

// TestTrailingCompressed: data after the terminator inside a compressed
// response is an error at its first byte, never inflated to its end.
func TestTrailingCompressed(t *testing.T) {
	t.Parallel()
	for _, gz := range []bool{false, true} {
		srv := serve(t, nntptest.Config{Compress: true, Gzip: gz, TrailingZeros: 8 << 30, Groups: oneGroup(nntptest.Lines(testGroup, 1, 10))})
		src := open(t, srv, func(c *nntp.Config) { c.Compress = nntp.CompressGzip })
		_, err := src.Fetch(ctxT(t), testGroup, span(1, 10))
		require.ErrorIs(t, err, nntp.ErrProtocol, "gzip %t", gz)
		require.Contains(t, err.Error(), "after the terminator")
		require.False(t, errors.Is(err, context.DeadlineExceeded), "gzip %t: %v", gz, err)

		srv.Update(func(c *nntptest.Config) { c.TrailingZeros = 0 })
		_, err = src.Fetch(ctxT(t), testGroup, span(1, 10))
		require.NoError(t, err, "gzip %t", gz)
	}
}

// TestCloseQuitBounded: a server that never answers QUIT holds Close for
// at most a second a connection, not a read timeout, however long that is.
func TestCloseQuitBounded(t *testing.T) {
	t.Parallel()
	srv := serve(t, nntptest.Config{StallQuit: true, Groups: oneGroup(nntptest.Lines(testGroup, 1, 10))})
	src := open(t, srv, func(c *nntp.Config) { c.Timeout = time.Minute })
	_, err := src.Fetch(ctxT(t), testGroup, span(1, 10))
	require.NoError(t, err)
	closed := make(chan struct{})
	go func() { src.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("Close waited on QUIT for the read timeout")
	}
}

// TestHandshakeDeadline: a greeting that trickles a byte every 20ms, well
// inside the read timeout, fails the dial within Timeout for the whole
// handshake, not 430 read timeouts.
func TestHandshakeDeadline(t *testing.T) {
	t.Parallel()
	srv := serve(t, nntptest.Config{Trickle: 20 * time.Millisecond, TrickleGreeting: true})
	src := open(t, srv, func(c *nntp.Config) { c.Timeout = 500 * time.Millisecond })
	err := src.Check(ctxT(t))
	require.ErrorIs(t, err, nntp.ErrDeadline)
	require.Contains(t, err.Error(), "greeting")
}
