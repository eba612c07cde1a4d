// Package clock is the one way edgeindex injects time. Every Config that
// takes time from outside has a Clock field of this package's Clock type:
// the stores (expiry), the stream (keepalives, lease checks, the wait
// limit), the prefetcher and the worker SDK (their waits), the fleet cache
// and its server (ages, Cache-Control). Nil means Real, unless the field
// says otherwise (a PostgreSQL store then uses the database's clock).
//
// Tests inject a Manual clock and move it with Advance, so that expiry is
// decided without sleeping for a minute, or a clock of their own whose After
// records what the code waits for.
package clock

import (
	"context"
	"sync"
	"time"
)

// Clock tells the time and waits. Its methods are safe for concurrent use.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// After returns a channel that receives the time once d has passed, as
	// time.After does; a d of zero or less has passed already.
	After(d time.Duration) <-chan time.Time
}

// Real is the machine's clock: time.Now and time.After.
var Real Clock = realClock{}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Sleep waits d on c, or until ctx is done; it returns nil when d passed,
// or context.Cause(ctx). A ctx done by the time c.After returns wins over a
// wait that passed already.
func Sleep(ctx context.Context, c Clock, d time.Duration) error {
	ch := c.After(d)
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Manual is a clock that moves only when told, for tests: Now stays where
// Advance or Set left it, and the channels After returns receive when an
// Advance reaches their time. It is safe for concurrent use.
type Manual struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
}

type waiter struct {
	at time.Time
	ch chan time.Time
}

var _ Clock = (*Manual)(nil)

// NewManual returns a Manual clock at t.
func NewManual(t time.Time) *Manual { return &Manual{now: t} }

// Now returns the clock's time.
func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// After returns a channel that receives once the clock reaches Now()+d: at
// once when d <= 0, otherwise at an Advance or Set.
func (m *Manual) After(d time.Duration) <-chan time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- m.now
		return ch
	}
	m.waiters = append(m.waiters, waiter{at: m.now.Add(d), ch: ch})
	return ch
}

// Advance moves the clock forward by d, and wakes the waits it reaches.
func (m *Manual) Advance(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.set(m.now.Add(d))
}

// Set moves the clock to t, and wakes the waits it reaches.
func (m *Manual) Set(t time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.set(t)
}

// Waiters reports how many channels of After have not received yet.
func (m *Manual) Waiters() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.waiters)
}

func (m *Manual) set(t time.Time) {
	m.now = t
	kept := m.waiters[:0]
	for _, w := range m.waiters {
		if w.at.After(t) {
			kept = append(kept, w)
			continue
		}
		w.ch <- t
	}
	clear(m.waiters[len(kept):])
	m.waiters = kept
}
