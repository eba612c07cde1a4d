package fleetcache

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/edgeindex/edgeindex/clock"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var t0 = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

// newClock returns an injected clock that moves only when told.
func newClock() *clock.Manual { return clock.NewManual(t0) }

func newCache[T any](t *testing.T, read ReadFunc[T], good func(T) bool, cfg Config) *Cache[T] {
	t.Helper()
	c, err := New(read, good, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Wait(context.Background())) })
	return c
}

// script answers the n-th read (from 1) with steps[n-1], and counts reads.
type script struct {
	calls atomic.Int64
	steps []func(ctx context.Context, previous int) (int, error)
}

func (s *script) read(ctx context.Context, previous int) (int, error) {
	n := s.calls.Add(1)
	if int(n) > len(s.steps) {
		panic("script: unexpected read")
	}
	return s.steps[n-1](ctx, previous)
}

func value(v int) func(context.Context, int) (int, error) {
	return func(context.Context, int) (int, error) { return v, nil }
}

func fail(err error) func(context.Context, int) (int, error) {
	return func(context.Context, int) (int, error) { return 0, err }
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	read := func(context.Context, int) (int, error) { return 1, nil }
	for name, cfg := range map[string]Config{
		"negative keep":          {Keep: -1},
		"negative timeout":       {Timeout: -time.Second},
		"negative max stale":     {MaxStale: -time.Second},
		"max stale within keep":  {Keep: time.Minute, MaxStale: time.Minute},
		"max stale below keep":   {MaxStale: time.Second},
		"max stale below defult": {MaxStale: 10 * time.Second},
	} {
		_, err := New(read, nil, cfg)
		require.ErrorIs(t, err, ErrInvalid, name)
	}
	_, err := New[int](nil, nil, Config{})
	require.ErrorIs(t, err, ErrInvalid)

	c, err := New(read, nil, Config{})
	require.NoError(t, err)
	require.Equal(t, DefaultKeep, c.cfg.Keep)
	require.Equal(t, DefaultTimeout, c.cfg.Timeout)
	require.Zero(t, c.cfg.MaxStale)
}

func TestCacheFirstCallersShareOneRead(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	release := make(chan struct{})
	c := newCache(t, func(context.Context, int) (int, error) {
		calls.Add(1)
		<-release
		return 42, nil
	}, nil, Config{})

	const n = 50
	started := make(chan struct{}, n)
	answers := make(chan Answer[int], n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			started <- struct{}{}
			a, err := c.Get(t.Context())
			answers <- a
			errs <- err
		})
	}
	for range n {
		<-started
	}
	close(release)
	wg.Wait()
	close(answers)
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for a := range answers {
		require.Equal(t, 42, a.Value)
		require.Equal(t, uint64(1), a.Generation)
	}
	require.Equal(t, int64(1), calls.Load())
}

func TestCacheCancelledFirstCallerDoesNotCancelTheRead(t *testing.T) {
	t.Parallel()
	readCtx := make(chan context.Context, 1)
	release := make(chan struct{})
	var calls atomic.Int64
	c := newCache(t, func(ctx context.Context, _ int) (int, error) {
		calls.Add(1)
		readCtx <- ctx
		<-release
		return 7, ctx.Err()
	}, nil, Config{})

	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Get(ctx)
		errc <- err
	}()
	rctx := <-readCtx
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	require.NoError(t, rctx.Err(), "the caller's cancel reached the read")
	_, hasDeadline := rctx.Deadline()
	require.True(t, hasDeadline, "the read runs without its own timeout")

	close(release)
	a, err := c.Get(t.Context())
	require.NoError(t, err)
	require.Equal(t, 7, a.Value)
	require.Equal(t, uint64(1), a.Generation)
	require.Equal(t, int64(1), calls.Load())
}

func TestCacheStaleRefreshRunsDetached(t *testing.T) {
	t.Parallel()
	clk := newClock()
	readCtx := make(chan context.Context, 1)
	release := make(chan struct{})
	s := &script{steps: []func(context.Context, int) (int, error){
		value(1),
		func(ctx context.Context, previous int) (int, error) {
			readCtx <- ctx
			<-release
			return previous + 1, ctx.Err()
		},
	}}
	c := newCache(t, s.read, nil, Config{Keep: 10 * time.Second, Clock: clk})
	_, err := c.Get(t.Context())
	require.NoError(t, err)

	clk.Advance(11 * time.Second)
	ctx, cancel := context.WithCancel(t.Context())
	a, err := c.Get(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, a.Value)
	require.True(t, a.Meta.Stale)
	require.True(t, a.Meta.Refreshing)
	require.True(t, a.Meta.FromCache)
	rctx := <-readCtx
	cancel()
	require.NoError(t, rctx.Err(), "the first caller's cancel reached the refresh")

	close(release)
	require.NoError(t, c.Wait(t.Context()))
	a, err = c.Get(t.Context())
	require.NoError(t, err)
	require.Equal(t, 2, a.Value)
	require.Equal(t, uint64(2), a.Generation)
	require.False(t, a.Meta.Stale)
	require.False(t, a.Meta.Refreshing)
	require.Equal(t, int64(2), s.calls.Load())
}

func TestCacheThousandStaleCallersCauseOneRead(t *testing.T) {
	t.Parallel()
	clk := newClock()
	release := make(chan struct{})
	s := &script{steps: []func(context.Context, int) (int, error){
		value(1),
		func(context.Context, int) (int, error) { <-release; return 2, nil },
	}}
	c := newCache(t, s.read, nil, Config{Keep: 10 * time.Second, Clock: clk})
	_, err := c.Get(t.Context())
	require.NoError(t, err)
	clk.Advance(10 * time.Second) // exactly Keep: stale

	const n = 1000
	var wg sync.WaitGroup
	var wrong atomic.Int64
	for range n {
		wg.Go(func() {
			a, err := c.Get(context.Background())
			if err != nil || a.Value != 1 || !a.Meta.Stale || !a.Meta.FromCache {
				wrong.Add(1)
			}
		})
	}
	wg.Wait() // every caller was answered while the refresh is still blocked
	require.Zero(t, wrong.Load())
	require.Equal(t, int64(2), s.calls.Load(), "1000 stale callers must start exactly one refresh")

	close(release)
	require.NoError(t, c.Wait(t.Context()))
	a, err := c.Get(t.Context())
	require.NoError(t, err)
	require.Equal(t, 2, a.Value)
	require.Equal(t, uint64(2), a.Generation)
	require.Equal(t, int64(2), s.calls.Load())
}

func TestCacheFailedReadIsNotKept(t *testing.T) {
	t.Parallel()
	clk := newClock()
	boom := errors.New("boom")
	s := &script{steps: []func(context.Context, int) (int, error){value(1), fail(boom), value(3)}}
	c := newCache(t, s.read, nil, Config{Keep: 10 * time.Second, Clock: clk})
	_, err := c.Get(t.Context())
	require.NoError(t, err)

	clk.Advance(11 * time.Second)
	a, err := c.Get(t.Context()) // starts the failing refresh
	require.NoError(t, err)
	require.Equal(t, 1, a.Value)
	require.NoError(t, c.Wait(t.Context()))

	info, ok := c.LastRead()
	require.True(t, ok)
	require.False(t, info.OK)
	require.Contains(t, info.Error, "boom")
	require.Equal(t, uint64(1), info.Generation)

	a, err = c.Get(t.Context()) // the old good read, still stale; starts another refresh
	require.NoError(t, err)
	require.Equal(t, 1, a.Value)
	require.Equal(t, uint64(1), a.Generation)
	require.True(t, a.Meta.Stale)
	require.True(t, a.Meta.Refreshing)
	require.NoError(t, c.Wait(t.Context()))

	a, err = c.Get(t.Context())
	require.NoError(t, err)
	require.Equal(t, 3, a.Value)
	require.Equal(t, uint64(2), a.Generation)
	require.Equal(t, int64(3), s.calls.Load())
}

func TestCacheFirstReadFailsThenRetries(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	s := &script{steps: []func(context.Context, int) (int, error){fail(boom), value(2)}}
	c := newCache(t, s.read, nil, Config{})
	a, err := c.Get(t.Context())
	require.ErrorIs(t, err, ErrReadFailed)
	require.ErrorIs(t, err, boom)
	require.Zero(t, a)

	a, err = c.Get(t.Context())
	require.NoError(t, err)
	require.Equal(t, 2, a.Value)
	require.Equal(t, uint64(1), a.Generation)
}

func TestCacheRejectedReadIsNotKept(t *testing.T) {
	t.Parallel()
	clk := newClock()
	s := &script{steps: []func(context.Context, int) (int, error){value(-1), value(5), value(-2), value(6)}}
	good := func(v int) bool { return v >= 0 }
	c := newCache(t, s.read, good, Config{Keep: 10 * time.Second, Clock: clk})

	a, err := c.Get(t.Context())
	require.ErrorIs(t, err, ErrRejected)
	require.Equal(t, -1, a.Value, "the rejected value is handed to the caller that waited")
	require.Zero(t, a.Generation)

	a, err = c.Get(t.Context())
	require.NoError(t, err)
	require.Equal(t, 5, a.Value)
	require.Equal(t, uint64(1), a.Generation)

	clk.Advance(11 * time.Second)
	_, err = c.Get(t.Context())
	require.NoError(t, err)
	require.NoError(t, c.Wait(t.Context()))
	info, _ := c.LastRead()
	require.False(t, info.OK)
	require.Contains(t, info.Error, "rejected")

	a, err = c.Get(t.Context()) // -2 was not kept
	require.NoError(t, err)
	require.Equal(t, 5, a.Value)
	require.True(t, a.Meta.Stale)
	require.NoError(t, c.Wait(t.Context()))
	a, err = c.Get(t.Context())
	require.NoError(t, err)
	require.Equal(t, 6, a.Value)
	require.Equal(t, uint64(2), a.Generation)
}

func TestCachePanicIsRecovered(t *testing.T) {
	t.Parallel()
	s := &script{steps: []func(context.Context, int) (int, error){
		func(context.Context, int) (int, error) { panic("reader bug") },
		value(9),
		value(10),
	}}
	panicky := func(v int) bool {
		if v == 9 {
			panic("predicate bug")
		}
		return true
	}
	c := newCache(t, s.read, panicky, Config{})
	_, err := c.Get(t.Context())
	require.ErrorIs(t, err, ErrPanic)
	require.Contains(t, err.Error(), "reader bug")
	info, ok := c.LastRead()
	require.True(t, ok)
	require.False(t, info.OK)

	_, err = c.Get(t.Context())
	require.ErrorIs(t, err, ErrPanic)
	require.Contains(t, err.Error(), "predicate bug")

	a, err := c.Get(t.Context())
	require.NoError(t, err)
	require.Equal(t, 10, a.Value)
}

func TestCacheMaxStale(t *testing.T) {
	t.Parallel()
	clk := newClock()
	boom := errors.New("boom")
	s := &script{steps: []func(context.Context, int) (int, error){value(1), value(2), fail(boom), value(4)}}
	c := newCache(t, s.read, nil, Config{Keep: 10 * time.Second, MaxStale: 30 * time.Second, Clock: clk})
	_, err := c.Get(t.Context())
	require.NoError(t, err)

	// Between Keep and MaxStale: answered at once, stale.
	clk.Advance(20 * time.Second)
	a, err := c.Get(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, a.Value)
	require.True(t, a.Meta.Stale)
	require.NoError(t, c.Wait(t.Context()))

	// Read 2 was kept at t0+20s. Past MaxStale of it, the refresh fails.
	clk.Advance(31 * time.Second)
	a, err = c.Get(t.Context())
	require.ErrorIs(t, err, ErrTooStale)
	require.ErrorIs(t, err, ErrReadFailed)
	require.ErrorIs(t, err, boom)
	require.Zero(t, a.Value)

	// The next caller waits for a refresh that works, and gets it fresh.
	a, err = c.Get(t.Context())
	require.NoError(t, err)
	require.Equal(t, 4, a.Value)
	require.Equal(t, uint64(3), a.Generation)
	require.False(t, a.Meta.FromCache)
	require.False(t, a.Meta.Stale)
	require.Equal(t, int64(4), s.calls.Load())
}

func TestCacheMetaWithInjectedClock(t *testing.T) {
	t.Parallel()
	clk := newClock()
	release := make(chan struct{})
	s := &script{steps: []func(context.Context, int) (int, error){
		func(context.Context, int) (int, error) { clk.Advance(2 * time.Second); return 1, nil },
		func(context.Context, int) (int, error) { <-release; return 2, nil },
	}}
	c := newCache(t, s.read, nil, Config{Clock: clk})
	_, ok := c.LastRead()
	require.False(t, ok)

	a, err := c.Get(t.Context())
	require.NoError(t, err)
	require.Equal(t, Meta{
		ServedAt:        t0.Add(2 * time.Second),
		PolledAt:        t0,
		CacheAgeSeconds: 2,
		KeptForSeconds:  15,
	}, a.Meta)
	info, ok := c.LastRead()
	require.True(t, ok)
	require.Equal(t, ReadInfo{At: t0, OK: true, Duration: 2 * time.Second, DurationSeconds: 2, Generation: 1}, info)

	clk.Advance(5 * time.Second)
	a, err = c.Get(t.Context())
	require.NoError(t, err)
	require.Equal(t, Meta{
		ServedAt:        t0.Add(7 * time.Second),
		PolledAt:        t0,
		CacheAgeSeconds: 7,
		KeptForSeconds:  15,
		FromCache:       true,
	}, a.Meta)

	clk.Advance(10 * time.Second)
	a, err = c.Get(t.Context())
	require.NoError(t, err)
	require.Equal(t, Meta{
		ServedAt:        t0.Add(17 * time.Second),
		PolledAt:        t0,
		CacheAgeSeconds: 17,
		KeptForSeconds:  15,
		FromCache:       true,
		Stale:           true,
		Refreshing:      true,
	}, a.Meta)
	close(release)
}

func TestCachePassesThePreviousGoodRead(t *testing.T) {
	t.Parallel()
	clk := newClock()
	var seen []int
	var mu sync.Mutex
	c := newCache(t, func(_ context.Context, previous int) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, previous)
		return previous + 10, nil
	}, nil, Config{Keep: time.Second, Clock: clk})
	for range 3 {
		_, err := c.Get(t.Context())
		require.NoError(t, err)
		require.NoError(t, c.Wait(t.Context()))
		clk.Advance(2 * time.Second)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []int{0, 10, 20}, seen)
}

func TestCacheReadTimeout(t *testing.T) {
	t.Parallel()
	c := newCache(t, func(ctx context.Context, _ int) (int, error) {
		<-ctx.Done()
		return 0, ctx.Err()
	}, nil, Config{Timeout: time.Millisecond})
	_, err := c.Get(t.Context())
	require.ErrorIs(t, err, ErrReadFailed)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, 504, statusOf(err))
}
