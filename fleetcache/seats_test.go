package fleetcache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// seatReader counts reads per key and answers "key#n" for the n-th read of key.
type seatReader struct {
	mu    sync.Mutex
	calls map[string]int
}

func (r *seatReader) read(_ context.Context, key string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.calls == nil {
		r.calls = map[string]int{}
	}
	r.calls[key]++
	if key == "bad" {
		return "", errors.New("no such node")
	}
	return fmt.Sprintf("%s#%d", key, r.calls[key]), nil
}

func (r *seatReader) count(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[key]
}

func newSeats[T any](t *testing.T, read SeatReadFunc[string, T], good func(T) bool, cfg SeatConfig) *Seats[string, T] {
	t.Helper()
	s, err := NewSeats(read, good, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Wait(context.Background())) })
	return s
}

func seatValue(t *testing.T, s *Seats[string, string], key string, gen uint64) Answer[string] {
	t.Helper()
	a, err := s.Get(t.Context(), key, gen)
	require.NoError(t, err)
	return a
}

func TestSeatConfigValidate(t *testing.T) {
	t.Parallel()
	r := &seatReader{}
	for _, cfg := range []SeatConfig{{TTL: -1}, {MaxEntries: -1}, {Timeout: -1}} {
		_, err := NewSeats(r.read, nil, cfg)
		require.ErrorIs(t, err, ErrInvalid)
	}
	_, err := NewSeats[string, string](nil, nil, SeatConfig{})
	require.ErrorIs(t, err, ErrInvalid)
	s, err := NewSeats(r.read, nil, SeatConfig{})
	require.NoError(t, err)
	require.Equal(t, DefaultSeatTTL, s.cfg.TTL)
	require.Equal(t, DefaultSeatMaxEntries, s.cfg.MaxEntries)
}

func TestSeatsTTLAndGeneration(t *testing.T) {
	t.Parallel()
	clk := newClock()
	r := &seatReader{}
	s := newSeats(t, r.read, nil, SeatConfig{Clock: clk})

	a := seatValue(t, s, "h/n", 1)
	require.Equal(t, "h/n#1", a.Value)
	require.False(t, a.Meta.FromCache)
	require.Equal(t, uint64(1), a.Generation)

	clk.Advance(9 * time.Second)
	a = seatValue(t, s, "h/n", 1)
	require.Equal(t, "h/n#1", a.Value)
	require.Equal(t, Meta{
		ServedAt:        t0.Add(9 * time.Second),
		PolledAt:        t0,
		CacheAgeSeconds: 9,
		KeptForSeconds:  10,
		FromCache:       true,
	}, a.Meta)

	clk.Advance(time.Second) // 10 s: expired
	require.Equal(t, "h/n#2", seatValue(t, s, "h/n", 1).Value)
	require.Equal(t, "h/n#2", seatValue(t, s, "h/n", 1).Value)

	// A new main read: the kept seat no longer belongs to it.
	a = seatValue(t, s, "h/n", 2)
	require.Equal(t, "h/n#3", a.Value)
	require.Equal(t, uint64(2), a.Generation)
	require.Equal(t, "h/n#3", seatValue(t, s, "h/n", 2).Value)
	// A caller still on the older read does not throw away the newer seat.
	require.Equal(t, "h/n#4", seatValue(t, s, "h/n", 1).Value)
	require.Equal(t, "h/n#3", seatValue(t, s, "h/n", 2).Value)
	require.Equal(t, 4, r.count("h/n"))
	require.Equal(t, 1, s.Len())
}

func TestSeatsLRU(t *testing.T) {
	t.Parallel()
	clk := newClock()
	r := &seatReader{}
	s := newSeats(t, r.read, nil, SeatConfig{MaxEntries: 2, Clock: clk})

	seatValue(t, s, "a", 1)
	seatValue(t, s, "b", 1)
	require.Equal(t, "a#1", seatValue(t, s, "a", 1).Value) // a is now the most recent
	seatValue(t, s, "c", 1)                                // evicts b
	require.Equal(t, 2, s.Len())
	require.Equal(t, "a#1", seatValue(t, s, "a", 1).Value)
	require.Equal(t, "c#1", seatValue(t, s, "c", 1).Value)
	require.Equal(t, "b#2", seatValue(t, s, "b", 1).Value) // read again; evicts a
	require.Equal(t, "c#1", seatValue(t, s, "c", 1).Value)
	require.Equal(t, "a#2", seatValue(t, s, "a", 1).Value)
	require.Equal(t, 2, s.Len())
}

func TestSeatsDropExpiredWhenKeeping(t *testing.T) {
	t.Parallel()
	clk := newClock()
	r := &seatReader{}
	s := newSeats(t, r.read, nil, SeatConfig{Clock: clk})
	seatValue(t, s, "a", 1)
	seatValue(t, s, "b", 1)
	clk.Advance(11 * time.Second)
	seatValue(t, s, "c", 1)
	require.Equal(t, 1, s.Len())
}

func TestSeatsFailedAndRejectedReadsAreNotKept(t *testing.T) {
	t.Parallel()
	r := &seatReader{}
	s := newSeats(t, r.read, func(v string) bool { return v != "odd#1" }, SeatConfig{})

	_, err := s.Get(t.Context(), "bad", 1)
	require.ErrorIs(t, err, ErrReadFailed)
	require.Equal(t, 502, statusOf(err))
	_, err = s.Get(t.Context(), "bad", 1)
	require.ErrorIs(t, err, ErrReadFailed)
	require.Equal(t, 2, r.count("bad"))

	a, err := s.Get(t.Context(), "odd", 1)
	require.ErrorIs(t, err, ErrRejected)
	require.Equal(t, "odd#1", a.Value)
	require.Zero(t, a.Generation)
	require.Zero(t, s.Len())
	require.Equal(t, "odd#2", seatValue(t, s, "odd", 1).Value)
	require.Equal(t, "odd#2", seatValue(t, s, "odd", 1).Value)
	require.Equal(t, 1, s.Len())
}

func TestSeatsConcurrentCallersShareOneRead(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	release := make(chan struct{})
	s := newSeats(t, func(_ context.Context, key string) (string, error) {
		calls.Add(1)
		<-release
		return "v:" + key, nil
	}, nil, SeatConfig{})

	const n = 40
	started := make(chan struct{}, n)
	var wrong atomic.Int64
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			started <- struct{}{}
			a, err := s.Get(context.Background(), "k", 3)
			if err != nil || a.Value != "v:k" || a.Generation != 3 {
				wrong.Add(1)
			}
		})
	}
	for range n {
		<-started
	}
	close(release)
	wg.Wait()
	require.Zero(t, wrong.Load())
	require.Equal(t, int64(1), calls.Load())
}

func TestSeatsCancelledCallerDoesNotCancelTheRead(t *testing.T) {
	t.Parallel()
	readCtx := make(chan context.Context, 1)
	release := make(chan struct{})
	var calls atomic.Int64
	s := newSeats(t, func(ctx context.Context, key string) (string, error) {
		calls.Add(1)
		readCtx <- ctx
		<-release
		return key, ctx.Err()
	}, nil, SeatConfig{})

	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := s.Get(ctx, "k", 1)
		errc <- err
	}()
	rctx := <-readCtx
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	require.NoError(t, rctx.Err())
	close(release)
	require.NoError(t, s.Wait(t.Context()))
	a, err := s.Get(t.Context(), "k", 1)
	require.NoError(t, err)
	require.True(t, a.Meta.FromCache)
	require.Equal(t, int64(1), calls.Load())
}

// Generation 0 is what a Cache gives every read it did not keep: two such
// reads are different main reads, so a seat read under one is never reused
// under another, nor shared with a concurrent caller.
func TestSeatsGenerationZeroNeverKept(t *testing.T) {
	t.Parallel()
	r := &seatReader{}
	s := newSeats(t, r.read, nil, SeatConfig{})

	a := seatValue(t, s, "h/n", 0)
	require.Equal(t, "h/n#1", a.Value)
	require.False(t, a.Meta.FromCache)
	require.Zero(t, a.Generation)
	require.Zero(t, s.Len(), "a read of generation 0 is not kept")
	a = seatValue(t, s, "h/n", 0)
	require.Equal(t, "h/n#2", a.Value, "a later main read that was not kept reads again")
	require.False(t, a.Meta.FromCache)

	// A kept generation's entry is not served to generation 0 either, and
	// stays for its own.
	require.Equal(t, "h/n#3", seatValue(t, s, "h/n", 1).Value)
	require.Equal(t, "h/n#4", seatValue(t, s, "h/n", 0).Value)
	require.Equal(t, "h/n#3", seatValue(t, s, "h/n", 1).Value)

	// Concurrent callers of generation 0 each get a read of their own.
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(2)
	var n atomic.Int64
	slow := newSeats(t, func(_ context.Context, key string) (string, error) {
		started.Done()
		<-release
		return fmt.Sprintf("%s#%d", key, n.Add(1)), nil
	}, nil, SeatConfig{})
	got := make(chan string, 2)
	for range 2 {
		go func() {
			a, err := slow.Get(context.Background(), "h/n", 0)
			if err != nil {
				got <- err.Error()
				return
			}
			got <- a.Value
		}()
	}
	started.Wait() // both reads run at once: neither waits for the other's
	close(release)
	vals := []string{<-got, <-got}
	require.ElementsMatch(t, []string{"h/n#1", "h/n#2"}, vals)
	require.Zero(t, slow.Len())
}
