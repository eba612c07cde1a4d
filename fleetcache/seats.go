package fleetcache

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Defaults used when a SeatConfig field is zero.
const (
	DefaultSeatTTL        = 10 * time.Second
	DefaultSeatMaxEntries = 64
)

// SeatReadFunc reads the value for one key. ctx carries the read timeout and
// is never a caller's cancellation.
type SeatReadFunc[K comparable, T any] func(ctx context.Context, key K) (T, error)

// SeatConfig configures Seats. Its zero value means the defaults.
type SeatConfig struct {
	// TTL is how long a read is reused. 0 means 10 s.
	TTL time.Duration
	// MaxEntries is how many reads are kept; the least recently used goes
	// first. 0 means 64.
	MaxEntries int
	// Timeout bounds each read. 0 means 10 s.
	Timeout time.Duration
	// Clock is the clock. nil means RealClock.
	Clock Clock
}

// withDefaults returns c with every zero field that has a default set to it.
func (c SeatConfig) withDefaults() SeatConfig {
	setDefault(&c.TTL, DefaultSeatTTL)
	setDefault(&c.MaxEntries, DefaultSeatMaxEntries)
	setDefault(&c.Timeout, DefaultTimeout)
	if c.Clock == nil {
		c.Clock = RealClock
	}
	return c
}

// validate checks a SeatConfig that has its defaults.
func (c SeatConfig) validate() error {
	if c.TTL < 0 || c.MaxEntries < 0 || c.Timeout < 0 {
		return invalidf("fleetcache: TTL, MaxEntries and Timeout cannot be negative")
	}
	return nil
}

type seatEntry[K comparable, T any] struct {
	key    K
	gen    uint64
	value  T
	readAt time.Time
}

type seatKey[K comparable] struct {
	key K
	gen uint64
	// solo numbers each read of generation 0, so that it is shared with
	// no other caller.
	solo uint64
}

type seatFlight[T any] struct {
	done   chan struct{}
	value  T         // set before done is closed
	readAt time.Time // set before done is closed
	err    error     // set before done is closed
}

// Seats is a small keyed cache of reads that belong to one generation of a
// main read (a Cache's Answer.Generation): an entry is reused only by callers
// that pass the same generation, only within the TTL, and at most MaxEntries
// are kept, least recently used evicted first. Only good reads are kept.
// Concurrent callers for the same key and generation share one read, which
// runs detached from their contexts. Generation 0 belongs to no main read
// (a Cache gives it to every read it did not keep): a read for it is made
// for its caller alone, and never kept.
//
// Seats is safe for concurrent use. Create it with NewSeats.
type Seats[K comparable, T any] struct {
	read       SeatReadFunc[K, T]
	good       func(T) bool
	cfg        SeatConfig
	ttlSeconds float64

	mu      sync.Mutex
	entries map[K]*list.Element // values are *seatEntry[K, T]
	lru     *list.List          // front is the most recently used
	flights map[seatKey[K]]*seatFlight[T]
	solos   uint64 // the last seatKey.solo given
}

// NewSeats returns Seats that read with read. A read is kept only when good
// returns true for it; good == nil means every read that returns no error is
// good.
func NewSeats[K comparable, T any](read SeatReadFunc[K, T], good func(T) bool, cfg SeatConfig) (*Seats[K, T], error) {
	if read == nil {
		return nil, invalidf("fleetcache: the seat read function is nil")
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Seats[K, T]{
		read:       read,
		good:       good,
		cfg:        cfg,
		ttlSeconds: cfg.TTL.Seconds(),
		entries:    make(map[K]*list.Element),
		lru:        list.New(),
		flights:    make(map[seatKey[K]]*seatFlight[T]),
	}, nil
}

// Get returns the value for key in generation gen: the kept read when it
// belongs to gen and is younger than the TTL, or else a new read, shared with
// concurrent callers of the same key and gen. For gen 0 it is always a new
// read of the caller's own, which is not kept. A read that fails is not kept
// and its error is returned wrapped; when Good rejected it, the error wraps
// ErrRejected and the Answer holds the rejected value. A cancelled ctx stops
// the waiting, never the read.
func (s *Seats[K, T]) Get(ctx context.Context, key K, gen uint64) (Answer[T], error) {
	now := s.cfg.Clock.Now()
	s.mu.Lock()
	if el, ok := s.entries[key]; ok {
		e := el.Value.(*seatEntry[K, T])
		if e.gen == gen && gen != 0 && now.Sub(e.readAt) < s.cfg.TTL {
			s.lru.MoveToFront(el)
			s.mu.Unlock()
			return s.answer(e.value, gen, e.readAt, now, true), nil
		}
		if e.gen <= gen { // expired, or from an older main read: of no more use
			s.remove(el)
		}
	}
	fk := seatKey[K]{key: key, gen: gen}
	if gen == 0 {
		s.solos++
		fk.solo = s.solos
	}
	f := s.flights[fk]
	if f == nil {
		f = &seatFlight[T]{done: make(chan struct{})}
		s.flights[fk] = f
		go s.run(context.WithoutCancel(ctx), fk, f)
	}
	s.mu.Unlock()

	select {
	case <-f.done:
	case <-ctx.Done():
		return Answer[T]{}, fmt.Errorf("fleetcache: waiting for the seat read: %w", context.Cause(ctx))
	}
	if f.err != nil {
		if errors.Is(f.err, ErrRejected) {
			return s.answer(f.value, 0, f.readAt, s.cfg.Clock.Now(), false), f.err
		}
		return Answer[T]{}, f.err
	}
	return s.answer(f.value, gen, f.readAt, s.cfg.Clock.Now(), false), nil
}

func (s *Seats[K, T]) answer(v T, gen uint64, readAt, now time.Time, fromCache bool) Answer[T] {
	age := now.Sub(readAt).Seconds()
	if age < 0 {
		age = 0
	}
	return Answer[T]{
		Value:      v,
		Generation: gen,
		Meta: Meta{
			ServedAt:        now.UTC(),
			PolledAt:        readAt.UTC(),
			CacheAgeSeconds: age,
			KeptForSeconds:  s.ttlSeconds,
			FromCache:       fromCache,
		},
	}
}

func (s *Seats[K, T]) run(ctx context.Context, fk seatKey[K], f *seatFlight[T]) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	start := s.cfg.Clock.Now()
	var zero T
	v, err := readOnce(ctx, func(ctx context.Context, _ T) (T, error) { return s.read(ctx, fk.key) }, s.good, zero)
	cancel()

	s.mu.Lock()
	delete(s.flights, fk)
	if err == nil && fk.gen != 0 {
		s.keep(&seatEntry[K, T]{key: fk.key, gen: fk.gen, value: v, readAt: start})
	}
	f.value, f.readAt, f.err = v, start, err
	s.mu.Unlock()
	close(f.done)
}

// keep stores e unless a read of a newer generation is kept for its key, then
// drops expired entries from the cold end and evicts down to MaxEntries.
// s.mu is held.
func (s *Seats[K, T]) keep(e *seatEntry[K, T]) {
	if el, ok := s.entries[e.key]; ok {
		if el.Value.(*seatEntry[K, T]).gen > e.gen {
			return
		}
		s.remove(el)
	}
	s.entries[e.key] = s.lru.PushFront(e)
	now := s.cfg.Clock.Now()
	for el := s.lru.Back(); el != nil; el = s.lru.Back() {
		old := el.Value.(*seatEntry[K, T])
		if s.lru.Len() <= s.cfg.MaxEntries && now.Sub(old.readAt) < s.cfg.TTL {
			break
		}
		s.remove(el)
	}
}

func (s *Seats[K, T]) remove(el *list.Element) {
	delete(s.entries, el.Value.(*seatEntry[K, T]).key)
	s.lru.Remove(el)
}

// Len returns how many reads are kept, expired ones not yet dropped included.
func (s *Seats[K, T]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lru.Len()
}

// Wait waits until no seat read is in flight, or ctx is done.
func (s *Seats[K, T]) Wait(ctx context.Context) error {
	for {
		s.mu.Lock()
		var f *seatFlight[T]
		for _, f = range s.flights {
			break
		}
		s.mu.Unlock()
		if f == nil {
			return nil
		}
		select {
		case <-f.done:
		case <-ctx.Done():
			return fmt.Errorf("fleetcache: waiting for the seat reads in flight: %w", context.Cause(ctx))
		}
	}
}
