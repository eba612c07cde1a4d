package prefetch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/corpus"
	"github.com/edgeindex/edgeindex/internal/backoff"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/overview"
	"github.com/edgeindex/edgeindex/sources"
	"github.com/edgeindex/edgeindex/spool"
)

// Target is a range the prefetcher fetches chunks for.
type Target struct {
	Range     lease.Range
	ChunkSize int64
}

// Targets lists what to prefetch: the leased ranges first, in the order a
// grant takes them, then up to lookahead pending ranges in the same order.
type Targets interface {
	PrefetchTargets(ctx context.Context, lookahead int) ([]Target, error)
}

// Config configures a Prefetcher. Source, Spool, Claims and Targets
// are required; the zero value of every other field means its default.
type Config struct {
	Source  sources.ChunkSource
	Spool   spool.Store
	Corpus  corpus.Store // where capture ranges go; nil: capture ranges go to the spool
	Claims  spool.Claims
	Targets Targets
	// Owner names this coordinator in chunk claims. Default: "coordinator".
	Owner string
	// Concurrency bounds the fetches in flight. Default
	// DefaultConcurrency.
	Concurrency int
	// Lookahead is how many pending ranges to fetch ahead into. Default 4.
	Lookahead int
	// ClaimTTL is how long a claim holds unrenewed: the claim is renewed
	// every ClaimTTL/3 while its fetch runs, so a coordinator that dies
	// leaves its chunks to the others within ClaimTTL. Default
	// DefaultClaimTTL.
	ClaimTTL time.Duration
	// Attempts is how many times a chunk is fetched before the prefetcher
	// gives it up until its next pass. Default 5.
	Attempts int
	// Backoff is the first retry's wait; each retry doubles it, with
	// jitter, up to MaxBackoff. Defaults 200ms and 10s.
	Backoff, MaxBackoff time.Duration
	// Idle is how long Run waits between passes when nothing kicks it.
	// Default 2s.
	Idle time.Duration
	// Clock times the waits between retries; tests inject one. Default
	// clock.Real.
	Clock  clock.Clock
	Logger *slog.Logger
}

// DefaultClaimTTL is a claim's time to live when Config.ClaimTTL is
// zero: short, since a claim is renewed while its fetch runs, and a dead
// coordinator's claims wait this long for another.
const DefaultClaimTTL = 15 * time.Second

// DefaultConcurrency is the fetches in flight of a prefetcher whose
// Concurrency is zero.
const DefaultConcurrency = 4

// withDefaults returns c with every zero field that has a default set to it.
func (c Config) withDefaults() Config {
	c.Owner = cmp.Or(c.Owner, "coordinator")
	c.Concurrency = cmp.Or(c.Concurrency, DefaultConcurrency)
	c.Lookahead = cmp.Or(c.Lookahead, 4)
	c.ClaimTTL = cmp.Or(c.ClaimTTL, DefaultClaimTTL)
	c.Attempts = cmp.Or(c.Attempts, 5)
	c.Backoff = cmp.Or(c.Backoff, 200*time.Millisecond)
	c.MaxBackoff = cmp.Or(c.MaxBackoff, 10*time.Second)
	c.Idle = cmp.Or(c.Idle, 2*time.Second)
	if c.Clock == nil {
		c.Clock = clock.Real
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// validate checks a Config that has its defaults.
func (c Config) validate() error {
	if c.Source == nil || c.Spool == nil || c.Claims == nil || c.Targets == nil {
		return edgeindex.Invalidf("prefetch: Source, Spool, Claims and Targets are required")
	}
	if c.Concurrency < 1 || c.Lookahead < 0 || c.Attempts < 1 || c.ClaimTTL < 0 {
		return edgeindex.Invalidf("prefetch: Concurrency and Attempts must be at least 1, Lookahead and ClaimTTL at least 0")
	}
	return nil
}

// Prefetcher fetches the chunks of leased ranges, in stream order from each
// range's next, then looks ahead into pending ranges. Fetches run with
// bounded concurrency, each under a claim in the shared database, retried
// with backoff. Capture ranges go to the corpus, the rest to the spool.
// Lookahead fills at most half the spool, so leased ranges always have room.
type Prefetcher struct {
	cfg  Config
	kick chan struct{}

	mu      sync.Mutex
	arrived chan struct{}
}

// New checks cfg and returns a Prefetcher; Run starts it.
func New(cfg Config) (*Prefetcher, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Prefetcher{cfg: cfg, kick: make(chan struct{}, 1), arrived: make(chan struct{})}, nil
}

// Kick asks for a pass soon: a stream opened, a chunk was dropped, ranges
// were planned.
func (p *Prefetcher) Kick() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Notify returns a channel closed when the next chunk is stored, in the
// spool or the corpus. Take it before checking for a chunk, then wait on it.
func (p *Prefetcher) Notify() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.arrived
}

// Stored tells Notify's waiters that a chunk was stored elsewhere (another
// coordinator's prefetcher, into storage they share), so that the streams
// waiting for it look again at once.
func (p *Prefetcher) Stored() { p.broadcast() }

func (p *Prefetcher) broadcast() {
	p.mu.Lock()
	close(p.arrived)
	p.arrived = make(chan struct{})
	p.mu.Unlock()
}

// Run makes passes until ctx ends: one at once, then one whenever Kick is
// called or Idle passes. A failed pass is logged; Run returns ctx's error.
func (p *Prefetcher) Run(ctx context.Context) error {
	idle := time.NewTimer(0)
	defer idle.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.kick:
		case <-idle.C:
		}
		if _, err := p.Pass(ctx); err != nil && ctx.Err() == nil {
			p.cfg.Logger.Warn("prefetch pass", "err", err)
		}
		idle.Reset(p.cfg.Idle)
	}
}

// Pass fetches what the targets lack, once, and returns how many chunks it
// stored. It waits for room in the spool for leased ranges; lookahead stops
// when the spool is half full.
func (p *Prefetcher) Pass(ctx context.Context) (int, error) {
	targets, err := p.cfg.Targets.PrefetchTargets(ctx, p.cfg.Lookahead)
	if err != nil {
		return 0, fmt.Errorf("prefetch: %w", err)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(p.cfg.Concurrency)
	var mu sync.Mutex
	stored := 0
	var last int64 // the size of the last chunk stored: the room to wait for
	counted := &countedSet{ids: map[int64]bool{}}
	for _, t := range targets {
		leased := t.Range.State == lease.StateLeased
		first, ok := lease.SpanAt(t.Range.Start, t.Range.End, t.ChunkSize, t.Range.Next)
		if !ok {
			continue // every article is stored
		}
		for _, span := range lease.Spans(first.From, t.Range.End, t.ChunkSize) {
			if gctx.Err() != nil {
				break
			}
			if p.has(t, span) {
				continue
			}
			if counted.has(t.Range.ID) {
				break // the range's next attempt is the next pass's
			}
			if !spool.InCorpus(t.Range, p.cfg.Corpus) {
				if leased {
					mu.Lock()
					need := min(last, p.cfg.Spool.MaxBytes())
					mu.Unlock()
					if err := p.cfg.Spool.WaitRoom(gctx, need); err != nil {
						break
					}
				} else if p.cfg.Spool.Size() >= p.cfg.Spool.MaxBytes()/2 {
					break
				}
			}
			g.Go(func() error {
				n, err := p.fetch(gctx, t, span, counted)
				if err != nil {
					p.cfg.Logger.Warn("prefetch", "range", t.Range.ID, "group", t.Range.Group, "from", span.From, "to", span.To, "err", err)
					return nil // the chunk is tried again at the next pass
				}
				if n > 0 {
					mu.Lock()
					stored++
					last = int64(n)
					mu.Unlock()
				}
				return nil
			})
		}
	}
	err = g.Wait()
	return stored, errors.Join(err, ctx.Err())
}

func (p *Prefetcher) has(t Target, span lease.Span) bool {
	if spool.InCorpus(t.Range, p.cfg.Corpus) {
		return p.cfg.Corpus.Has(t.Range.Group, span)
	}
	return p.cfg.Spool.Has(t.Range.ID, span)
}

// countedSet is the ranges a pass has counted a corrupt attempt against:
// one a range a pass, however many of its chunks the source refuses, so
// that a few seconds of a provider's garbage cannot fail a range at once.
type countedSet struct {
	mu  sync.Mutex
	ids map[int64]bool
}

func (c *countedSet) has(id int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ids[id]
}

// add reports whether id was not in the set, and puts it there.
func (c *countedSet) add(id int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ids[id] {
		return false
	}
	c.ids[id] = true
	return true
}

// fetch claims, fetches and stores one chunk; it returns the chunk's size,
// or 0 when another coordinator holds the claim. The chunk is claimed
// once the source holds what the fetch needs (sources.Ready: a connection
// of the provider's budget), so a fetch that only waits for a connection
// holds no claim that keeps the others off the chunk; a source that never
// calls Ready is claimed when its Fetch returns. The claim is then renewed
// every ClaimTTL/3 while the fetch runs (hold), so it outlasts any try,
// and a coordinator that dies leaves it to the others within ClaimTTL. A
// renewal that finds the claim taken by another ends the fetch: the chunk
// is theirs. A chunk the source cannot make counts against its range when
// the pass has not counted one yet.
func (p *Prefetcher) fetch(ctx context.Context, t Target, span lease.Span, counted *countedSet) (int, error) {
	id := t.Range.ID
	fctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	release := func() {}
	claimed := false
	claim := func() error { // the tries after one that claimed keep its claim
		if claimed {
			return nil
		}
		ok, err := p.cfg.Claims.ClaimChunk(fctx, id, span, p.cfg.Owner, p.cfg.ClaimTTL)
		switch {
		case err != nil:
			return err
		case !ok:
			return errClaimTaken
		}
		claimed = true
		release = p.hold(fctx, cancel, id, span)
		return nil
	}
	var data []byte
	var err error
	for attempt := 1; ; attempt++ {
		data, err = p.cfg.Source.Fetch(sources.WithReady(fctx, claim), t.Range.Group, span)
		if err == nil || attempt == p.cfg.Attempts || errors.Is(err, errClaimTaken) || errors.Is(err, sources.ErrNoSuchGroup) ||
			errors.Is(err, overview.ErrBadChunk) || fctx.Err() != nil {
			break
		}
		if serr := clock.Sleep(fctx, p.cfg.Clock, backoff.Wait(attempt, p.cfg.Backoff, p.cfg.MaxBackoff, rand.Float64())); serr != nil {
			break
		}
	}
	if !claimed && !errors.Is(err, errClaimTaken) && (err == nil || errors.Is(err, overview.ErrBadChunk)) {
		// The source never said it was ready: claim what it made now.
		if cerr := claim(); cerr != nil {
			err = cerr
		}
	}
	// The renewals stop before the claim is given back or marked
	// fetched, which its last renewal leaves time for.
	lost := errors.Is(context.Cause(fctx), errClaimLost)
	release()
	switch {
	case errors.Is(err, errClaimTaken):
		return 0, nil // another coordinator is fetching it
	case lost:
		p.cfg.Logger.Warn("prefetch: the chunk's claim was taken by another coordinator during its fetch; leaving it to them",
			"range", id, "group", t.Range.Group, "from", span.From, "to", span.To, "err", err)
		return 0, nil
	case !claimed:
		return 0, fetchError(t, span, err) // nothing to give back
	}
	if cc, ok := p.cfg.Claims.(spool.CorruptClaims); ok && err != nil && errors.Is(err, overview.ErrBadChunk) && counted.add(id) {
		return 0, p.countCorrupt(ctx, cc, t, span, err)
	}
	if err != nil {
		// Give the claim back, so this or another coordinator tries again.
		return 0, errors.Join(fetchError(t, span, err),
			p.cfg.Claims.ForgetChunk(context.WithoutCancel(ctx), id, span, p.cfg.Owner))
	}
	if err := p.store(ctx, t, span, data); err != nil {
		return 0, err
	}
	p.broadcast()
	return len(data), nil
}

// errClaimTaken ends a fetch whose chunk another coordinator claimed
// before this one held a connection for it.
var errClaimTaken = errors.New("prefetch: another coordinator claimed the chunk")

// errClaimLost ends a fetch whose claim another coordinator took.
var errClaimLost = errors.New("prefetch: the chunk's claim was taken by another coordinator")

// hold renews the claim of chunk (id, span) every ClaimTTL/3 until
// the func it returns is called, and ends ctx through cancel, with cause
// errClaimLost, if a renewal finds it taken. A renewal that fails (the
// database is away) is tried again at the next tick: the claim may still
// hold, and if it ran out the next renewal says so.
func (p *Prefetcher) hold(ctx context.Context, cancel context.CancelCauseFunc, id int64, span lease.Span) func() {
	stop := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		// Real time, not Config.Clock: the claim runs out by the
		// database's clock.
		tick := time.NewTicker(max(p.cfg.ClaimTTL/3, time.Millisecond))
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-stop:
				return
			case <-tick.C:
			}
			// A renewal under way when release is called ends first
			// (release waits for it), so none lands after the claim is
			// given back or marked fetched.
			ok, err := p.cfg.Claims.ClaimChunk(context.WithoutCancel(ctx), id, span, p.cfg.Owner, p.cfg.ClaimTTL)
			if err == nil && !ok {
				cancel(errClaimLost)
				return
			}
		}
	}()
	return func() {
		close(stop)
		<-stopped
	}
}

// fetchError names the chunk whose fetch failed with err.
func fetchError(t Target, span lease.Span, err error) error {
	return fmt.Errorf("fetch %s %d-%d: %w", t.Range.Group, span.From, span.To, err)
}

// countCorrupt counts a chunk the source cannot make (its fetch failed with
// err) against its range, which frees the claim for the next pass, and
// fails the range at the store's maximum.
func (p *Prefetcher) countCorrupt(ctx context.Context, cc spool.CorruptClaims, t Target, span lease.Span, err error) error {
	reason := err.Error()
	if len(reason) > 300 { // cut on a rune: the database keeps UTF-8
		reason = strings.ToValidUTF8(reason[:300], "") + "..."
	}
	rg, cerr := cc.ChunkCorrupt(context.WithoutCancel(ctx), t.Range.ID, span, p.cfg.Owner, reason)
	if cerr != nil {
		return errors.Join(fetchError(t, span, err), cerr)
	}
	p.cfg.Logger.Warn("prefetch: the source cannot make the chunk; counted as a corrupt attempt of its range",
		"range", t.Range.ID, "group", t.Range.Group, "from", span.From, "to", span.To, "state", rg.State, "attempts", rg.Attempts, "err", err)
	return nil
}

// store puts the fetched chunk where its range's chunks wait, the corpus or
// the spool, and marks it fetched; when it cannot put it, it gives the
// claim back.
func (p *Prefetcher) store(ctx context.Context, t Target, span lease.Span, data []byte) error {
	var err error
	if spool.InCorpus(t.Range, p.cfg.Corpus) {
		err = p.cfg.Corpus.Put(t.Range.Group, span, data)
	} else {
		err = p.cfg.Spool.Put(t.Range.ID, span, data)
	}
	if err != nil {
		return errors.Join(err, p.cfg.Claims.ForgetChunk(context.WithoutCancel(ctx), t.Range.ID, span, p.cfg.Owner))
	}
	return p.cfg.Claims.ChunkFetched(ctx, t.Range.ID, span, p.cfg.Owner)
}
