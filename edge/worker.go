package edge

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/edgeframe"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/overview"
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
	// noFinal is set once the coordinator refused a final batch's "final"
	// field (one older than final batches): batches are then posted without
	// it, and every range is finished with its own call.
	noFinal atomic.Bool
}

// NewWorker returns a Worker, or an error that is edgeindex.ErrInvalid.
func NewWorker(cfg WorkerConfig) (*Worker, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	w := &Worker{cfg: cfg, c: cfg.Client, log: cfg.Logger}
	w.windowed, _ = cfg.Handler.(Windowed)
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

// round asks for one plain range and then one grant of each lane, working
// what it gets. It reports whether there was any work.
func (w *Worker) round(ctx context.Context) (bool, error) {
	worked := false
	l, ok, err := w.c.Lease(ctx)
	if err != nil {
		return false, err
	}
	for ok {
		worked = true
		_, then, err := w.work(ctx, l, false, nil)
		if err != nil {
			return true, err
		}
		if then == nil {
			break
		}
		if ctx.Err() != nil {
			w.giveBack(ctx, *then)
			break
		}
		l = *then // handed over in the final batch's answer: no lease call
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

// outcome is how the work on one range ended.
type outcome int

const (
	finished  outcome = iota // finished: the range is done
	released                 // given back as pending
	lost                     // the lease was lost: nothing more was written
	corrupted                // a chunk was reported corrupt: no longer held
	gone                     // the range no longer exists
)

// verdict reports whether err says the lease is gone for good, so nothing
// more may be written: it was lost, the range or group is unknown, or the
// node itself is refused.
func verdict(err error) bool {
	return errors.Is(err, edgeindex.ErrLeaseLost) || errors.Is(err, edgeindex.ErrNotFound) || errors.Is(err, ErrUnauthorized)
}

// errStreamIdle is the cause of a stream cancelled for sending nothing.
var errStreamIdle = errors.New("stream idle")

// errCut marks a stream that stopped without its end frame (or failed in
// transit); it is reopened from next.
var errCut = errors.New("stream cut")

// badChunk is a handler's verdict that the chunk starting at from is corrupt.
type badChunk struct {
	from int64
	err  error
}

func (e *badChunk) Error() string { return e.err.Error() }
func (e *badChunk) Unwrap() error { return e.err }

// laneWindow is what the worker knows of a Windowed handler's window while
// it holds a lane grant.
type laneWindow struct {
	gl grouplease.GroupLease
	// next is the first article of the lane the window has not seen. 0
	// means an empty window that belongs nowhere: the lane had no snapshot,
	// or none that loaded.
	next int64
	// saved is the next of the snapshot stored under this grant or loaded
	// with it; 0 when none.
	saved int64
	// dirty is set while a chunk handed to the handler has no batch known
	// to be stored: the window may then be ahead of next.
	dirty bool
}

// work works one held range: it streams from next, posts a batch per chunk,
// and then finishes it, or gives it back. For a range of a lane whose
// handler keeps a window (win not nil), the stream starts where the window
// ends when that is below next, to rebuild it; the window is saved before
// the finish, and before a release when it is in step with next. The error
// it returns is for Run to back off on; what happened to the range is
// logged and counted.
func (w *Worker) work(ctx context.Context, l lease.Lease, ordered bool, win *laneWindow) (outcome, *lease.Lease, error) {
	r := l.Range
	log := w.log.With("range", r.ID, "group", r.Group, "lane", r.Lane, "token", l.Token)
	start := w.cfg.Clock.Now()
	log.Info("edge: range leased", "start", r.Start, "end", r.End, "next", r.Next)

	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := w.keepAlive(rctx, cancel, w.interval(l.TTL), log, func(hctx context.Context) error {
		_, err := w.c.Heartbeat(hctx, r.ID, l.Token)
		return err
	})
	defer stop()

	next, fin := r.Next, final{}
	err := w.stream(rctx, l, ordered, win, &next, &fin, log)
	if rctx.Err() != nil {
		// A heartbeat of the range (or of its lane) found the lease gone.
		if cause := context.Cause(rctx); verdict(cause) {
			err = cause
		}
	}
	switch {
	case err == nil && fin.done: // the final batch finished the range
		stop()
		w.n.ranges.Add(1)
		log.Info("edge: range done", "took", w.cfg.Clock.Now().Sub(start))
		return finished, fin.then, nil
	case err == nil: // every batch is stored: only the finish is left
		stop()
		fctx, done := w.detachIfDone(rctx, ctx)
		defer done()
		return noThen(w.finish(fctx, l, win, log, start))
	case verdict(err):
		return noThen(w.fenced(l, err, log))
	case ctx.Err() != nil:
		log.Info("edge: stopping; giving the range back", "next", next)
		return noThen(w.release(ctx, l, win, next, nil, log))
	}
	if bad, ok := errors.AsType[*badChunk](err); ok {
		state, attempts, cerr := w.c.Corrupt(rctx, r.ID, l.Token, bad.from)
		if cerr == nil {
			w.n.corrupt.Add(1)
			log.Warn("edge: chunk reported corrupt", "from", bad.from, "err", err, "state", state, "attempts", attempts)
			return corrupted, nil, nil
		}
		if verdict(cerr) {
			return noThen(w.fenced(l, cerr, log))
		}
		log.Warn("edge: reporting a corrupt chunk failed", "from", bad.from, "err", cerr)
		err = errors.Join(err, cerr)
	}
	log.Warn("edge: giving the range back", "next", next, "err", err)
	return noThen(w.release(ctx, l, win, next, err, log))
}

// noThen is an outcome with no lease handed over.
func noThen(o outcome, err error) (outcome, *lease.Lease, error) { return o, nil, err }

// final is what a range's final batch answered.
type final struct {
	done bool         // the range is done
	then *lease.Lease // the next lease, handed over in the answer
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

// finish saves the lane's window (win, when not nil) at the range's end + 1
// and finishes the range.
func (w *Worker) finish(ctx context.Context, l lease.Lease, win *laneWindow, log *slog.Logger, start time.Time) (outcome, error) {
	if win != nil {
		if err := w.saveWindow(ctx, win, l.Range.End+1); err != nil {
			if verdict(err) {
				return w.fenced(l, err, log)
			}
			// The range's items are stored either way; the next holder of
			// the lane starts from an older window.
			log.Warn("edge: saving the window failed; finishing anyway", "err", err)
		}
	}
	err := w.c.Finish(ctx, l.Range.ID, l.Token)
	switch {
	case err == nil:
		w.n.ranges.Add(1)
		log.Info("edge: range done", "took", w.cfg.Clock.Now().Sub(start))
		return finished, nil
	case verdict(err):
		return w.fenced(l, err, log)
	}
	log.Warn("edge: finishing failed; giving the range back", "err", err)
	return w.release(ctx, l, nil, 0, err, log)
}

// fenced stops a range whose lease is gone, writing nothing more.
func (w *Worker) fenced(l lease.Lease, err error, log *slog.Logger) (outcome, error) {
	if errors.Is(err, ErrUnauthorized) {
		log.Error("edge: the node token was refused", "err", err)
		return lost, err
	}
	if errors.Is(err, edgeindex.ErrNotFound) {
		log.Warn("edge: the range is gone", "err", err)
		return gone, nil
	}
	w.n.lost.Add(1)
	log.Warn("edge: lease lost; stopping the range", "err", err)
	return lost, nil
}

// release gives the range back. why is the error that made it necessary,
// returned so Run backs off; nil on shutdown. When the range is a lane's
// (win not nil) and the window is in step with next, the window is saved at
// next first, so the lane's next holder goes on from there without
// rebuilding it.
func (w *Worker) release(ctx context.Context, l lease.Lease, win *laneWindow, next int64, why error, log *slog.Logger) (outcome, error) {
	rctx, done := w.detachIfDone(ctx, ctx)
	defer done()
	if win != nil && !win.dirty && win.next == next && next > win.saved {
		if err := w.saveWindow(rctx, win, next); err != nil {
			if verdict(err) {
				_, ferr := w.fenced(l, err, log)
				return lost, errors.Join(why, ferr)
			}
			log.Warn("edge: saving the window before giving the range back failed", "next", next, "err", err)
		}
	}
	if err := w.c.Release(rctx, l.Range.ID, l.Token); err != nil {
		if verdict(err) {
			_, ferr := w.fenced(l, err, log)
			return lost, errors.Join(why, ferr)
		}
		log.Warn("edge: releasing the range failed; it will expire", "err", err)
		return released, errors.Join(why, err)
	}
	w.n.released.Add(1)
	return released, why
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
			case verdict(err):
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

// stream reads the range's chunks from next until every batch is stored,
// reopening the stream when it is cut. It returns nil once next > end and
// the window, when there is one, has seen every article below next.
func (w *Worker) stream(ctx context.Context, l lease.Lease, ordered bool, win *laneWindow, next *int64, fin *final, log *slog.Logger) error {
	if win != nil {
		placeWindow(win, l.Range, *next, log)
	}
	cuts := 0
	for streaming(l.Range, win, *next) {
		progressed, err := w.streamOnce(ctx, l, ordered, win, next, fin, log)
		if err == nil {
			continue
		}
		if !errors.Is(err, errCut) || ctx.Err() != nil {
			return err
		}
		if progressed {
			cuts = 0
		}
		cuts++
		if cuts >= w.c.cfg.Attempts {
			return fmt.Errorf("edge: range %d: the stream was cut %d times without progress: %w", l.Range.ID, cuts, err)
		}
		wait := w.c.backoff(cuts)
		log.Warn("edge: stream cut; reopening it from next", "next", *next, "err", err, "wait", wait)
		if err := clock.Sleep(ctx, w.cfg.Clock, wait); err != nil {
			return err
		}
	}
	return nil
}

// placeWindow decides where the window of a lane's range r, granted with
// next, is rebuilt from: win.next, when it lies in [r.Start, next). A window
// that ends before the range, or belongs nowhere, is rebuilt from the
// range's start; one ahead of next cannot be helped.
func placeWindow(win *laneWindow, r lease.Range, next int64, log *slog.Logger) {
	switch {
	case win.next > next:
		log.Warn("edge: the lane's window has seen articles past the range's next; it will see them again",
			"window", win.next, "next", next)
		win.next = next
	case win.next < r.Start:
		if win.next > 0 && next > r.Start {
			log.Info("edge: the lane's window ends before the range's start", "window", win.next, "start", r.Start)
		}
		win.next = r.Start
	}
	if win.next < next {
		log.Info("edge: handing the range's stored chunks to the handler again, to rebuild the window",
			"from", win.next, "next", next)
	}
}

// streaming reports whether the range has chunks left to work: batches to
// post, or stored chunks that the window has not seen.
func streaming(r lease.Range, win *laneWindow, next int64) bool {
	return next <= r.End || (win != nil && win.next < next)
}

// missed moves a window that is being rebuilt past articles the coordinator
// did not stream, up to upto, saying so: the window lacks them.
func missed(win *laneWindow, upto int64, log *slog.Logger) {
	log.Warn("edge: the coordinator did not stream stored chunks the window needs; it lacks their articles",
		"from", win.next, "to", upto-1)
	win.next = upto
}

// streamOnce opens the stream once and works its chunks until next > end
// (and the window has caught up) or the stream stops. It reports whether
// any batch was stored or any chunk handed again to the window.
func (w *Worker) streamOnce(ctx context.Context, l lease.Lease, ordered bool, win *laneWindow, next *int64, fin *final, log *slog.Logger) (progressed bool, err error) {
	r := l.Range
	sctx, scancel := context.WithCancelCause(ctx)
	defer scancel(nil)
	var from int64
	if win != nil && win.next < *next {
		from = win.next
	}
	st, err := w.c.StreamFrom(sctx, r.ID, l.Token, from) // retried inside the client
	if err != nil {
		return false, err
	}
	defer st.Close()
	idle := w.cfg.StreamIdle
	var watchdog *time.Timer
	if idle > 0 {
		watchdog = time.AfterFunc(idle, func() { scancel(errStreamIdle) })
		defer watchdog.Stop()
	}
	// at is the first article of the chunk frame the stream sends next: the
	// coordinator begins at the chunk that holds from (or next), and chunks
	// follow in order.
	at := *next
	if from > 0 {
		at = from
	}
	for streaming(r, win, *next) {
		if watchdog != nil {
			watchdog.Reset(idle)
		}
		f, err := st.Next()
		if watchdog != nil {
			watchdog.Stop()
		}
		if err != nil {
			if errors.Is(context.Cause(sctx), errStreamIdle) {
				err = fmt.Errorf("%w: nothing for %v: %w", errStreamIdle, idle, err)
			}
			if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, ErrNetwork) {
				err = fmt.Errorf("%w: %w", errCut, err)
			}
			err = fmt.Errorf("edge: stream of range %d: %w", r.ID, err)
			if bad := untakable(l, at, err); bad != nil {
				return progressed, bad
			}
			return progressed, err
		}
		switch f.Type {
		case edgeframe.TypeKeepalive:
			continue
		case edgeframe.TypeError:
			return progressed, fmt.Errorf("edge: stream of range %d: %w", r.ID, f.Err())
		case edgeframe.TypeEnd:
			if *next > r.End { // only the window was behind: it lacks the rest
				missed(win, *next, log)
				return progressed, nil
			}
			return progressed, fmt.Errorf("edge: stream of range %d: %w: it ended with batches stored up to %d of %d..%d",
				r.ID, ErrProtocol, *next-1, r.Start, r.End)
		}
		w.n.bytes.Add(int64(len(f.Data)))
		at = f.To + 1
		if ctx.Err() != nil { // stopping: hand the handler nothing more
			return progressed, context.Cause(ctx)
		}
		if win != nil && win.next < *next {
			did, err := w.replay(ctx, l, win, f, *next, log)
			if err != nil {
				return progressed, err
			}
			progressed = progressed || did
		}
		if f.To < *next {
			continue // stored by an earlier holder or attempt
		}
		if f.From > *next || f.To > r.End {
			return progressed, fmt.Errorf("edge: stream of range %d: %w: chunk %d-%d does not continue from next %d within end %d",
				r.ID, ErrProtocol, f.From, f.To, *next, r.End)
		}
		if err := w.chunk(ctx, l, ordered, win, f, next, fin); err != nil {
			return progressed, err
		}
		progressed = true
	}
	return progressed, nil
}

// untakable returns err as the verdict that the chunk holding article at is
// corrupt when err says the worker cannot take that chunk's frame at the
// frame layer: its length is over Config.MaxFrame
// (edgeframe.ErrFrameTooLarge), or its payload does not fit a frame
// (edgeframe.ErrMalformed). Reading the stream again would meet the same
// frame, so giving the range back would only have it granted again, with no
// attempt counted; reported corrupt, it counts one, and fails at the
// coordinator's maximum. It returns nil for any other error, or when the
// chunk is not known (at is past the range, or the grant named no chunk
// size). An unknown frame type is not taken for a bad chunk: it says the
// coordinator is newer than the worker, which no attempt of the range
// would mend, so the range is given back as before.
func untakable(l lease.Lease, at int64, err error) error {
	if !errors.Is(err, edgeframe.ErrFrameTooLarge) && !errors.Is(err, edgeframe.ErrMalformed) {
		return nil
	}
	span, ok := lease.SpanAt(l.Range.Start, l.Range.End, l.ChunkSize, at)
	if !ok {
		return nil
	}
	return &badChunk{from: span.From, err: err}
}

// replay hands the part of chunk f below next that the window has not seen
// to the handler, to rebuild the window, and drops its output: an earlier
// holder stored those batches already. It reports whether it handed any.
func (w *Worker) replay(ctx context.Context, l lease.Lease, win *laneWindow, f edgeframe.Frame, next int64, log *slog.Logger) (bool, error) {
	if f.From > win.next {
		missed(win, min(f.From, next), log)
	}
	if win.next >= next || f.To < win.next {
		return false, nil
	}
	r := l.Range
	r.Next = next
	to := min(f.To, next-1)
	win.dirty = true
	if _, err := w.handle(ctx, Chunk{Range: r, From: win.next, To: to, Ordered: true, Replay: true, Data: f.Data}, f.From); err != nil {
		return false, err
	}
	win.next, win.dirty = to+1, false
	w.n.replayed.Add(1)
	return true, nil
}

// handle calls the handler on c, a chunk that starts at chunkFrom.
func (w *Worker) handle(ctx context.Context, c Chunk, chunkFrom int64) (Output, error) {
	out, err := w.cfg.Handler.HandleChunk(ctx, c)
	if err != nil {
		err = fmt.Errorf("edge: handler, range %d chunk %d-%d: %w", c.Range.ID, chunkFrom, c.To, err)
		if errors.Is(err, overview.ErrBadChunk) {
			return Output{}, &badChunk{from: chunkFrom, err: err}
		}
		return Output{}, err
	}
	return out, nil
}

// chunk hands one chunk to the handler and posts its batch. The range's
// last chunk is posted as a final batch, which finishes the range too (done
// is set when the answer says so), unless the range is a lane's whose
// handler keeps a window: its window is saved once the last batch is stored
// and before the range is finished, so that a snapshot is never ahead of the
// range's stored next, and a final batch would leave no moment between the
// two (see finish).
func (w *Worker) chunk(ctx context.Context, l lease.Lease, ordered bool, win *laneWindow, f edgeframe.Frame, next *int64, fin *final) error {
	r := l.Range
	r.Next = *next
	from := max(f.From, *next)
	if win != nil {
		win.dirty = true
	}
	out, err := w.handle(ctx, Chunk{Range: r, From: from, To: f.To, Ordered: ordered, Data: f.Data}, f.From)
	if err != nil {
		return err
	}
	b := batch.Batch{From: from, To: f.To, Headers: out.Headers, Items: out.Items, Missing: out.Missing}
	b.Final = f.To == r.End && win == nil && !w.noFinal.Load()
	pctx := ctx
	if b.Final {
		// The final batch is the range's finish: like the finish, it is
		// completed when Run's context is cancelled meanwhile.
		var done context.CancelFunc
		pctx, done = w.detachFinal(ctx)
		defer done()
	}
	post := w.c.PostBatch
	if b.Final && !ordered && len(w.cfg.Lanes) == 0 {
		// With no lanes to take turns with, the next plain range may come
		// in the answer.
		post = w.c.PostBatchThenLease
	}
	res, err := post(pctx, r.ID, l.Token, b)
	if b.Final && refusesFinal(err) {
		w.noFinal.Store(true)
		w.log.Info("edge: the coordinator does not take final batches; finishing ranges with a call of their own")
		b.Final = false
		res, err = w.c.PostBatch(ctx, r.ID, l.Token, b)
	}
	if err != nil {
		return err
	}
	fin.done, fin.then = b.Final && res.Done, res.Lease
	*next = f.To + 1
	if win != nil {
		// Stored now, or before: the window has seen up to To either way.
		win.next, win.dirty = f.To+1, false
	}
	if res.Duplicate {
		w.n.duplicates.Add(1)
		if res.Next > *next {
			*next = min(res.Next, r.End+1)
		}
		return nil
	}
	w.n.batches.Add(1)
	w.n.items.Add(int64(len(out.Items)))
	w.n.headers.Add(out.Headers)
	return nil
}

// detachFinal returns a context for posting a final batch: not cancelled
// with ctx, but StopTimeout after it, as the finish after a shutdown is.
func (w *Worker) detachFinal(ctx context.Context) (context.Context, context.CancelFunc) {
	dctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		t := time.NewTimer(w.cfg.StopTimeout)
		defer t.Stop()
		select {
		case <-dctx.Done():
		case <-t.C:
			cancel()
		}
	})
	return dctx, func() { stop(); cancel() }
}

// refusesFinal reports whether err is a coordinator's 400 for the "final"
// field of a batch: one that predates final batches.
func refusesFinal(err error) bool {
	return errors.Is(err, edgeindex.ErrInvalid) && strings.Contains(err.Error(), `unknown field "final"`)
}

// workLane leases one grant of lane and works its ranges in order until none
// is ready, then releases it. It reports whether a lane was granted.
func (w *Worker) workLane(ctx context.Context, lane lease.Lane) (bool, error) {
	gl, ok, err := w.c.LeaseLane(ctx, lane)
	if err != nil || !ok {
		return false, err
	}
	gl.Lane = lane
	log := w.log.With("group", gl.Group.Name, "groupId", gl.Group.ID, "lane", lane, "laneToken", gl.Token)
	log.Info("edge: lane leased", "next", gl.Next)

	lctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := w.keepAlive(lctx, cancel, w.interval(gl.TTL), log, func(hctx context.Context) error {
		_, err := w.c.HeartbeatLane(hctx, gl.Group.ID, lane, gl.Token)
		return err
	})
	defer stop()

	err = w.lane(lctx, gl, log)
	if lctx.Err() != nil {
		if cause := context.Cause(lctx); verdict(cause) {
			err = cause
		}
	}
	if verdict(err) {
		if errors.Is(err, ErrUnauthorized) {
			return true, err
		}
		log.Warn("edge: lane lost; stopping it", "err", err)
		return true, nil
	}
	stop()
	rctx, done := w.detachIfDone(ctx, ctx)
	defer done()
	if rerr := w.c.ReleaseLane(rctx, gl.Group.ID, lane, gl.Token); rerr != nil {
		log.Warn("edge: releasing the lane failed; it will expire", "err", rerr)
		if !verdict(rerr) {
			err = errors.Join(err, rerr)
		}
	}
	if ctx.Err() != nil {
		return true, nil
	}
	return true, err
}

// lane loads the lane's window and works its ranges in article order until
// none is ready or one does not finish.
func (w *Worker) lane(ctx context.Context, gl grouplease.GroupLease, log *slog.Logger) error {
	win, err := w.loadWindow(ctx, gl, log)
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		l, ok, err := w.c.Next(ctx, gl.Group.ID, gl.Lane, gl.Token)
		if err != nil || !ok {
			return err
		}
		out, _, err := w.work(ctx, l, true, win)
		if err != nil || out != finished {
			return err
		}
	}
	return nil
}

// loadWindow gives a Windowed handler the lane's snapshot, or an empty
// window when there is none, and returns where the window stands; nil when
// the handler keeps no window. A snapshot that cannot be read or loaded is
// logged and replaced by an empty window, so it never blocks the lane.
func (w *Worker) loadWindow(ctx context.Context, gl grouplease.GroupLease, log *slog.Logger) (*laneWindow, error) {
	if w.windowed == nil {
		return nil, nil
	}
	if gl.Snapshot != nil {
		gz, next, found, err := w.c.GetSnapshot(ctx, gl.Group.ID, gl.Lane, gl.Token)
		switch {
		case err != nil:
			return nil, err
		case !found:
			log.Warn("edge: the lane's snapshot is gone; starting with an empty window")
		default:
			state, err := gunzip(gz)
			if err == nil {
				err = w.windowed.LoadWindow(state)
			}
			if err == nil {
				log.Info("edge: window loaded", "snapshotNext", next, "next", gl.Next, "bytes", len(state))
				return &laneWindow{gl: gl, next: next, saved: next}, nil
			}
			log.Error("edge: the lane's snapshot does not load; starting with an empty window", "err", err)
		}
	}
	if err := w.windowed.LoadWindow(nil); err != nil {
		return nil, fmt.Errorf("edge: loading an empty window: %w", err)
	}
	return &laneWindow{gl: gl}, nil
}

// saveWindow stores the handler's window as the lane's snapshot at next.
func (w *Worker) saveWindow(ctx context.Context, win *laneWindow, next int64) error {
	state, err := w.windowed.SaveWindow()
	if err != nil {
		return fmt.Errorf("edge: saving the window: %w", err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(state); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	gl := win.gl
	if _, err := w.c.PutSnapshot(ctx, gl.Group.ID, gl.Lane, gl.Token, next, buf.Bytes()); err != nil {
		return err
	}
	win.saved = max(win.saved, next)
	return nil
}

func gunzip(gz []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, fmt.Errorf("edge: the snapshot is not gzip: %w", err)
	}
	state, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("edge: the snapshot does not inflate: %w", err)
	}
	return state, nil
}
