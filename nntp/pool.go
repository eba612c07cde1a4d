package nntp

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeindex/edgeindex/internal/backoff"
)

// ErrSlotLost wraps the error of a call whose connection was closed
// because its slot of the Budget was lost.
var ErrSlotLost = errors.New("nntp: the connection's slot of the budget was lost")

// pool holds up to cfg.MaxConns connections. A connection is taken by one
// call at a time; a broken one is closed, never put back.
//
// Fetches take a token of fetches (reserve) before a connection: there are
// MaxConns-1 of them when MaxConns > 1, so however long fetches run, one
// connection of the local cap is always left for GROUP, which the planner
// needs to see new articles. With MaxConns 1 GROUP shares the one
// connection, and waits at most one fetch's deadline.
//
// With a Budget, every connection dialled holds a Slot of it from before
// the dial until it is closed, idle included; an idle one is closed after
// IdleTimeout, and one whose slot is lost is closed at once. A call that
// finds no idle connection waits for a slot, or for a connection another
// call puts back, whichever comes first. A connection put back goes to
// the first call waiting that is not a fetch (GROUP, FindDate), else to the
// first fetch: so GROUP is handed the next connection this Source puts
// back, ahead of the fetches waiting, even when other coordinators hold
// every other slot of the account. When they hold all of them and this
// Source has none open, GROUP waits for a slot until its ctx ends.
//
// A connection whose slot yields (Slot's optional Yield: its coordinator
// holds more than its fair share while another waits) is closed when it is
// put back, even with calls of this Source waiting, or when a call would
// take it idle: the slot is for the other coordinator. An idle connection
// no call takes keeps its slot until IdleTimeout.
//
// An idle connection whose slot's lease may have run out (by the local
// monotonic clock, Slot's optional Expired) is closed, not reused: a
// process paused past the lease's TTL resumes with its sockets open while
// another coordinator may have taken its slots.
type pool struct {
	cfg     *Config
	slots   chan struct{} // a token per connection busy or being dialled
	fetches chan struct{} // a token per fetch holding or waiting for a connection

	mu      sync.Mutex
	idle    []*conn // most recently used last
	closed  bool
	fails   int       // consecutive failed dials
	next    time.Time // no dial before this after a failure
	held    map[*conn]*held
	waiters []*waiter // calls waiting for a slot, first come first (fetches after the others)

	xover atomic.Bool // the server answered 500 to OVER: use XOVER
	dials atomic.Int64
}

// held is the Slot an open connection holds.
type held struct {
	slot Slot
	stop chan struct{} // closed when the connection is dropped
	lost bool          // the slot was lost: drop the connection
	idle *time.Timer   // closes the connection when idle too long
	gen  int           // counts idle timers set, so a stale one does nothing
}

// waiter is a call waiting for a slot; put hands it a connection instead
// when one comes back first.
type waiter struct {
	ch     chan *conn // buffered: put never blocks
	cancel context.CancelFunc
	fetch  bool // a fetch: served after the calls that are not
}

// expirer is a Slot that can tell its lease may have run out before its
// Lost channel closed (connlease's slots).
type expirer interface{ Expired() bool }

// yielder is a Slot that can ask for itself back when its connection is
// next put back: its Budget holds more than its fair share of the account
// while another coordinator waits with less (connlease's slots).
type yielder interface{ Yield() bool }

func newPool(cfg *Config) *pool {
	return &pool{cfg: cfg, slots: make(chan struct{}, cfg.MaxConns), fetches: make(chan struct{}, max(1, cfg.MaxConns-1)),
		held: map[*conn]*held{}}
}

// reserve takes a fetch's token, waiting until ctx is done; unreserve gives
// it back.
func (p *pool) reserve(ctx context.Context) error {
	select {
	case p.fetches <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("nntp: waiting for a connection: %w", ctx.Err())
	}
}

func (p *pool) unreserve() { <-p.fetches }

// get returns an idle connection, or dials one when fewer than MaxConns
// are open (and, with a Budget, once it has a slot). It blocks while all
// are busy, until ctx is done. fetch says the call is a fetch.
func (p *pool) get(ctx context.Context, fresh, fetch bool) (*conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("nntp: waiting for a connection: %w", ctx.Err())
	}
	c, wait, err := p.takeIdle(fresh)
	if err != nil {
		<-p.slots
		return nil, err
	}
	if c != nil {
		return c, nil
	}
	if err := p.backoff(ctx, wait); err != nil {
		<-p.slots
		return nil, err
	}
	return p.open(ctx, fresh, fetch)
}

// takeIdle returns the most recently used idle connection, unless fresh,
// closing the idle ones whose slot expired or yields on the way; with
// fresh it closes the oldest idle one. Without one to return it returns
// how long a dial must wait after failures. The caller holds a token of
// slots.
func (p *pool) takeIdle(fresh bool) (_ *conn, wait time.Duration, _ error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, 0, ErrClosed
	}
	for !fresh && len(p.idle) > 0 {
		c := p.idle[len(p.idle)-1]
		expired := p.expired(c)
		if h := p.held[c]; !expired && (h == nil || !yields(h.slot)) {
			break
		}
		p.idle = p.idle[:len(p.idle)-1]
		p.mu.Unlock()
		// An expired slot may be another's: no QUIT. A yielded one goes
		// politely, as at put.
		p.drop(c, !expired)
		p.mu.Lock()
	}
	if !fresh && len(p.idle) > 0 {
		c := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		p.busy(c)
		return c, 0, nil
	}
	if fresh && len(p.idle) > 0 {
		// The caller wants a new connection (the last idle one it was given
		// turned out dead): the oldest idle one is likely dead too.
		old := p.idle[0]
		p.idle = p.idle[1:]
		p.mu.Unlock()
		p.drop(old, false)
		p.mu.Lock()
	}
	if p.fails == 0 {
		return nil, 0, nil
	}
	return nil, time.Until(p.next), nil
}

// open dials a connection, first taking a slot of the Budget when there
// is one (or a connection put back meanwhile, see acquire). The caller
// holds a token of slots, which open gives back when it fails.
func (p *pool) open(ctx context.Context, fresh, fetch bool) (*conn, error) {
	var slot Slot
	if p.cfg.Budget != nil {
		var c *conn
		var err error
		slot, c, err = p.acquire(ctx, fresh, fetch)
		if err != nil || c != nil {
			if err != nil {
				<-p.slots
			}
			return c, err
		}
	}
	c, err := p.dial(ctx)
	if err != nil {
		if slot != nil {
			slot.Release()
		}
		<-p.slots
		return nil, err
	}
	if slot != nil {
		p.hold(c, slot)
	}
	return c, nil
}

// acquire waits for a slot of the Budget, or (unless fresh) for a
// connection put back meanwhile, which it returns instead.
func (p *pool) acquire(ctx context.Context, fresh, fetch bool) (Slot, *conn, error) {
	if fresh {
		slot, err := p.cfg.Budget.Acquire(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("nntp: waiting for a slot of the connection budget: %w", err)
		}
		return slot, nil, nil
	}
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := &waiter{ch: make(chan *conn, 1), cancel: cancel, fetch: fetch}
	p.mu.Lock()
	p.waiters = append(p.waiters, w)
	p.mu.Unlock()
	slot, err := p.cfg.Budget.Acquire(actx)
	p.mu.Lock()
	p.waiters = slices.DeleteFunc(p.waiters, func(x *waiter) bool { return x == w })
	closed := p.closed
	p.mu.Unlock()
	select {
	case c := <-w.ch: // put handed over a connection, and no longer can
		if err == nil {
			slot.Release()
		}
		return nil, c, nil
	default:
	}
	switch {
	case err == nil && closed:
		slot.Release()
		return nil, nil, ErrClosed
	case err != nil && closed:
		return nil, nil, ErrClosed
	case err != nil && ctx.Err() != nil:
		return nil, nil, fmt.Errorf("nntp: waiting for a slot of the connection budget: %w", ctx.Err())
	case err != nil:
		return nil, nil, fmt.Errorf("nntp: waiting for a slot of the connection budget: %w", err)
	}
	return slot, nil, nil
}

// backoff waits out wait, the pause after a failed dial.
func (p *pool) backoff(ctx context.Context, wait time.Duration) error {
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("nntp: waiting to dial again after a failure: %w", ctx.Err())
	}
}

func (p *pool) dial(ctx context.Context) (*conn, error) {
	p.dials.Add(1)
	c, err := dial(ctx, p.cfg)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil { // a cancelled dial says nothing of the server
			p.fails++
			p.next = time.Now().Add(backoff.Wait(p.fails, p.cfg.DialBackoff, p.cfg.MaxDialBackoff, rand.Float64()))
		}
		return nil, err
	}
	p.fails = 0
	return c, nil
}

// hold records that c holds slot, and closes c when slot is lost.
func (p *pool) hold(c *conn, slot Slot) {
	h := &held{slot: slot, stop: make(chan struct{})}
	p.mu.Lock()
	p.held[c] = h
	p.mu.Unlock()
	go func() {
		select {
		case <-slot.Lost():
			p.lose(c, h)
		case <-h.stop:
		}
	}()
}

// lose closes c, whose slot h was lost: at once when it is idle; when it
// is busy, its socket is closed, which fails the call on it, and put
// drops it.
func (p *pool) lose(c *conn, h *held) {
	p.mu.Lock()
	if p.held[c] != h {
		p.mu.Unlock()
		return
	}
	h.lost = true
	i := slices.Index(p.idle, c)
	if i >= 0 {
		p.idle = slices.Delete(p.idle, i, i+1)
	}
	p.mu.Unlock()
	if i >= 0 {
		p.drop(c, true)
		return
	}
	c.Close()
}

// lost reports whether c's slot was lost.
func (p *pool) lost(c *conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := p.held[c]
	return h != nil && h.lost
}

// expired reports whether c's slot may have run out. p.mu is held.
func (p *pool) expired(c *conn) bool {
	h := p.held[c]
	if h == nil {
		return false
	}
	e, ok := h.slot.(expirer)
	return ok && e.Expired()
}

// yields reports whether slot asks for itself back (Slot's optional
// Yield).
func yields(slot Slot) bool {
	y, ok := slot.(yielder)
	return ok && y.Yield()
}

// busy stops c's idle timer: a call took it. p.mu is held.
func (p *pool) busy(c *conn) {
	if h := p.held[c]; h != nil && h.idle != nil {
		h.idle.Stop()
		h.idle = nil
	}
}

// drop closes c, saying QUIT first when polite and c is not broken (so the
// server counts it closed before its slot goes to another), and gives back
// its slot.
func (p *pool) drop(c *conn, polite bool) {
	if polite {
		c.quit()
	} else {
		c.Close()
	}
	p.mu.Lock()
	h := p.held[c]
	delete(p.held, c)
	if h != nil && h.idle != nil {
		h.idle.Stop()
	}
	p.mu.Unlock()
	if h != nil {
		close(h.stop)
		h.slot.Release()
	}
}

// put gives c back: to a call waiting for a slot, or to the idle ones; it
// closes c when it is broken, its slot was lost, or the pool closed, and
// politely (QUIT, then the slot given back) when its slot yields: another
// coordinator waits for it, so neither a local waiter nor the idle ones
// keep it.
func (p *pool) put(c *conn) {
	p.mu.Lock()
	h := p.held[c]
	if c.broken || p.closed || (h != nil && h.lost) || (h != nil && yields(h.slot)) {
		p.mu.Unlock()
		p.drop(c, true)
		<-p.slots
		return
	}
	c.used = true
	if len(p.waiters) > 0 {
		i := max(0, slices.IndexFunc(p.waiters, func(w *waiter) bool { return !w.fetch }))
		w := p.waiters[i]
		p.waiters = slices.Delete(p.waiters, i, i+1)
		w.ch <- c
		w.cancel()
		p.mu.Unlock()
		<-p.slots
		return
	}
	p.idle = append(p.idle, c)
	if h != nil {
		h.gen++
		gen := h.gen
		h.idle = time.AfterFunc(p.cfg.IdleTimeout, func() { p.expire(c, h, gen) })
	}
	p.mu.Unlock()
	<-p.slots
}

// expire closes c, idle since its timer gen was set, unless a call took
// it meanwhile.
func (p *pool) expire(c *conn, h *held, gen int) {
	p.mu.Lock()
	i := slices.Index(p.idle, c)
	if p.held[c] != h || h.gen != gen || h.idle == nil || i < 0 {
		p.mu.Unlock()
		return
	}
	p.idle = slices.Delete(p.idle, i, i+1)
	h.idle = nil
	p.mu.Unlock()
	p.drop(c, true)
}

// close closes the idle connections, and ends the waits for a slot; busy
// connections close when put back.
func (p *pool) close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	for _, w := range p.waiters {
		w.cancel()
	}
	p.mu.Unlock()
	for _, c := range idle {
		p.drop(c, true)
	}
}
