package edge

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/lease"
)

// Defaults of WorkerConfig.
const (
	DefaultIdle        = 2 * time.Second
	DefaultStreamIdle  = 90 * time.Second
	DefaultStopTimeout = 10 * time.Second
	// DefaultTTL is the lease TTL assumed when a grant does not say.
	DefaultTTL = 60 * time.Second
	// maxIdleBackoff caps the wait after consecutive failed rounds.
	maxIdleBackoff = time.Minute
)

// WorkerConfig configures a Worker. Its zero value means the defaults,
// except Client and Handler, which are required.
type WorkerConfig struct {
	Client  *Client
	Handler Handler
	// Lanes are the lanes of ordered groups to work, in order, after each
	// try for a plain range. Empty means none: only unordered groups.
	Lanes []lease.Lane
	// Ranges is how many ranges of unordered groups the worker holds and
	// works at once: it leases them in one call (POST /v1/leases) and
	// posts the final batches that are ready together in one (POST
	// /v1/batches). The handler still sees one chunk at a time: the
	// ranges take turns at it, each range's chunks in order, so that one
	// range's wait for its stream or its batch's answer is another's turn;
	// a handler that carries state from chunk to chunk of a range must
	// then tell ranges apart by Chunk.Range. 0 means 1. A range of many chunks keeps the handler busy by itself,
	// and a second one held would wait, kept from other workers; set it
	// higher (up to api.MaxLeases) where ranges are a chunk or so (repair
	// ranges, small groups) and a cycle's calls cost more than its work.
	Ranges int
	// TTL overrides the lease TTL the coordinator grants, for the heartbeat
	// interval only (TTL/3). 0 means the grant's ttlSeconds.
	TTL time.Duration
	// Logger logs what the worker does. Nil means no logging.
	Logger *slog.Logger
	// Idle is the wait when there is no work; 0 means 2 s. After a round
	// that failed, the wait doubles with each further failure, up to 1 min.
	Idle time.Duration
	// StreamIdle is how long a stream may send nothing, not even a
	// keepalive (sent every 20 s at most), before it is taken as cut and
	// reopened. 0 means 90 s; negative means no limit.
	StreamIdle time.Duration
	// StopTimeout bounds the finish or release done after Run's context is
	// cancelled; 0 means 10 s.
	StopTimeout time.Duration
	// Clock times the worker's waits (the idle wait, the heartbeat interval,
	// the wait before reopening a cut stream) and tells the time for the
	// logs. It is used from several goroutines. Nil means the Client's.
	Clock clock.Clock
}

// withDefaults returns c with every zero field that has a default set to it.
func (c WorkerConfig) withDefaults() WorkerConfig {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Idle == 0 {
		c.Idle = DefaultIdle
	}
	if c.StreamIdle == 0 {
		c.StreamIdle = DefaultStreamIdle
	}
	if c.StopTimeout == 0 {
		c.StopTimeout = DefaultStopTimeout
	}
	if c.Ranges == 0 {
		c.Ranges = 1
	}
	if c.Clock == nil && c.Client != nil {
		c.Clock = c.Client.cfg.Clock
	}
	if c.Clock == nil {
		c.Clock = clock.Real
	}
	return c
}

// validate checks a WorkerConfig that has its defaults.
func (c WorkerConfig) validate() error {
	if c.Client == nil {
		return edgeindex.Invalidf("edge: Client is required")
	}
	if c.Handler == nil {
		return edgeindex.Invalidf("edge: Handler is required")
	}
	for _, l := range c.Lanes {
		if !l.Valid() {
			return edgeindex.Invalidf("edge: lane: history or tail, not %q", l)
		}
	}
	if c.Ranges < 0 || c.Ranges > api.MaxLeases {
		return edgeindex.Invalidf("edge: Ranges %d: want 0 to %d", c.Ranges, api.MaxLeases)
	}
	if c.TTL < 0 || c.Idle < 0 || c.StopTimeout < 0 {
		return edgeindex.Invalidf("edge: TTL, Idle and StopTimeout must not be negative")
	}
	return nil
}

// Stats counts a worker's progress since it was made.
type Stats struct {
	Ranges     int64 // ranges finished
	Batches    int64 // batches stored
	Duplicates int64 // batches answered as already stored
	Items      int64 // items in stored batches
	Headers    int64 // overview lines in stored batches
	Bytes      int64 // chunk bytes received
	Released   int64 // ranges given back
	Lost       int64 // ranges whose lease (or lane) was lost
	Corrupt    int64 // chunks reported corrupt
	// Replayed counts chunks of a lane handed to the handler again, their
	// batches stored already by an earlier holder, to rebuild its window.
	Replayed int64
}

type counters struct {
	ranges, batches, duplicates, items, headers, bytes, released, lost, corrupt, replayed atomic.Int64
}

// Worker works ranges with a Handler: it leases them, streams their chunks,
// posts one batch per chunk, heartbeats, and finishes or gives them back.
// See the package documentation for what it does in each case.
type Worker struct {
	cfg      WorkerConfig
	c        *Client
	log      *slog.Logger
	windowed Windowed // the handler, when it keeps a window
	n        counters
	handling sync.Mutex                              // held while the handler handles a chunk
	finals   *gather[api.RangeBatch, api.BatchReply] // posts the held ranges' final batches
	beats    *gather[api.RangeToken, time.Time]      // renews the held ranges' leases
}

// NewWorker returns a Worker, or an error that is edgeindex.ErrInvalid.
func NewWorker(cfg WorkerConfig) (*Worker, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	w := &Worker{cfg: cfg, c: cfg.Client, log: cfg.Logger}
	w.windowed, _ = cfg.Handler.(Windowed)
	// With no lanes to take turns with, a final batch asks for the next
	// range in its answer.
	w.finals = newFinals(cfg.Client, len(cfg.Lanes) == 0)
	w.beats = newHeartbeats(cfg.Client)
	return w, nil
}

// Stats returns the progress counters. It is safe to call while Run runs.
func (w *Worker) Stats() Stats {
	return Stats{
		Ranges: w.n.ranges.Load(), Batches: w.n.batches.Load(), Duplicates: w.n.duplicates.Load(),
		Items: w.n.items.Load(), Headers: w.n.headers.Load(), Bytes: w.n.bytes.Load(),
		Released: w.n.released.Load(), Lost: w.n.lost.Load(), Corrupt: w.n.corrupt.Load(),
		Replayed: w.n.replayed.Load(),
	}
}

// Run works until ctx is cancelled, then finishes the range in hand if
// only its finish (or its final batch, being posted) is left, or else
// releases it (and its lane), within StopTimeout, and returns nil. Each round asks for a plain range, then for
// each configured lane in order; a round with nothing to do waits Idle, a
// failed one backs off. Run returns early only with an error wrapping
// ErrUnauthorized: the node token was refused, so asking again is useless.
func (w *Worker) Run(ctx context.Context) error {
	defer w.finals.wait()
	defer w.beats.wait()
	fails := 0
	for ctx.Err() == nil {
		worked, err := w.round(ctx)
		if ctx.Err() != nil {
			break
		}
		if errors.Is(err, ErrUnauthorized) {
			return err
		}
		wait := w.cfg.Idle
		switch {
		case err != nil:
			fails++
			wait = min(w.cfg.Idle<<min(fails, 16), maxIdleBackoff)
			w.log.Warn("edge: round failed; backing off", "err", err, "wait", wait)
		case worked:
			fails = 0
			continue
		default:
			fails = 0
		}
		if clock.Sleep(ctx, w.cfg.Clock, wait) != nil {
			break
		}
	}
	return nil
}

// round asks for up to Ranges plain ranges in one call, works them at
// once (each with the ranges handed over in its final batch's answer), and
// then asks for one grant of each lane, working what it gets. It reports
// whether there was any work.
func (w *Worker) round(ctx context.Context) (bool, error) {
	ls, err := w.c.LeaseMany(ctx, w.cfg.Ranges)
	if err != nil {
		return false, err
	}
	worked := len(ls) > 0
	errs := make([]error, len(ls))
	var wg sync.WaitGroup
	for i, l := range ls {
		if i == len(ls)-1 {
			errs[i] = w.chain(ctx, l) // the last in this goroutine
			break
		}
		wg.Go(func() { errs[i] = w.chain(ctx, l) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return true, err
	}
	for _, lane := range w.cfg.Lanes {
		if ctx.Err() != nil {
			return worked, nil
		}
		did, err := w.workLane(ctx, lane)
		worked = worked || did
		if err != nil {
			return worked, err
		}
	}
	return worked, nil
}

// chain works plain range l, then each range handed over in the answer of
// the last one's final batch, until none is.
func (w *Worker) chain(ctx context.Context, l lease.Lease) error {
	for {
		_, then, err := w.work(ctx, l, false, nil)
		if err != nil || then == nil {
			return err
		}
		if ctx.Err() != nil {
			w.giveBack(ctx, *then)
			return nil
		}
		l = *then // handed over in the final batch's answer: no lease call
	}
}

// outcome is how the work on one range ended.
type outcome int

const (
	finished  outcome = iota // finished: the range is done
	released                 // given back as pending
	lost                     // the lease was lost: nothing more was written
	corrupted                // a chunk was reported corrupt: no longer held
	gone                     // the range no longer exists
)

// leaseGone reports whether err says the lease is gone for good, so
// nothing more may be written: it was lost, the range or group is unknown,
// or the node itself is refused.
func leaseGone(err error) bool {
	return errors.Is(err, edgeindex.ErrLeaseLost) || errors.Is(err, edgeindex.ErrNotFound) || errors.Is(err, ErrUnauthorized)
}

// giveBack releases a lease handed over in a final batch's answer that the
// worker, stopping, will not work: within StopTimeout, like the release of
// a range in hand. A failure is logged; the lease then expires.
func (w *Worker) giveBack(ctx context.Context, l lease.Lease) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.StopTimeout)
	defer cancel()
	if err := w.c.Release(rctx, l.Range.ID, l.Token); err != nil {
		w.log.Warn("edge: giving back a lease handed over while stopping", "range", l.Range.ID, "err", err)
	}
}

// detachIfDone returns ctx, or when parent (Run's context) is done, a
// context detached from it that lasts StopTimeout, for the last calls of a
// shutdown.
func (w *Worker) detachIfDone(ctx, parent context.Context) (context.Context, context.CancelFunc) {
	if parent.Err() == nil {
		return ctx, func() {}
	}
	return context.WithTimeout(context.WithoutCancel(parent), w.cfg.StopTimeout)
}

// interval is the heartbeat interval for a grant of ttl: TTL/3.
func (w *Worker) interval(ttl lease.Seconds) time.Duration {
	d := w.cfg.TTL
	if d == 0 {
		d = time.Duration(ttl)
	}
	if d <= 0 {
		d = DefaultTTL
	}
	return max(d/3, time.Millisecond)
}

// keepAlive heartbeats every interval until stop is called or ctx is done.
// When a heartbeat finds the lease gone it cancels ctx (through lost) with
// that error as the cause. stop waits for the goroutine; it may be called
// more than once.
func (w *Worker) keepAlive(ctx context.Context, lost context.CancelCauseFunc, every time.Duration, log *slog.Logger, beat func(context.Context) error) (stop func()) {
	hctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for clock.Sleep(hctx, w.cfg.Clock, every) == nil {
			err := beat(hctx)
			switch {
			case err == nil:
			case hctx.Err() != nil:
				return
			case leaseGone(err):
				lost(err)
				return
			default:
				log.Warn("edge: heartbeat failed; trying again at the next one", "err", err)
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
