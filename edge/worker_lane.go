package edge

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
)

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
		if cause := context.Cause(lctx); leaseGone(cause) {
			err = cause
		}
	}
	if leaseGone(err) {
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
		if !leaseGone(rerr) {
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
