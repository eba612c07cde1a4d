package nntp

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeindex/edgeindex/internal/backoff"
)

// pool holds up to cfg.MaxConns connections. A connection is taken by one
// call at a time; a broken one is closed, never put back.
//
// Fetches take a token of fetches (reserve) before a connection: there are
// MaxConns-1 of them when MaxConns > 1, so however long fetches run, one
// connection of the budget is always left for GROUP, which the planner
// needs to see new articles. With MaxConns 1 GROUP shares the one
// connection, and waits at most one fetch's deadline.
type pool struct {
	cfg     *Config
	slots   chan struct{} // a token per connection open or being dialled
	fetches chan struct{} // a token per fetch holding or waiting for a connection

	mu     sync.Mutex
	idle   []*conn // most recently used last
	closed bool
	fails  int       // consecutive failed dials
	next   time.Time // no dial before this after a failure

	xover atomic.Bool // the server answered 500 to OVER: use XOVER
	dials atomic.Int64
}

func newPool(cfg *Config) *pool {
	return &pool{cfg: cfg, slots: make(chan struct{}, cfg.MaxConns), fetches: make(chan struct{}, max(1, cfg.MaxConns-1))}
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
// are open. It blocks while all are busy, until ctx is done.
func (p *pool) get(ctx context.Context, fresh bool) (*conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("nntp: waiting for a connection: %w", ctx.Err())
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		<-p.slots
		return nil, ErrClosed
	}
	if !fresh && len(p.idle) > 0 {
		c := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		p.mu.Unlock()
		return c, nil
	}
	if fresh && len(p.idle) > 0 {
		// The caller wants a new connection (the last idle one it was given
		// turned out dead): the oldest idle one is likely dead too.
		old := p.idle[0]
		p.idle = p.idle[1:]
		p.mu.Unlock()
		old.Close()
		p.mu.Lock()
	}
	wait := time.Until(p.next)
	if p.fails == 0 {
		wait = 0
	}
	p.mu.Unlock()
	c, err := p.dial(ctx, wait)
	if err != nil {
		<-p.slots
		return nil, err
	}
	return c, nil
}

func (p *pool) dial(ctx context.Context, wait time.Duration) (*conn, error) {
	if wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("nntp: waiting to dial again after a failure: %w", ctx.Err())
		}
	}
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

// put gives c back, or closes it when it is broken or the pool closed.
func (p *pool) put(c *conn) {
	p.mu.Lock()
	if c.broken || p.closed {
		p.mu.Unlock()
		c.Close()
		<-p.slots
		return
	}
	c.used = true
	p.idle = append(p.idle, c)
	p.mu.Unlock()
	<-p.slots
}

// close closes the idle connections; busy ones close when put back.
func (p *pool) close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, c := range idle {
		c.quit()
	}
}
