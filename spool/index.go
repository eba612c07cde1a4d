package spool

import (
	"context"
	"sync"
	"time"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/lease"
)

// index is what Disk and Bucket keep of a spool in memory: its chunks and
// their sizes, the total, the bound, and the channels that wake the
// waiters of Notify, WaitChunk and WaitRoom. Both embed it, so they share
// Has, Size, MaxBytes, WaitRoom and Notify, and the wait of WaitChunk.
type index struct {
	mu      sync.Mutex
	closed  bool
	max     int64
	size    int64
	chunks  map[int64]map[lease.Span]int64 // rangeID -> span -> size
	arrived chan struct{}                  // closed and replaced by every chunk that appears
	room    chan struct{}                  // closed and replaced whenever size falls
}

// newIndex returns an empty index of the bound max.
func newIndex(max int64) index {
	return index{
		max:     max,
		chunks:  make(map[int64]map[lease.Span]int64),
		arrived: make(chan struct{}),
		room:    make(chan struct{}),
	}
}

// Has implements Store.
func (x *index) Has(rangeID int64, span lease.Span) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return false
	}
	_, ok := x.chunks[rangeID][span]
	return ok
}

// Size implements Store.
func (x *index) Size() int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.size
}

// MaxBytes implements Store.
func (x *index) MaxBytes() int64 { return x.max }

// WaitRoom implements Store.
func (x *index) WaitRoom(ctx context.Context, n int64) error { return x.waitRoom(ctx, n, 0, nil) }

// waitRoom waits until there is room for n bytes. When poll is set, it
// also calls it every pollEvery while it waits (poll may free room), as
// waitChunk polls.
func (x *index) waitRoom(ctx context.Context, n int64, pollEvery time.Duration, poll func()) error {
	if n < 0 || n > x.max {
		return edgeindex.Invalidf("spool: wait for room for %d bytes: want 0 to %d", n, x.max)
	}
	var tick <-chan time.Time
	if poll != nil {
		t := time.NewTicker(pollEvery)
		defer t.Stop()
		tick = t.C
	}
	for {
		x.mu.Lock()
		if x.closed {
			x.mu.Unlock()
			return ErrClosed
		}
		if x.size+n <= x.max {
			x.mu.Unlock()
			return nil
		}
		room := x.room
		x.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			return ctx.Err()
		case <-tick:
			poll()
		}
	}
}

// Notify implements Store: the channel is closed when a chunk appears.
func (x *index) Notify() <-chan struct{} {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.arrived
}

// waitChunk waits until the chunk is in the index. When poll is set, it
// also calls it every pollEvery, and ends the wait when poll reports the
// chunk found.
func (x *index) waitChunk(ctx context.Context, rangeID int64, span lease.Span, pollEvery time.Duration, poll func() bool) error {
	var tick <-chan time.Time
	if poll != nil {
		t := time.NewTicker(pollEvery)
		defer t.Stop()
		tick = t.C
	}
	for {
		x.mu.Lock()
		if x.closed {
			x.mu.Unlock()
			return ErrClosed
		}
		_, ok := x.chunks[rangeID][span]
		arrived := x.arrived
		x.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-arrived:
		case <-ctx.Done():
			return ctx.Err()
		case <-tick:
			if poll() {
				return nil
			}
		}
	}
}

// wakeRoom wakes WaitRoom callers. The caller holds x.mu.
func (x *index) wakeRoom() {
	close(x.room)
	x.room = make(chan struct{})
}

// wakeArrived wakes Notify and WaitChunk callers. The caller holds x.mu.
func (x *index) wakeArrived() {
	close(x.arrived)
	x.arrived = make(chan struct{})
}

// close marks the index closed and wakes every waiter; false when it was
// closed already. The caller holds x.mu.
func (x *index) close() bool {
	if x.closed {
		return false
	}
	x.closed = true
	close(x.arrived)
	close(x.room)
	return true
}
