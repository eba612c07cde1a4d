package fleetcache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults used when a Config field is zero.
const (
	DefaultKeep    = 15 * time.Second
	DefaultTimeout = 10 * time.Second
)

// ReadFunc reads a fresh value. previous is the last good value (the zero
// value before the first good read), so a reader can reuse parts of it. ctx
// carries the read timeout and is never the caller's cancellation.
type ReadFunc[T any] func(ctx context.Context, previous T) (T, error)

// Config configures a Cache. Its zero value means the defaults.
type Config struct {
	// Keep is how long a good read is served as current. After it, answers
	// are labelled stale and one background refresh starts. 0 means 15 s.
	Keep time.Duration
	// Timeout bounds each read. 0 means 10 s.
	Timeout time.Duration
	// MaxStale is the stale-if-error bound, measured as the age of the last
	// good read (from the start of that read). Past it, Get waits for the
	// refresh and returns an error wrapping ErrTooStale when the refresh
	// fails, instead of a read that old. 0 means off: the last good read is
	// served however old it is. When set it must be more than Keep.
	MaxStale time.Duration
	// Clock is the clock. nil means RealClock.
	Clock Clock
}

// withDefaults returns c with every zero field that has a default set to it.
func (c Config) withDefaults() Config {
	setDefault(&c.Keep, DefaultKeep)
	setDefault(&c.Timeout, DefaultTimeout)
	if c.Clock == nil {
		c.Clock = RealClock
	}
	return c
}

// validate checks a Config that has its defaults.
func (c Config) validate() error {
	if c.Keep < 0 || c.Timeout < 0 || c.MaxStale < 0 {
		return invalidf("fleetcache: Keep, Timeout and MaxStale cannot be negative")
	}
	if c.MaxStale != 0 && c.MaxStale <= c.Keep {
		return invalidf("fleetcache: MaxStale (%s) must be more than Keep (%s)", c.MaxStale, c.Keep)
	}
	return nil
}

// Meta describes how an answer was served. Times are in UTC.
type Meta struct {
	// ServedAt is when the answer was given.
	ServedAt time.Time `json:"servedAt"`
	// PolledAt is when the read behind the answer started.
	PolledAt time.Time `json:"polledAt"`
	// CacheAgeSeconds is ServedAt - PolledAt.
	CacheAgeSeconds float64 `json:"cacheAgeSeconds"`
	// KeptForSeconds is how long a read is served as current (Config.Keep,
	// or SeatConfig.TTL for seats).
	KeptForSeconds float64 `json:"keptForSeconds"`
	// FromCache is true when the answer came from a read made earlier, false
	// when the caller waited for the read.
	FromCache bool `json:"fromCache"`
	// Stale is true when the read is older than KeptForSeconds.
	Stale bool `json:"stale"`
	// Refreshing is true when a read was in flight when the answer was given.
	Refreshing bool `json:"refreshing"`
}

// Answer is a value with the metadata of how it was served.
type Answer[T any] struct {
	Value T
	// Generation numbers the good reads of a Cache: 1 for the first, then
	// 2, 3... It is 0 for a value that was not kept (see ErrRejected).
	Generation uint64
	Meta       Meta
}

// ReadInfo tells how the last finished read went.
type ReadInfo struct {
	// At is when the read started, in UTC.
	At time.Time `json:"at"`
	// OK is true when the read was good and kept.
	OK bool `json:"ok"`
	// Error is the reason of a failed read.
	Error string `json:"error,omitempty"`
	// Duration is how long the read took.
	Duration        time.Duration `json:"-"`
	DurationSeconds float64       `json:"durationSeconds"`
	// Generation is the generation of the last good read (0 if none yet).
	Generation uint64 `json:"generation"`
}

// entry is one good read, never changed after it is published.
type entry[T any] struct {
	value    T
	gen      uint64
	polledAt time.Time // as the clock gave it, monotonic reading included
	polled   time.Time // polledAt in UTC, for Meta
}

// flight is one read in progress, shared by everyone who waits for it.
type flight[T any] struct {
	done chan struct{}
	e    *entry[T] // set before done is closed: the read, nil on failure
	err  error     // set before done is closed
}

// Cache is a stale-while-revalidate cache of one value. A hit is one atomic
// load, with no lock and no allocation. Nothing runs while nobody asks: a read
// starts only inside Get, and its goroutine ends with the read.
//
// A Cache is safe for concurrent use. Create it with New.
type Cache[T any] struct {
	read        ReadFunc[T]
	good        func(T) bool
	cfg         Config
	keepSeconds float64
	wallClock   bool // cfg.Clock is RealClock: hits read only the monotonic clock

	cur    atomic.Pointer[entry[T]]
	flight atomic.Pointer[flight[T]]

	mu      sync.Mutex // serialises starting and finishing reads
	gen     uint64
	last    ReadInfo
	hasLast bool
}

// New returns a Cache that reads with read. A read is kept only when good
// returns true for it; good == nil means every read that returns no error is
// good.
func New[T any](read ReadFunc[T], good func(T) bool, cfg Config) (*Cache[T], error) {
	if read == nil {
		return nil, invalidf("fleetcache: the read function is nil")
	}
	wallClock := cfg.Clock == nil || cfg.Clock == RealClock
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Cache[T]{read: read, good: good, cfg: cfg, keepSeconds: cfg.Keep.Seconds(), wallClock: wallClock}, nil
}

// Get returns the last good read.
//
//   - Before the first good read, it waits for a read; concurrent callers share it.
//   - Within Keep, it answers at once.
//   - After Keep, it answers at once with Meta.Stale set and starts one
//     background refresh, unless one is already running. The refresh does not
//     depend on ctx being alive.
//   - Past MaxStale (when set), it waits for the refresh and fails with
//     ErrTooStale if the refresh fails.
//
// When the read it waited for was rejected by Good, the error wraps
// ErrRejected and the Answer holds the rejected value with Generation 0.
// A cancelled ctx stops the waiting, never the read.
func (c *Cache[T]) Get(ctx context.Context) (Answer[T], error) {
	for {
		e := c.cur.Load()
		if e == nil {
			if f := c.start(ctx, nil); f != nil {
				return c.wait(ctx, f, false)
			}
			continue
		}
		age := c.age(e)
		if age < c.cfg.Keep {
			return c.answer(e, age, true, false, c.flight.Load() != nil), nil
		}
		if c.cfg.MaxStale > 0 && age >= c.cfg.MaxStale {
			if f := c.start(ctx, e); f != nil {
				return c.wait(ctx, f, true)
			}
			continue
		}
		if c.flight.Load() == nil && c.start(ctx, e) == nil {
			continue // a newer read was published meanwhile
		}
		// A read was in flight or started here: it may have ended since
		// (a fast read), but this answer was given while it ran.
		return c.answer(e, age, true, true, true), nil
	}
}

// age returns how old e is. With the default clock it reads only the
// monotonic clock, which costs half of time.Now.
func (c *Cache[T]) age(e *entry[T]) time.Duration {
	if c.wallClock {
		return time.Since(e.polledAt)
	}
	return c.cfg.Clock.Now().Sub(e.polledAt)
}

// answer serves e at the given age, refreshing saying whether a read is in
// flight. ServedAt is computed from the read's time and its age, so that a
// hit reads the clock once.
func (c *Cache[T]) answer(e *entry[T], age time.Duration, fromCache, stale, refreshing bool) Answer[T] {
	seconds := age.Seconds()
	if seconds < 0 {
		seconds = 0
	}
	return Answer[T]{
		Value:      e.value,
		Generation: e.gen,
		Meta: Meta{
			ServedAt:        e.polled.Add(age),
			PolledAt:        e.polled,
			CacheAgeSeconds: seconds,
			KeptForSeconds:  c.keepSeconds,
			FromCache:       fromCache,
			Stale:           stale,
			Refreshing:      refreshing,
		},
	}
}

// start returns the read in flight, or starts one. It returns nil when the
// published entry is no longer seen: the caller looks again.
func (c *Cache[T]) start(ctx context.Context, seen *entry[T]) *flight[T] {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f := c.flight.Load(); f != nil {
		return f
	}
	if c.cur.Load() != seen {
		return nil
	}
	f := &flight[T]{done: make(chan struct{})}
	c.flight.Store(f)
	var previous T
	if seen != nil {
		previous = seen.value
	}
	go c.run(context.WithoutCancel(ctx), f, previous)
	return f
}

// run makes one read and publishes it if it is good.
func (c *Cache[T]) run(ctx context.Context, f *flight[T], previous T) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	start := c.cfg.Clock.Now()
	v, err := readOnce(ctx, c.read, c.good, previous)
	cancel()
	took := c.cfg.Clock.Now().Sub(start)

	e := &entry[T]{value: v, polledAt: start, polled: start.UTC()}
	c.mu.Lock()
	if err == nil {
		c.gen++
		e.gen = c.gen
		c.cur.Store(e)
	}
	c.hasLast = true
	c.last = ReadInfo{At: start.UTC(), OK: err == nil, Duration: took, DurationSeconds: took.Seconds(), Generation: c.gen}
	if err != nil {
		c.last.Error = err.Error()
	}
	f.err = err
	if err == nil || errors.Is(err, ErrRejected) {
		f.e = e
	}
	c.flight.Store(nil)
	c.mu.Unlock()
	close(f.done)
}

// wait waits for f, or for ctx.
func (c *Cache[T]) wait(ctx context.Context, f *flight[T], tooOld bool) (Answer[T], error) {
	select {
	case <-f.done:
	case <-ctx.Done():
		return Answer[T]{}, fmt.Errorf("fleetcache: waiting for the read: %w", context.Cause(ctx))
	}
	if f.err == nil {
		age := c.age(f.e)
		return c.answer(f.e, age, false, age >= c.cfg.Keep, c.flight.Load() != nil), nil
	}
	var ans Answer[T]
	if f.e != nil { // rejected: hand the value over, marked as not kept
		ans = c.answer(f.e, c.age(f.e), false, false, c.flight.Load() != nil)
	}
	if tooOld {
		return ans, fmt.Errorf("%w: %w", ErrTooStale, f.err)
	}
	return ans, f.err
}

// readOnce calls read, then good, turning a panic in either into ErrPanic.
func readOnce[T any](ctx context.Context, read ReadFunc[T], good func(T) bool, previous T) (v T, err error) {
	defer func() {
		if r := recover(); r != nil {
			var zero T
			v, err = zero, fmt.Errorf("%w: %v", ErrPanic, r)
		}
	}()
	v, err = read(ctx, previous)
	if err != nil {
		return v, fmt.Errorf("%w: %w", ErrReadFailed, err)
	}
	if good != nil && !good(v) {
		return v, ErrRejected
	}
	return v, nil
}

// LastRead reports how the last finished read went. ok is false before any
// read has finished. It never reads.
func (c *Cache[T]) LastRead() (info ReadInfo, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last, c.hasLast
}

// Wait waits until no read is in flight, or ctx is done. Use it before a
// program exits, or in tests, so that no read is left running.
func (c *Cache[T]) Wait(ctx context.Context) error {
	for {
		f := c.flight.Load()
		if f == nil {
			return nil
		}
		select {
		case <-f.done:
		case <-ctx.Done():
			return fmt.Errorf("fleetcache: waiting for the read in flight: %w", context.Cause(ctx))
		}
	}
}
