package edge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/edgeframe"
	"github.com/edgeindex/edgeindex/lease"
)

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

// stream reads the range's chunks from next until every batch is stored,
// reopening the stream when it is cut. It returns nil once next > end and
// the window, when there is one, has seen every article below next.
func (h *heldRange) stream(ctx context.Context) error {
	if h.win != nil {
		placeWindow(h.win, h.l.Range, h.next, h.log)
	}
	cuts := 0
	for h.streaming() {
		progressed, err := h.streamOnce(ctx)
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
		if cuts >= h.w.c.cfg.Attempts {
			return fmt.Errorf("edge: range %d: the stream was cut %d times without progress: %w", h.l.Range.ID, cuts, err)
		}
		wait := h.w.c.backoff(cuts)
		h.log.Warn("edge: stream cut; reopening it from next", "next", h.next, "err", err, "wait", wait)
		if err := clock.Sleep(ctx, h.w.cfg.Clock, wait); err != nil {
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
func (h *heldRange) streaming() bool {
	return h.next <= h.l.Range.End || h.rebuilding()
}

// rebuilding reports whether the window has not seen every article below
// next: stored chunks are then handed to it again.
func (h *heldRange) rebuilding() bool {
	return h.win != nil && h.win.next < h.next
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
func (h *heldRange) streamOnce(ctx context.Context) (progressed bool, err error) {
	defer func() { // the batch in flight is answered before the stream is left or reopened
		if serr := h.settle(); serr != nil && (err == nil || errors.Is(err, errCut)) {
			err = serr
		}
	}()
	r := h.l.Range
	sctx, scancel := context.WithCancelCause(ctx)
	defer scancel(nil)
	var from int64
	if h.rebuilding() {
		from = h.win.next
	}
	st, err := h.w.c.StreamFrom(sctx, r.ID, h.l.Token, from) // retried inside the client
	if err != nil {
		return false, err
	}
	ist := newIdleStream(st, h.w.cfg.StreamIdle, scancel)
	defer ist.Close()
	// at is the first article of the chunk frame the stream sends next: the
	// coordinator begins at the chunk that holds from (or next), and chunks
	// follow in order.
	at := h.next
	if from > 0 {
		at = from
	}
	for h.streaming() {
		f, err := ist.Next()
		if err != nil {
			return progressed, h.readErr(sctx, at, err)
		}
		switch f.Type {
		case edgeframe.TypeKeepalive:
			continue
		case edgeframe.TypeError:
			return progressed, fmt.Errorf("edge: stream of range %d: %w", r.ID, f.Err())
		case edgeframe.TypeEnd:
			return progressed, h.ended()
		}
		h.w.n.bytes.Add(int64(len(f.Data)))
		at = f.To + 1
		did, err := h.take(ctx, f)
		progressed = progressed || did
		if err != nil {
			return progressed, err
		}
	}
	return progressed, nil
}

// idleStream is a Stream each of whose reads may wait at most idle (when
// it is positive): one that waits longer cancels the stream's context with
// errStreamIdle.
type idleStream struct {
	st    *Stream
	idle  time.Duration
	timer *time.Timer // nil without a limit
}

func newIdleStream(st *Stream, idle time.Duration, cancel context.CancelCauseFunc) *idleStream {
	s := &idleStream{st: st, idle: idle}
	if idle > 0 {
		s.timer = time.AfterFunc(idle, func() { cancel(errStreamIdle) })
	}
	return s
}

// Next reads the next frame within idle.
func (s *idleStream) Next() (edgeframe.Frame, error) {
	if s.timer != nil {
		s.timer.Reset(s.idle)
	}
	f, err := s.st.Next()
	if s.timer != nil {
		s.timer.Stop()
	}
	return f, err
}

// Close stops the timer and closes the stream.
func (s *idleStream) Close() error {
	if s.timer != nil {
		s.timer.Stop()
	}
	return s.st.Close()
}

// readErr is the error of a stream whose read failed with err, the stream
// at article at under sctx: errCut when it was cut, so it is reopened, or
// the verdict that the chunk at at is corrupt when its frame is untakable.
func (h *heldRange) readErr(sctx context.Context, at int64, err error) error {
	if errors.Is(context.Cause(sctx), errStreamIdle) {
		err = fmt.Errorf("%w: nothing for %v: %w", errStreamIdle, h.w.cfg.StreamIdle, err)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, ErrNetwork) {
		err = fmt.Errorf("%w: %w", errCut, err)
	}
	err = fmt.Errorf("edge: stream of range %d: %w", h.l.Range.ID, err)
	if bad := untakable(h.l, at, err); bad != nil {
		return bad
	}
	return err
}

// ended is what the stream's end frame means while the range still has
// chunks to work: nil when only the window was behind (it lacks the rest),
// an ErrProtocol when batches are missing.
func (h *heldRange) ended() error {
	r := h.l.Range
	if h.next > r.End {
		missed(h.win, h.next, h.log)
		return nil
	}
	return fmt.Errorf("edge: stream of range %d: %w: it ended with batches stored up to %d of %d..%d",
		r.ID, ErrProtocol, h.next-1, r.Start, r.End)
}

// take works chunk frame f: it hands the part the window has not seen to
// it again, and posts the batch of the part from next. It reports whether
// it did either.
func (h *heldRange) take(ctx context.Context, f edgeframe.Frame) (bool, error) {
	if ctx.Err() != nil { // stopping: hand the handler nothing more
		return false, context.Cause(ctx)
	}
	progressed := false
	if h.rebuilding() {
		did, err := h.replay(ctx, f)
		if err != nil {
			return false, err
		}
		progressed = did
	}
	if f.To < h.next {
		return progressed, nil // stored by an earlier holder or attempt
	}
	r := h.l.Range
	if f.From > h.next || f.To > r.End {
		return progressed, fmt.Errorf("edge: stream of range %d: %w: chunk %d-%d does not continue from next %d within end %d",
			r.ID, ErrProtocol, f.From, f.To, h.next, r.End)
	}
	if err := h.chunk(ctx, f); err != nil {
		return progressed, err
	}
	return true, nil
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
