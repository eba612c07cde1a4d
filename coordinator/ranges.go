package coordinator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/edgeindex/edgeindex/edgeframe"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/spool"
)

func (s *Server) kick() {
	if s.cfg.Prefetcher != nil {
		s.cfg.Prefetcher.Kick()
	}
}

func (s *Server) handleLease(w http.ResponseWriter, r *http.Request, n string) error {
	l, err := s.cfg.Store.Grant(r.Context(), n, s.cfg.LeaseTTL)
	if errors.Is(err, lease.ErrNoWork) {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	if err != nil {
		return err
	}
	s.kick()
	s.cfg.Metrics.leased()
	s.writeJSON(w, http.StatusOK, l)
	return nil
}

// rangeCall reads a range call's id and the caller's fence.
func rangeCall(r *http.Request, n string) (int64, lease.Fence, error) {
	id, err := pathID(r)
	if err != nil {
		return 0, lease.Fence{}, err
	}
	f, err := fence(r, n)
	return id, f, err
}

// held reads a range call and checks the fence before anything is written.
func (s *Server) held(r *http.Request, n string) (lease.Lease, lease.Fence, error) {
	id, f, err := rangeCall(r, n)
	if err != nil {
		return lease.Lease{}, f, err
	}
	l, err := s.cfg.Store.Check(r.Context(), id, f)
	return l, f, err
}

func (s *Server) handleStream(w http.ResponseWriter, r *http.Request, n string) error {
	l, f, err := s.held(r, n)
	if err != nil {
		return err
	}
	stored := l.Range.Next
	if from, ok, err := queryInt(r, "from"); err != nil {
		return err
	} else if ok {
		if from < l.Range.Start || from > stored {
			return lease.Invalidf("from %d: want %d to the range's next %d", from, l.Range.Start, stored)
		}
		l.Range.Next = from // a replay: stored chunks first, from the one that holds from
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(s.streams, cancel) // Drain ends streams
	defer stop()

	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", edgeframe.ContentType)
	w.Header().Set("Cache-Control", "no-store")
	cw := &countingWriter{w: w}
	cfg := spool.StreamConfig{
		Spool:     s.cfg.Spool,
		Corpus:    s.cfg.Corpus,
		Keepalive: s.cfg.Keepalive,
		WaitLimit: s.cfg.WaitLimit,
		Check: func(ctx context.Context) error {
			_, err := s.cfg.Store.Check(ctx, l.Range.ID, f)
			return err
		},
		CheckEvery: s.cfg.LeaseTTL / 3,
		Stored:     stored,
		Flush:      rc.Flush,
		// A worker that stops reading ends its stream within one
		// WriteTimeout.
		SetWriteDeadline: rc.SetWriteDeadline,
		WriteTimeout:     s.cfg.WriteTimeout,
		SetLength:        func(n int64) { w.Header().Set("Content-Length", strconv.FormatInt(n, 10)) },
		Keepalives:       s.cfg.Metrics.keepalive,
	}
	if s.cfg.Prefetcher != nil {
		cfg.Notify = s.cfg.Prefetcher.Notify
	}
	err = spool.Stream(ctx, cw, l.Range, l.ChunkSize, cfg)
	s.cfg.Metrics.streamed(cw.n)
	if err != nil && !errors.Is(err, context.Canceled) {
		s.cfg.Logger.Info("stream ended", "range", l.Range.ID, "node", n, "err", err)
	}
	return nil // the stream's frames said what happened
}

type countingWriter struct {
	w http.ResponseWriter
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// ReadFrom keeps the response's own ReadFrom (sendfile) reachable.
func (c *countingWriter) ReadFrom(r io.Reader) (int64, error) {
	n, err := io.Copy(c.w, r)
	c.n += n
	return n, err
}

// handleBatch stores a batch. The fence is checked before the body is
// read, so a stale holder's body costs nothing; the body's bytes are then
// taken from the batch budget (MaxBatchBytes) while it is decoded and
// stored, and a batch the budget has no room for gets 503 busy.
func (s *Server) handleBatch(w http.ResponseWriter, r *http.Request, n string) error {
	id, f, err := rangeCall(r, n)
	if err != nil {
		return err
	}
	l, err := s.cfg.Store.Check(r.Context(), id, f)
	if err != nil {
		s.cfg.Metrics.batch("refused", 0)
		return err
	}
	size := r.ContentLength
	if size > s.cfg.MaxBody {
		s.cfg.Metrics.batch("refused", 0)
		return fmt.Errorf("%w: a batch of at most %d bytes", errTooLarge, s.cfg.MaxBody)
	}
	if size < 0 { // unknown length: the most it may be
		size = s.cfg.MaxBody
	}
	if !s.batches.take(size) {
		s.cfg.Metrics.batch("busy", 0)
		return fmt.Errorf("%w: batches being stored hold the coordinator's batch memory; try again", errBusy)
	}
	defer s.batches.give(size)
	b, err := edgeframe.DecodeBatch(r.Body, s.cfg.MaxBody)
	if err != nil {
		s.cfg.Metrics.batch("refused", 0)
		return err
	}
	if b.From < l.Range.Start {
		// Not a retry of a stored batch: none starts before the range.
		s.cfg.Metrics.batch("refused", 0)
		return lease.Invalidf("batch: from %d is before the range's start %d", b.From, l.Range.Start)
	}
	res, err := s.cfg.Store.Put(r.Context(), id, f, b)
	if err != nil {
		s.cfg.Metrics.batch("refused", 0)
		return err
	}
	if res.Duplicate {
		s.cfg.Metrics.batch("duplicate", 0)
	} else {
		s.cfg.Metrics.batch("stored", len(b.Items))
	}
	s.writeJSON(w, http.StatusOK, res)
	return nil
}

// budget bounds the bytes of batch bodies being decoded and stored at once.
type budget struct {
	mu        sync.Mutex
	used, max int64
}

// take takes n bytes if there is room for them.
func (b *budget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.max {
		return false
	}
	b.used += n
	return true
}

func (b *budget) give(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

func (s *Server) handleHeartbeat(w http.ResponseWriter, r *http.Request, n string) error {
	id, f, err := rangeCall(r, n)
	if err != nil {
		return err
	}
	exp, err := s.cfg.Store.Heartbeat(r.Context(), id, f, s.cfg.LeaseTTL)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, map[string]time.Time{"expiresAt": exp})
	return nil
}

func (s *Server) handleFinish(w http.ResponseWriter, r *http.Request, n string) error {
	id, f, err := rangeCall(r, n)
	if err != nil {
		return err
	}
	if err := s.cfg.Store.Finish(r.Context(), id, f); err != nil {
		return err
	}
	if err := s.cfg.Spool.Drop(id); err != nil {
		s.cfg.Logger.Warn("drop spool", "range", id, "err", err)
	}
	s.writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
	return nil
}

func (s *Server) handleCorrupt(w http.ResponseWriter, r *http.Request, n string) error {
	l, f, err := s.held(r, n)
	if err != nil {
		return err
	}
	var body struct {
		From *int64 `json:"from"`
	}
	if err := decodeJSON(r, 4096, &body); err != nil {
		return err
	}
	if body.From == nil {
		return lease.Invalidf("from: the first article of the corrupt chunk is required")
	}
	rg, err := s.cfg.Store.Corrupt(r.Context(), l.Range.ID, f, *body.From, "reported corrupt by "+n)
	if err != nil {
		return err
	}
	span, _ := lease.SpanAt(l.Range.Start, l.Range.End, l.ChunkSize, *body.From)
	if err := s.cfg.Spool.DropChunk(l.Range.ID, span); err != nil {
		return fmt.Errorf("drop corrupt chunk: %w", err)
	}
	if s.cfg.Corpus != nil && l.Range.Capture {
		if err := s.cfg.Corpus.Delete(l.Range.Group, span); err != nil {
			return fmt.Errorf("drop corrupt chunk: %w", err)
		}
	}
	s.kick()
	s.writeJSON(w, http.StatusOK, map[string]any{"state": rg.State, "attempts": rg.Attempts})
	return nil
}

func (s *Server) handleRelease(w http.ResponseWriter, r *http.Request, n string) error {
	id, f, err := rangeCall(r, n)
	if err != nil {
		return err
	}
	if err := s.cfg.Store.Release(r.Context(), id, f); err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
	return nil
}
