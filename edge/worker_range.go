package edge

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/lease"
)

// heldRange is the worker's state while it works one held range: the
// lease, where its batches stand, and what its final batch answered.
type heldRange struct {
	w       *Worker
	l       lease.Lease
	ordered bool        // the range came through a lane
	win     *laneWindow // the lane's window, when its handler keeps one
	log     *slog.Logger
	start   time.Time // when the range was leased, for the logs
	// next is the first article of the range with no batch known to be
	// stored, or, while a batch is in flight, sent to be stored: settle
	// corrects it from the batch's answer.
	next     int64
	fin      final
	inflight *inflight // the batch posted and not yet answered, or nil
}

// final is what a range's final batch answered.
type final struct {
	done bool         // the range is done
	then *lease.Lease // the next lease, handed over in the answer
}

// newHeldRange returns the state of range lease l, about to be worked.
func (w *Worker) newHeldRange(l lease.Lease, ordered bool, win *laneWindow) *heldRange {
	r := l.Range
	return &heldRange{
		w: w, l: l, ordered: ordered, win: win,
		log:   w.log.With("range", r.ID, "group", r.Group, "lane", r.Lane, "token", l.Token),
		start: w.cfg.Clock.Now(),
		next:  r.Next,
	}
}

// work works one held range: it streams from next, posts a batch per chunk,
// and then finishes it, or gives it back. For a range of a lane whose
// handler keeps a window (win not nil), the stream starts where the window
// ends when that is below next, to rebuild it; the window is saved before
// the finish, and before a release when it is in step with next. The error
// it returns is for Run to back off on; what happened to the range is
// logged and counted.
func (w *Worker) work(ctx context.Context, l lease.Lease, ordered bool, win *laneWindow) (outcome, *lease.Lease, error) {
	h := w.newHeldRange(l, ordered, win)
	r := l.Range
	h.log.Info("edge: range leased", "start", r.Start, "end", r.End, "next", r.Next)

	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := w.keepAlive(rctx, cancel, w.interval(l.TTL), h.log, func(hctx context.Context) error {
		if ordered || w.cfg.Ranges == 1 {
			_, err := w.c.Heartbeat(hctx, r.ID, l.Token)
			return err
		}
		// With the other ranges held: their heartbeats, due about now
		// (the ranges were leased in one call), go in one call.
		_, err := w.beats.do(hctx, api.RangeToken{Range: r.ID, Token: l.Token})
		return err
	})
	defer stop()

	err := h.stream(rctx)
	if rctx.Err() != nil {
		// A heartbeat of the range (or of its lane) found the lease gone.
		if cause := context.Cause(rctx); leaseGone(cause) {
			err = cause
		}
	}
	switch {
	case err == nil && h.fin.done: // the final batch finished the range
		stop()
		h.done()
		return finished, h.fin.then, nil
	case err == nil: // every batch is stored: only the finish is left
		stop()
		fctx, done := w.detachIfDone(rctx, ctx)
		defer done()
		return noThen(h.finish(fctx))
	case leaseGone(err):
		return noThen(h.fenced(err))
	case ctx.Err() != nil:
		h.log.Info("edge: stopping; giving the range back", "next", h.next)
		return noThen(h.release(ctx, nil))
	}
	return noThen(h.failed(ctx, rctx, err))
}

// noThen is an outcome with no lease handed over.
func noThen(o outcome, err error) (outcome, *lease.Lease, error) { return o, nil, err }

// done counts and logs the range as finished.
func (h *heldRange) done() {
	h.w.n.ranges.Add(1)
	h.log.Info("edge: range done", "took", h.w.cfg.Clock.Now().Sub(h.start))
}

// failed ends a range whose work failed with err, the lease still held:
// it reports a corrupt chunk (under rctx, the range's context), or else
// gives the range back.
func (h *heldRange) failed(ctx, rctx context.Context, err error) (outcome, error) {
	if bad, ok := errors.AsType[*badChunk](err); ok {
		state, attempts, cerr := h.w.c.Corrupt(rctx, h.l.Range.ID, h.l.Token, bad.from)
		if cerr == nil {
			h.w.n.corrupt.Add(1)
			h.log.Warn("edge: chunk reported corrupt", "from", bad.from, "err", err, "state", state, "attempts", attempts)
			return corrupted, nil
		}
		if leaseGone(cerr) {
			return h.fenced(cerr)
		}
		h.log.Warn("edge: reporting a corrupt chunk failed", "from", bad.from, "err", cerr)
		err = errors.Join(err, cerr)
	}
	h.log.Warn("edge: giving the range back", "next", h.next, "err", err)
	return h.release(ctx, err)
}

// finish saves the lane's window (win, when not nil) at the range's end + 1
// and finishes the range.
func (h *heldRange) finish(ctx context.Context) (outcome, error) {
	if h.win != nil {
		if err := h.w.saveWindow(ctx, h.win, h.l.Range.End+1); err != nil {
			if leaseGone(err) {
				return h.fenced(err)
			}
			// The range's items are stored either way; the next holder of
			// the lane starts from an older window.
			h.log.Warn("edge: saving the window failed; finishing anyway", "err", err)
		}
	}
	err := h.w.c.Finish(ctx, h.l.Range.ID, h.l.Token)
	switch {
	case err == nil:
		h.done()
		return finished, nil
	case leaseGone(err):
		return h.fenced(err)
	}
	h.log.Warn("edge: finishing failed; giving the range back", "err", err)
	rctx, done := h.w.detachIfDone(ctx, ctx)
	defer done()
	return h.releaseLease(rctx, err)
}

// fenced stops a range whose lease is gone, writing nothing more.
func (h *heldRange) fenced(err error) (outcome, error) {
	if errors.Is(err, ErrUnauthorized) {
		h.log.Error("edge: the node token was refused", "err", err)
		return lost, err
	}
	if errors.Is(err, edgeindex.ErrNotFound) {
		h.log.Warn("edge: the range is gone", "err", err)
		return gone, nil
	}
	h.w.n.lost.Add(1)
	h.log.Warn("edge: lease lost; stopping the range", "err", err)
	return lost, nil
}

// release gives the range back. why is the error that made it necessary,
// returned so Run backs off; nil on shutdown. When the range is a lane's
// (win not nil) and the window is in step with next, the window is saved at
// next first, so the lane's next holder goes on from there without
// rebuilding it.
func (h *heldRange) release(ctx context.Context, why error) (outcome, error) {
	rctx, done := h.w.detachIfDone(ctx, ctx)
	defer done()
	if win := h.win; win != nil && !win.dirty && win.next == h.next && h.next > win.saved {
		if err := h.w.saveWindow(rctx, win, h.next); err != nil {
			if leaseGone(err) {
				_, ferr := h.fenced(err)
				return lost, errors.Join(why, ferr)
			}
			h.log.Warn("edge: saving the window before giving the range back failed", "next", h.next, "err", err)
		}
	}
	return h.releaseLease(rctx, why)
}

// releaseLease gives the range back as pending, saving nothing; why is as
// for release.
func (h *heldRange) releaseLease(ctx context.Context, why error) (outcome, error) {
	if err := h.w.c.Release(ctx, h.l.Range.ID, h.l.Token); err != nil {
		if leaseGone(err) {
			_, ferr := h.fenced(err)
			return lost, errors.Join(why, ferr)
		}
		h.log.Warn("edge: releasing the range failed; it will expire", "err", err)
		return released, errors.Join(why, err)
	}
	h.w.n.released.Add(1)
	return released, why
}
