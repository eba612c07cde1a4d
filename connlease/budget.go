package connlease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/edgeindex/edgeindex"
)

// Defaults of Config.
const (
	// DefaultTTL is how long a slot's lease holds unless renewed: a
	// coordinator that dies leaves its slots to the others this long
	// after. Held slots are renewed every TTL/3.
	DefaultTTL = 30 * time.Second
	// DefaultPoll is how often Acquire asks again for a slot while every
	// slot is held (with jitter, so waiters on many coordinators spread).
	DefaultPoll = 500 * time.Millisecond
	// MaxPoll bounds Poll: the demand counts the wants of the last three
	// polls, and a Store keeps a want for at least 3 × MaxPoll.
	MaxPoll = 10 * time.Minute
)

// releaseTimeout bounds the ReleaseSlot of a slot given back (and Close's
// give-back of them all): past it the lease runs out by itself.
const releaseTimeout = 5 * time.Second

// takeTimeout bounds a TakeSlot. The take runs on a context of its own,
// not the caller's: a take cancelled after its commit would report an
// error and leave the slot leased to nobody for a TTL.
const takeTimeout = 10 * time.Second

// ErrClosed is returned by Acquire once the SharedBudget is closed.
var ErrClosed = errors.New("connlease: the budget is closed")

// Config configures a SharedBudget. Store, Size and Holder are required; the
// zero value of every other field means its default.
type Config struct {
	Store Store
	// Provider names the account whose budget it is: "" for the default
	// provider.
	Provider string
	// Size is the account's connections in all, shared by every holder.
	Size int
	// Holder names this coordinator in the leases (its owner id).
	Holder string
	// TTL is how long a lease holds unless renewed. Default DefaultTTL.
	// A slot is renewed every TTL/3, and counted lost when no renewal has
	// succeeded within TTL less a sixth of it, by the local clock: before
	// the database would let another holder take it over.
	TTL time.Duration
	// Poll is how often Acquire asks again while every slot is held.
	// Default DefaultPoll.
	Poll   time.Duration
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if c.Poll == 0 {
		c.Poll = DefaultPoll
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Store == nil:
		return edgeindex.Invalidf("connlease: a Store is required")
	case c.Size < 1 || c.Size > MaxSize:
		return edgeindex.Invalidf("connlease: Size %d: want 1 to %d connections", c.Size, MaxSize)
	case c.Holder == "":
		return edgeindex.Invalidf("connlease: a Holder is required")
	case c.TTL < 30*time.Millisecond:
		return edgeindex.Invalidf("connlease: TTL %s: want at least 30ms", c.TTL)
	case c.Poll < 0 || c.Poll > MaxPoll:
		return edgeindex.Invalidf("connlease: Poll %s: want 0 to %s", c.Poll, MaxPoll)
	}
	return nil
}

// SharedBudget is a provider's connection budget in a Store, shared with every
// other SharedBudget of that provider on the database: nntp.Config.Budget. Each
// slot it hands out is a lease that a goroutine of its own renews while it
// is held. Close it when the Source using it is closed.
type SharedBudget struct {
	cfg Config

	mu     sync.Mutex
	held   map[*slot]struct{}
	freed  chan struct{} // closed, and replaced, when a slot is given back
	closed bool
	// waiting counts the Acquires waiting; share is the last refresh of
	// the demand's decision (share.go), its yields counted down as slots
	// say Yield.
	waiting int
	share   share
	gaveWay bool // a slot yielded since the last refresh that found no one starved

	// ctx ends at Close: it stops the renewer and the refresher, and
	// their calls to the store run on it.
	ctx    context.Context
	cancel context.CancelFunc

	done      chan struct{} // the renewer ended
	refreshed chan struct{} // the refresher ended
}

var _ Budget = (*SharedBudget)(nil)

// New checks cfg and starts the SharedBudget's renewer and the refresher of the
// provider's demand, which shares the slots fairly between the holders
// (share.go).
func New(cfg Config) (*SharedBudget, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	b := &SharedBudget{cfg: cfg, held: map[*slot]struct{}{}, freed: make(chan struct{}), done: make(chan struct{}),
		refreshed: make(chan struct{})}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	go b.renewer()
	go b.refresher()
	return b, nil
}

// slot is one slot held: its lease, and when it counts as lost by the
// local clock.
type slot struct {
	b        *SharedBudget
	lease    Lease     // b.mu guards it
	deadline time.Time // no renewal succeeded by then: lost
	renewed  time.Time // when the last successful take or renewal was sent
	timer    *time.Timer
	lost     chan struct{}
	isLost   bool
	released bool
	renewing bool // the renewer is renewing it
	yielded  bool // it said Yield: its connection gives it back at its put
}

func (s *slot) Lost() <-chan struct{} { return s.lost }

// Expired reports whether the slot is lost, or its deadline has passed by
// the local monotonic clock though the timer that would mark it lost has
// not run yet (a process paused past it, then resumed): a connection is
// not reused on it.
func (s *slot) Expired() bool {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	return s.isLost || !time.Now().Before(s.deadline)
}

// Release gives the slot back (ReleaseSlot, bounded by a timeout); an
// error is logged, and the lease then runs out by itself. A second call
// does nothing.
func (s *slot) Release() {
	b := s.b
	b.mu.Lock()
	if s.released {
		b.mu.Unlock()
		return
	}
	s.released = true
	delete(b.held, s)
	if len(b.held) == 0 {
		// Nothing left to yield: a slot taken later keeps until a refresh
		// counts it.
		b.share.yields = 0
	}
	s.timer.Stop()
	s.loseLocked()
	l := s.lease
	b.mu.Unlock()
	b.giveBack(l)
	b.mu.Lock()
	close(b.freed)
	b.freed = make(chan struct{})
	b.mu.Unlock()
}

// loseLocked closes Lost once. b.mu is held.
func (s *slot) loseLocked() {
	if !s.isLost {
		s.isLost = true
		close(s.lost)
	}
}

// Acquire takes a slot no other holder has, waiting while every slot is
// held (asking again every Poll, or at once when this SharedBudget gives one
// back) until ctx ends. It also waits, without asking, while this SharedBudget
// holds its fair share or more and another holder that wants a slot holds
// less: a slot given back then goes to that holder, not back to this one.
func (b *SharedBudget) Acquire(ctx context.Context) (Slot, error) {
	b.mu.Lock()
	b.waiting++
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.waiting--
		b.mu.Unlock()
	}()
	for {
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			return nil, ErrClosed
		}
		full := len(b.held) >= b.cfg.Size || // no need to ask the store
			b.holdBack()
		freed := b.freed
		b.mu.Unlock()
		if !full {
			sent := time.Now()
			l, ok, err := b.take(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				return nil, fmt.Errorf("connlease: take a slot of %q: %w", b.cfg.Provider, err)
			}
			if ok && ctx.Err() != nil { // the caller gave up meanwhile: give it back
				b.giveBack(l)
				return nil, ctx.Err()
			}
			if ok {
				return b.add(l, sent)
			}
		}
		t := time.NewTimer(time.Duration(float64(b.cfg.Poll) * (0.5 + rand.Float64())))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-b.ctx.Done():
			t.Stop()
			return nil, ErrClosed
		case <-freed:
		case <-t.C:
		}
		t.Stop()
	}
}

// take runs TakeSlot on a context of its own, bounded by takeTimeout (and
// ended by Close), so that its reply is never lost to ctx's end after the
// take committed: Acquire gives back a slot taken for a caller gone.
func (b *SharedBudget) take(ctx context.Context) (Lease, bool, error) {
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), takeTimeout)
	defer cancel()
	return b.cfg.Store.TakeSlot(tctx, b.cfg.Provider, b.cfg.Size, b.cfg.Holder, b.cfg.TTL)
}

// giveBack releases l, bounded by releaseTimeout; an error is logged, and
// the lease then runs out by itself.
func (b *SharedBudget) giveBack(l Lease) {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	if err := b.cfg.Store.ReleaseSlot(ctx, l); err != nil {
		b.cfg.Logger.Warn("connlease: give a connection slot back; it runs out by itself", "provider", l.Provider, "slot", l.N, "err", err)
	}
}

// add records the lease l taken at sent.
func (b *SharedBudget) add(l Lease, sent time.Time) (Slot, error) {
	s := &slot{b: b, lease: l, renewed: sent, deadline: b.deadline(sent), lost: make(chan struct{})}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		b.giveBack(l)
		return nil, ErrClosed
	}
	b.held[s] = struct{}{}
	s.timer = time.AfterFunc(time.Until(s.deadline), func() { b.expire(s) })
	b.mu.Unlock()
	return s, nil
}

// deadline is when a lease taken or renewed at sent counts as lost unless
// renewed again: TTL after it was sent (the store's now is later), less a
// margin for the clocks' drift and the time Lost takes to close the
// connection.
func (b *SharedBudget) deadline(sent time.Time) time.Time {
	return sent.Add(b.cfg.TTL - b.cfg.TTL/6)
}

// expire marks s lost when its deadline has passed with no renewal.
func (b *SharedBudget) expire(s *slot) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.released || s.isLost {
		return
	}
	if wait := time.Until(s.deadline); wait > 0 { // renewed meanwhile
		s.timer.Reset(wait)
		return
	}
	b.cfg.Logger.Warn("connlease: a connection slot was not renewed in time; closing its connection",
		"provider", s.lease.Provider, "slot", s.lease.N)
	s.loseLocked()
}

// renewer renews, every tick, the slots last renewed TTL/3 ago or more,
// each in a goroutine of its own so one slow renewal does not hold up the
// others.
func (b *SharedBudget) renewer() {
	defer close(b.done)
	tick := time.NewTicker(max(b.cfg.TTL/12, time.Millisecond))
	defer tick.Stop()
	ctx := b.ctx
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := time.Now()
		b.mu.Lock()
		for s := range b.held {
			if !s.isLost && !s.renewing && now.Sub(s.renewed) >= b.cfg.TTL/3 {
				s.renewing = true
				wg.Go(func() { b.renew(ctx, s) })
			}
		}
		b.mu.Unlock()
	}
}

// renew renews s once, within what is left of its deadline.
func (b *SharedBudget) renew(ctx context.Context, s *slot) {
	b.mu.Lock()
	l, deadline := s.lease, s.deadline
	b.mu.Unlock()
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	sent := time.Now()
	nl, err := b.cfg.Store.RenewSlot(ctx, l, b.cfg.TTL)
	b.mu.Lock()
	defer b.mu.Unlock()
	s.renewing = false
	if s.released || s.isLost {
		return
	}
	switch {
	case errors.Is(err, ErrLost):
		b.cfg.Logger.Warn("connlease: a connection slot was taken over; closing its connection",
			"provider", l.Provider, "slot", l.N, "err", err)
		s.loseLocked()
	case err != nil:
		// Tried again at the next tick; the deadline's timer counts it
		// lost if none succeeds in time.
		b.cfg.Logger.Warn("connlease: renew a connection slot", "provider", l.Provider, "slot", l.N, "err", err)
	default:
		s.lease, s.renewed, s.deadline = nl, sent, b.deadline(sent)
		s.timer.Reset(time.Until(s.deadline))
	}
}

// Held is how many slots this SharedBudget holds now.
func (b *SharedBudget) Held() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.held)
}

// Close stops the renewer, gives back every slot still held (their Lost
// channels close, so connections still holding them close) and makes
// Acquire fail with ErrClosed. Close the Sources using the SharedBudget first:
// they give back their slots once their connections are closed, so none
// is handed to another holder while its connection is open.
func (b *SharedBudget) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	held := make([]*slot, 0, len(b.held))
	for s := range b.held {
		held = append(held, s)
	}
	b.mu.Unlock()
	b.cancel()
	<-b.done
	<-b.refreshed
	// At once, each within its timeout: a slow database costs Close that
	// timeout, not that times the slots.
	var wg sync.WaitGroup
	for _, s := range held {
		wg.Go(s.Release)
	}
	wg.Wait()
	return nil
}
