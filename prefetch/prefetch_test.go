package prefetch_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/overview"
	"github.com/edgeindex/edgeindex/prefetch"
	"github.com/edgeindex/edgeindex/prefetch/prefetchtest"
	"github.com/edgeindex/edgeindex/sources"
	"github.com/edgeindex/edgeindex/spool"
	"github.com/edgeindex/edgeindex/sqlstore"
)

func TestPrefetchPass(t *testing.T) {
	t.Parallel()
	e := prefetchtest.NewEnv(t)
	p, err := prefetch.New(e.Config("c1"))
	require.NoError(t, err)
	n, err := p.Pass(t.Context())
	require.NoError(t, err)
	require.Equal(t, 15, n, "the leased range, then the pending ones")
	for _, span := range lease.Spans(1, 100, 10) {
		id := e.Leased.Range.ID
		if span.From > 50 {
			id++
		}
		require.True(t, e.Spool.Has(id, span), "%v", span)
	}
	for _, span := range lease.Spans(101, 150, 10) {
		require.True(t, e.Corpus.Has("alt.test", span), "capture ranges go to the corpus")
		require.False(t, e.Spool.Has(e.Leased.Range.ID+2, span))
	}
	// The data is the source's.
	want, err := e.Source.Fetch(t.Context(), "alt.test", lease.Span{From: 11, To: 20})
	require.NoError(t, err)
	got, err := e.Spool.Read(e.Leased.Range.ID, lease.Span{From: 11, To: 20})
	require.NoError(t, err)
	require.Equal(t, want, got)

	n, err = p.Pass(t.Context())
	require.NoError(t, err)
	require.Zero(t, n, "nothing is fetched twice")

	// Another coordinator sharing the database fetches nothing already fetched.
	other, err := prefetch.New(e.Config("c2"))
	require.NoError(t, err)
	require.NoError(t, e.Spool.DropChunk(e.Leased.Range.ID, lease.Span{From: 1, To: 10}))
	n, err = other.Pass(t.Context())
	require.NoError(t, err)
	require.Zero(t, n, "c1 holds the claim of every chunk")
	// A chunk reported corrupt is fetched again, once its range's retry
	// delay has passed.
	_, err = e.Store.Corrupt(t.Context(), e.Leased.Range.ID, lease.Fence{Node: "w", Token: e.Leased.Token}, 1, "bad gzip")
	require.NoError(t, err)
	time.Sleep(5 * time.Millisecond)
	n, err = other.Pass(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.True(t, e.Spool.Has(e.Leased.Range.ID, lease.Span{From: 1, To: 10}))
}

func TestPrefetchFromNext(t *testing.T) {
	t.Parallel()
	e := prefetchtest.NewEnv(t)
	ctx := t.Context()
	_, err := e.Store.Put(ctx, e.Leased.Range.ID, lease.Fence{Node: "w", Token: e.Leased.Token},
		batchOf(1, 25))
	require.NoError(t, err)
	cfg := e.Config("c1")
	cfg.Lookahead = -1 // validate refuses this
	_, err = prefetch.New(cfg)
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
	cfg = e.Config("c1")
	cfg.Targets = onlyLeased{e.Store}
	p, err := prefetch.New(cfg)
	require.NoError(t, err)
	n, err := p.Pass(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, n, "chunks from the one that holds next (21-30) to the end")
	require.False(t, e.Spool.Has(e.Leased.Range.ID, lease.Span{From: 11, To: 20}))
}

type onlyLeased struct{ t prefetch.Targets }

func (o onlyLeased) PrefetchTargets(ctx context.Context, _ int) ([]prefetch.Target, error) {
	return o.t.PrefetchTargets(ctx, 0)
}

func TestPrefetchRetries(t *testing.T) {
	t.Parallel()
	e := prefetchtest.NewEnv(t)
	var calls atomic.Int64
	flaky := sources.Funcs{FetchFunc: func(ctx context.Context, g string, s lease.Span) ([]byte, error) {
		if s.From == 1 && calls.Add(1) <= 2 {
			return nil, errors.New("connection reset")
		}
		return e.Source.Fetch(ctx, g, s)
	}}
	clk := &prefetchtest.PassClock{}
	cfg := e.Config("c1")
	cfg.Source = flaky
	cfg.Targets = onlyLeased{e.Store}
	cfg.Backoff, cfg.MaxBackoff = 100*time.Millisecond, 150*time.Millisecond
	cfg.Clock = clk
	p, err := prefetch.New(cfg)
	require.NoError(t, err)
	n, err := p.Pass(t.Context())
	require.NoError(t, err)
	waits := clk.Waits()
	require.Equal(t, 5, n)
	require.Equal(t, int64(3), calls.Load())
	require.Len(t, waits, 2)
	require.True(t, waits[0] >= 50*time.Millisecond && waits[0] <= 100*time.Millisecond, "jittered first wait %s", waits[0])
	require.True(t, waits[1] >= 75*time.Millisecond && waits[1] <= 150*time.Millisecond, "doubled, capped wait %s", waits[1])
}

func TestPrefetchGivesUpAndReleasesClaim(t *testing.T) {
	t.Parallel()
	e := prefetchtest.NewEnv(t)
	cfg := e.Config("c1")
	cfg.Targets = onlyLeased{e.Store}
	cfg.Attempts = 3
	var calls atomic.Int64
	cfg.Source = sources.Funcs{FetchFunc: func(context.Context, string, lease.Span) ([]byte, error) {
		calls.Add(1)
		return nil, errors.New("provider down")
	}}
	p, err := prefetch.New(cfg)
	require.NoError(t, err)
	n, err := p.Pass(t.Context())
	require.NoError(t, err)
	require.Zero(t, n)
	require.Equal(t, int64(15), calls.Load(), "5 chunks, 3 attempts each")
	ok, err := e.Store.ClaimChunk(t.Context(), e.Leased.Range.ID, lease.Span{From: 1, To: 10}, "c2", time.Minute)
	require.NoError(t, err)
	require.True(t, ok, "a failed fetch gives its claim back")
}

// A chunk's claim is renewed while its fetch runs: a try longer than the
// claim's TTL keeps it, and another coordinator cannot take it meanwhile.
func TestPrefetchRenewsClaimDuringFetch(t *testing.T) {
	t.Parallel()
	e := prefetchtest.NewEnv(t)
	cfg := e.Config("c1")
	cfg.Targets = onlyLeased{e.Store}
	// A TTL far above a loaded machine's scheduling delays: at 60 ms, a
	// renewal (every 20 ms) late by a TTL under -race in CI let c2 take
	// the claim, and the pass fetched 4 chunks of 5.
	cfg.ClaimTTL = 300 * time.Millisecond
	first := lease.Span{From: 1, To: 10}
	var taken atomic.Bool
	cfg.Source = sources.Funcs{FetchFunc: func(ctx context.Context, g string, s lease.Span) ([]byte, error) {
		if s == first {
			for range 4 { // 4 TTLs: the claim would have run out four times
				time.Sleep(cfg.ClaimTTL)
				ok, err := e.Store.ClaimChunk(ctx, e.Leased.Range.ID, first, "c2", time.Minute)
				if err != nil || ok {
					taken.Store(true)
				}
			}
		}
		return e.Source.Fetch(ctx, g, s)
	}}
	p, err := prefetch.New(cfg)
	require.NoError(t, err)
	n, err := p.Pass(t.Context())
	require.NoError(t, err)
	require.Equal(t, 5, n)
	require.False(t, taken.Load(), "c2 never took the claim of a fetch that ran")
	require.True(t, e.Spool.Has(e.Leased.Range.ID, first))
}

// When another coordinator took a chunk's claim (this one was paused past
// its TTL), this one's next renewal finds it and ends the fetch: the
// chunk is left to that one, not fetched by both.
func TestPrefetchLeavesATakenClaim(t *testing.T) {
	t.Parallel()
	e := prefetchtest.NewEnv(t)
	cfg := e.Config("c1")
	cfg.Targets = onlyLeased{e.Store}
	cfg.ClaimTTL = 30 * time.Millisecond
	first := lease.Span{From: 1, To: 10}
	var calls atomic.Int64
	cfg.Source = sources.Funcs{FetchFunc: func(ctx context.Context, g string, s lease.Span) ([]byte, error) {
		if s != first {
			return e.Source.Fetch(ctx, g, s)
		}
		calls.Add(1)
		// As if c1 had been paused: its claim ran out and c2 took it. A
		// renewal of c1's that lands between the two calls takes the
		// claim back, so c2 tries until it holds it.
		for {
			if err := e.Store.ForgetChunk(ctx, e.Leased.Range.ID, first, "c1"); err != nil {
				return nil, err
			}
			ok, err := e.Store.ClaimChunk(ctx, e.Leased.Range.ID, first, "c2", time.Minute)
			if err != nil {
				return nil, fmt.Errorf("c2 could not take the claim: %w", err)
			}
			if ok {
				break
			}
		}
		<-ctx.Done() // a try that would run on: the renewal ends it
		return nil, ctx.Err()
	}}
	p, err := prefetch.New(cfg)
	require.NoError(t, err)
	n, err := p.Pass(t.Context())
	require.NoError(t, err)
	require.Equal(t, 4, n, "the other four chunks")
	require.Equal(t, int64(1), calls.Load(), "no retry of a chunk c2 holds")
	require.False(t, e.Spool.Has(e.Leased.Range.ID, first))
	ok, err := e.Store.ClaimChunk(t.Context(), e.Leased.Range.ID, first, "c3", time.Minute)
	require.NoError(t, err)
	require.False(t, ok, "c2's claim stands")
}

func TestPrefetchLookaheadBound(t *testing.T) {
	t.Parallel()
	e := prefetchtest.NewEnv(t)
	small, err := spool.Open(t.TempDir(), spool.Config{MaxBytes: 4096})
	require.NoError(t, err)
	t.Cleanup(func() { small.Close() })
	cfg := e.Config("c1")
	cfg.Spool = small
	cfg.Concurrency = 1
	p, err := prefetch.New(cfg)
	require.NoError(t, err)
	_, err = p.Pass(t.Context())
	require.NoError(t, err)
	for _, span := range lease.Spans(1, 50, 10) {
		require.True(t, small.Has(e.Leased.Range.ID, span), "leased ranges are fetched whatever the lookahead bound")
	}
	require.False(t, small.Has(e.Leased.Range.ID+1, lease.Span{From: 91, To: 100}), "lookahead stops at half the spool")
}

func TestPrefetchRun(t *testing.T) {
	t.Parallel()
	e := prefetchtest.NewEnv(t)
	p, err := prefetch.New(e.Config("c1"))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	arrived := p.Notify()
	go func() { done <- p.Run(ctx) }()
	<-arrived // the first pass runs at once
	p.Kick()
	p.Kick() // kicks coalesce
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
}

func batchOf(from, to int64) batch.Batch {
	return batch.Batch{From: from, To: to, Headers: to - from + 1}
}

// TestPrefetchBadChunkCountsAttempt: a chunk the source cannot make (it
// fails with overview.ErrBadChunk: too large for a frame) is not retried
// within a pass; each pass counts one corrupt attempt of its range, which
// fails at the store's maximum and is then fetched no more, its holder's
// lease lost. The range's other chunks are stored.
func TestPrefetchBadChunkCountsAttempt(t *testing.T) {
	t.Parallel()
	e := prefetchtest.NewEnv(t)
	var bad atomic.Int64
	cfg := e.Config("c1")
	cfg.Targets = onlyLeased{e.Store}
	cfg.Source = sources.Funcs{FetchFunc: func(ctx context.Context, g string, s lease.Span) ([]byte, error) {
		if s.From == 11 {
			bad.Add(1)
			return nil, fmt.Errorf("fetch %s %d-%d: chunk past the frame limit: %w", g, s.From, s.To, overview.ErrBadChunk)
		}
		return e.Source.Fetch(ctx, g, s)
	}}
	p, err := prefetch.New(cfg)
	require.NoError(t, err)
	id := e.Leased.Range.ID
	for pass := 1; pass <= sqlstore.DefaultMaxAttempts; pass++ {
		_, err := p.Pass(t.Context())
		require.NoError(t, err)
		require.Equal(t, int64(pass), bad.Load(), "one fetch a pass, no retries within it")
		rg, err := e.Store.Range(t.Context(), id)
		require.NoError(t, err)
		require.Equal(t, pass, rg.Attempts)
		if pass < sqlstore.DefaultMaxAttempts {
			require.Equal(t, lease.StateLeased, rg.State, "the holder keeps its lease until the last attempt")
		} else {
			require.Equal(t, lease.StateFailed, rg.State)
			require.Contains(t, rg.Reason, "chunk 11: ")
			require.Contains(t, rg.Reason, "frame limit")
		}
	}
	require.True(t, e.Spool.Has(id, lease.Span{From: 1, To: 10}), "the range's good chunks are stored")
	_, err = e.Store.Check(t.Context(), id, lease.Fence{Node: e.Leased.Node, Token: e.Leased.Token})
	require.ErrorIs(t, err, edgeindex.ErrLeaseLost, "a failed range is no longer its holder's")
	_, err = p.Pass(t.Context())
	require.NoError(t, err)
	require.Equal(t, int64(sqlstore.DefaultMaxAttempts), bad.Load(), "a failed range is fetched no more")
}

// A pass counts one attempt of a range however many of its chunks the
// source refuses: a few seconds of a provider's garbage must not fail a
// range of five chunks at once (it did: five attempts in one pass).
func TestPrefetchBadChunksOneAttemptAPass(t *testing.T) {
	t.Parallel()
	e := prefetchtest.NewEnv(t)
	cfg := e.Config("c1")
	cfg.Targets = onlyLeased{e.Store}
	cfg.Source = sources.Funcs{FetchFunc: func(ctx context.Context, g string, s lease.Span) ([]byte, error) {
		return nil, fmt.Errorf("fetch %s %d-%d: more than N bytes: %w", g, s.From, s.To, overview.ErrBadChunk)
	}}
	p, err := prefetch.New(cfg)
	require.NoError(t, err)
	for pass := 1; pass <= 2; pass++ {
		_, err = p.Pass(t.Context())
		require.NoError(t, err)
		rg, err := e.Store.Range(t.Context(), e.Leased.Range.ID)
		require.NoError(t, err)
		require.Equal(t, pass, rg.Attempts, "one attempt a pass")
		require.Equal(t, lease.StateLeased, rg.State)
	}
}

// A long reason is cut on a rune, so the store (PostgreSQL keeps UTF-8
// text) takes it.
func TestPrefetchBadChunkReasonValidUTF8(t *testing.T) {
	t.Parallel()
	e := prefetchtest.NewEnv(t)
	cfg := e.Config("c1")
	cfg.Targets = onlyLeased{e.Store}
	cfg.Source = sources.Funcs{FetchFunc: func(ctx context.Context, g string, s lease.Span) ([]byte, error) {
		return nil, fmt.Errorf("x%s: %w", strings.Repeat("é", 400), overview.ErrBadChunk) // 300 cuts an é
	}}
	p, err := prefetch.New(cfg)
	require.NoError(t, err)
	_, err = p.Pass(t.Context())
	require.NoError(t, err)
	rg, err := e.Store.Range(t.Context(), e.Leased.Range.ID)
	require.NoError(t, err)
	require.Equal(t, 1, rg.Attempts)
	require.True(t, utf8.ValidString(rg.Reason), "%q", rg.Reason)
}

// slotSource is a source that waits for its gate (a connection of the
// provider's budget, say) before it calls sources.Ready, on the first
// chunk; the synthetic source makes every chunk.
type slotSource struct {
	sources.ChunkSource
	first   lease.Span
	waiting chan struct{} // closed once the first chunk's fetch waits
	gate    chan struct{}
	made    atomic.Int64 // first chunks made after Ready
}

func (s *slotSource) Fetch(ctx context.Context, g string, span lease.Span) ([]byte, error) {
	if span == s.first {
		close(s.waiting)
		<-s.gate
		if err := sources.Ready(ctx); err != nil {
			return nil, err
		}
		s.made.Add(1)
	}
	return s.ChunkSource.Fetch(ctx, g, span)
}

// A fetch that waits for a connection holds no claim: another coordinator
// that gets one first claims the chunk, and this one, once it holds its
// connection, finds the claim taken and leaves the chunk without
// fetching it.
func TestPrefetchClaimsOnceReady(t *testing.T) {
	t.Parallel()
	e := prefetchtest.NewEnv(t)
	cfg := e.Config("c1")
	cfg.Targets = onlyLeased{e.Store}
	src := &slotSource{ChunkSource: e.Source, first: lease.Span{From: 1, To: 10}, waiting: make(chan struct{}), gate: make(chan struct{})}
	cfg.Source = src
	p, err := prefetch.New(cfg)
	require.NoError(t, err)
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := p.Pass(t.Context())
		done <- result{n, err}
	}()
	<-src.waiting
	ok, err := e.Store.ClaimChunk(t.Context(), e.Leased.Range.ID, src.first, "c2", time.Minute)
	require.NoError(t, err)
	require.True(t, ok, "c1 holds no claim while it waits for a connection")
	close(src.gate)
	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, 4, r.n, "the other four chunks")
	require.Zero(t, src.made.Load(), "c1 made nothing of the chunk c2 claimed")
	require.False(t, e.Spool.Has(e.Leased.Range.ID, src.first))
	ok, err = e.Store.ClaimChunk(t.Context(), e.Leased.Range.ID, src.first, "c3", time.Minute)
	require.NoError(t, err)
	require.False(t, ok, "c2's claim stands")
}

// readyless is a source that never calls sources.Ready: the prefetcher
// claims what it made once its Fetch returns. During the first chunk's
// fetch c2 claims it and keeps it; during the second's c2 claims it and
// gives it back.
type readyless struct {
	e             *prefetchtest.Env
	first, second lease.Span
	unclaimed     atomic.Int64 // fetches during which c1 held no claim
}

func (s *readyless) Fetch(ctx context.Context, g string, span lease.Span) ([]byte, error) {
	id := s.e.Leased.Range.ID
	if span == s.first || span == s.second {
		ok, err := s.e.Store.ClaimChunk(ctx, id, span, "c2", time.Minute)
		if err != nil {
			return nil, err
		}
		if ok {
			s.unclaimed.Add(1)
		}
		if span == s.second {
			if err := s.e.Store.ForgetChunk(ctx, id, span, "c2"); err != nil {
				return nil, err
			}
		}
	}
	// A fresh context: the synthetic source's own Ready call sees no hook.
	return s.e.Source.Fetch(context.Background(), g, span)
}

func (s *readyless) Watermarks(ctx context.Context, g string) (int64, int64, error) {
	return s.e.Source.Watermarks(ctx, g)
}

func TestPrefetchClaimsWhatAReadylessSourceMade(t *testing.T) {
	t.Parallel()
	e := prefetchtest.NewEnv(t)
	cfg := e.Config("c1")
	cfg.Targets = onlyLeased{e.Store}
	src := &readyless{e: e, first: lease.Span{From: 1, To: 10}, second: lease.Span{From: 11, To: 20}}
	cfg.Source = src
	p, err := prefetch.New(cfg)
	require.NoError(t, err)
	n, err := p.Pass(t.Context())
	require.NoError(t, err)
	require.Equal(t, 4, n, "every chunk but the one c2 kept")
	require.EqualValues(t, 2, src.unclaimed.Load(), "no claim during a readyless fetch")
	require.False(t, e.Spool.Has(e.Leased.Range.ID, src.first), "c2's chunk is left to it")
	require.True(t, e.Spool.Has(e.Leased.Range.ID, src.second))
	ok, err := e.Store.ClaimChunk(t.Context(), e.Leased.Range.ID, src.second, "c3", time.Minute)
	require.NoError(t, err)
	require.False(t, ok, "c1 claimed and marked fetched the chunk it made")
}
