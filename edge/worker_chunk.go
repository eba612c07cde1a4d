package edge

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/edgeframe"
	"github.com/edgeindex/edgeindex/overview"
)

// replay hands the part of chunk f below next that the window has not seen
// to the handler, to rebuild the window, and drops its output: an earlier
// holder stored those batches already. It reports whether it handed any.
func (h *heldRange) replay(ctx context.Context, f edgeframe.Frame) (bool, error) {
	win, next := h.win, h.next
	if f.From > win.next {
		missed(win, min(f.From, next), h.log)
	}
	if win.next >= next || f.To < win.next {
		return false, nil
	}
	r := h.l.Range
	r.Next = next
	to := min(f.To, next-1)
	win.dirty = true
	if _, err := h.w.handle(ctx, Chunk{Range: r, From: win.next, To: to, Ordered: true, Replay: true, Data: f.Data}, f.From); err != nil {
		return false, err
	}
	win.next, win.dirty = to+1, false
	h.w.n.replayed.Add(1)
	return true, nil
}

// handle calls the handler on c, a chunk that starts at chunkFrom.
func (w *Worker) handle(ctx context.Context, c Chunk, chunkFrom int64) (Output, error) {
	w.handling.Lock() // ranges held at once take turns
	out, err := w.cfg.Handler.HandleChunk(ctx, c)
	w.handling.Unlock()
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
//
// Any other batch (not final, no window) is posted in the background
// (inflight), so that the handler works the next chunk while the
// coordinator stores this one: the worker then waits for a commit only
// when the handler is quicker than it. One batch is in flight at a time,
// and it is answered (settle) before the next is posted, so the batches of
// a range are still stored in order. Like a final batch, it is completed
// when Run's context is cancelled meanwhile: a stopping worker gives its
// range back with the batch it had made stored.
func (h *heldRange) chunk(ctx context.Context, f edgeframe.Frame) error {
	from := max(f.From, h.next)
	if h.win != nil {
		h.win.dirty = true
	}
	out, err := h.handleFrom(ctx, f, from)
	if err != nil {
		return err
	}
	if err := h.settle(); err != nil {
		return err
	}
	if h.next > from { // the batch in flight was a duplicate, answered with a later next
		if f.To < h.next {
			return nil
		}
		from = h.next
		if out, err = h.handleFrom(ctx, f, from); err != nil {
			return err
		}
	}
	r := h.l.Range
	b := batch.Batch{From: from, To: f.To, Headers: out.Headers, Items: out.Items, Missing: out.Missing}
	b.Final = f.To == r.End && h.win == nil
	if !b.Final && h.win == nil {
		fl := &inflight{b: b, done: make(chan struct{})}
		pctx, done := h.w.detachPost(ctx) // a batch made is stored, as a final is, when Run stops meanwhile
		go func() {
			defer close(fl.done)
			defer done()
			fl.res, fl.err = h.w.c.PostBatch(pctx, r.ID, h.l.Token, b)
		}()
		h.inflight, h.next = fl, f.To+1
		return nil
	}
	res, err := h.post(ctx, b)
	if err != nil {
		return err
	}
	h.fin.done, h.fin.then = b.Final && res.Done, res.Lease
	h.stored(b, res)
	return nil
}

// handleFrom hands the handler chunk f from article from on.
func (h *heldRange) handleFrom(ctx context.Context, f edgeframe.Frame, from int64) (Output, error) {
	r := h.l.Range
	r.Next = h.next
	return h.w.handle(ctx, Chunk{Range: r, From: from, To: f.To, Ordered: h.ordered, Data: f.Data}, f.From)
}

// inflight is a batch posted in the background, and its answer once done
// is closed.
type inflight struct {
	b    batch.Batch
	done chan struct{}
	res  api.BatchReply
	err  error
}

// settle waits for the batch in flight, if any, and takes in its answer:
// next moves as the answer says, or back to the batch's from when the
// post failed, whose error it returns.
func (h *heldRange) settle() error {
	fl := h.inflight
	if fl == nil {
		return nil
	}
	h.inflight = nil
	<-fl.done
	if fl.err != nil {
		h.next = fl.b.From
		return fl.err
	}
	h.stored(fl.b, fl.res)
	return nil
}

// stored takes in res, the answer to batch b of the range: next moves past
// b, or to the answer's next when b was a duplicate of a later one.
func (h *heldRange) stored(b batch.Batch, res api.BatchReply) {
	r := h.l.Range
	h.next = b.To + 1
	if h.win != nil {
		// Stored now, or before: the window has seen up to To either way.
		h.win.next, h.win.dirty = b.To+1, false
	}
	if res.Duplicate {
		h.w.n.duplicates.Add(1)
		if res.Next > h.next {
			h.next = min(res.Next, r.End+1)
		}
		return
	}
	h.w.n.batches.Add(1)
	h.w.n.items.Add(int64(len(b.Items)))
	h.w.n.headers.Add(b.Headers)
}

// post posts batch b of the range. A final batch is the range's finish:
// like the finish, it is completed when Run's context is cancelled
// meanwhile. A plain range's goes with the final batches of the other
// ranges held (finals), asking for the next plain range in its answer when
// there are no lanes to take turns with.
func (h *heldRange) post(ctx context.Context, b batch.Batch) (api.BatchReply, error) {
	if !b.Final {
		return h.w.c.PostBatch(ctx, h.l.Range.ID, h.l.Token, b)
	}
	pctx, done := h.w.detachPost(ctx)
	defer done()
	if h.ordered {
		return h.w.c.PostBatch(pctx, h.l.Range.ID, h.l.Token, b)
	}
	return h.w.finals.do(pctx, api.RangeBatch{Range: h.l.Range.ID, Token: h.l.Token, Batch: b})
}

// detachPost returns a context for posting a batch already made (a final
// batch, or one in flight) to its end: not cancelled with ctx, but
// StopTimeout after it, as the finish after a shutdown is.
func (w *Worker) detachPost(ctx context.Context) (context.Context, context.CancelFunc) {
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
