package coordinator

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/corpus"
	"github.com/edgeindex/edgeindex/edgeframe"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/spool"
)

// ErrWaitLimit means a chunk did not arrive within the stream's wait limit.
var ErrWaitLimit = errors.New("chunk did not arrive within the wait limit")

// FrameWriter is where a range stream writes its frames. The HTTP layer's
// (see Server) flushes with http.ResponseController, bounds every write by
// a deadline and sets Content-Length; NewFrameWriter makes one of any
// io.Writer, for a program or a test.
type FrameWriter interface {
	io.Writer
	// Flush pushes the frames written so far to the worker.
	Flush() error
	// SetLength is told the stream's exact length before its first byte
	// when every chunk is stored already: the chunks then go straight to
	// the writer, unbuffered, so the kernel may send the files.
	SetLength(n int64)
	// Hurry is called once the stream's context ends (Drain): the write in
	// progress, and every later one, should end soon, so the error frame
	// still reaches a worker that reads and a write blocked on one that
	// does not ends. It may be called from another goroutine.
	Hurry()
}

// NewFrameWriter returns w as a FrameWriter whose Flush, SetLength and
// Hurry do nothing.
func NewFrameWriter(w io.Writer) FrameWriter { return plainFrames{w} }

type plainFrames struct{ io.Writer }

func (plainFrames) Flush() error    { return nil }
func (plainFrames) SetLength(int64) {}
func (plainFrames) Hurry()          {}

// StreamConfig configures Stream. Spool is required; the zero value of
// every other field means its default.
type StreamConfig struct {
	Spool  spool.Store
	Corpus corpus.Store // read first, for capture ranges; nil: spool only
	// Notify returns a channel closed when the next chunk is stored.
	// Default: Spool.Notify. A coordinator whose prefetcher also fills the
	// corpus passes prefetch.Prefetcher.Notify.
	Notify func() <-chan struct{}
	// Check checks that the worker still holds the lease; the stream calls
	// it at least every CheckEvery, and ends with an error frame when it
	// fails. It does not renew the lease: the worker's heartbeats do. A
	// stopped worker's kernel goes on taking keepalives for hours, so a
	// stream that renewed would keep its lease from ever expiring.
	Check      func(ctx context.Context) error
	CheckEvery time.Duration // default 20s
	// Stored, when above the range's Next, is the range's real resume
	// point: the stream starts earlier to replay stored chunks (a lane's
	// new holder rebuilding its window). Chunks that end before Stored are
	// sent when stored and skipped when not, without waiting: nobody
	// fetches them again.
	Stored int64
	// Keepalive is the longest the stream stays silent. Default 20s.
	Keepalive time.Duration
	// WaitLimit is how long the stream waits for one chunk. Default 1h.
	WaitLimit time.Duration
	// Keepalives, when set, is called for every keepalive sent (metrics).
	Keepalives func()
	// Clock times keepalives, lease checks and the wait limit; tests inject
	// one. Default clock.Real.
	Clock clock.Clock
}

// withDefaults returns c with every zero field that has a default set to
// it. Notify's default is Spool's, so it is set only when Spool is.
func (c StreamConfig) withDefaults() StreamConfig {
	if c.Notify == nil && c.Spool != nil {
		c.Notify = c.Spool.Notify
	}
	if c.Check == nil {
		c.Check = func(context.Context) error { return nil }
	}
	if c.Keepalives == nil {
		c.Keepalives = func() {}
	}
	c.CheckEvery = cmp.Or(c.CheckEvery, 20*time.Second)
	c.Keepalive = cmp.Or(c.Keepalive, 20*time.Second)
	c.WaitLimit = cmp.Or(c.WaitLimit, time.Hour)
	if c.Clock == nil {
		c.Clock = clock.Real
	}
	return c
}

// validate checks a StreamConfig that has its defaults.
func (c StreamConfig) validate() error {
	if c.Spool == nil {
		return edgeindex.Invalidf("stream: a Spool is required")
	}
	return nil
}

// Stream writes the frames of range r to w: its chunks of chunkSize from the
// one that holds r.Next to r.End, each read from the corpus first, then the
// spool, waiting for chunks still being fetched. Chunks go out as stored:
// already compressed.
//
// When every chunk is stored already, Stream opens them all, tells
// w.SetLength the stream's exact size (so the HTTP layer can set
// Content-Length, and the kernel can send the files), and writes them
// straight to w. Otherwise it buffers frames and flushes them before every
// wait and at the end. While it waits it sends a keepalive at least every
// Keepalive; it checks the lease as it goes. It ends with an end frame when
// every chunk is sent, or with an error frame (and an error) when a chunk
// misses the wait limit, the lease is lost, or ctx ends (then w.Hurry is
// called first).
func Stream(ctx context.Context, w FrameWriter, r lease.Range, chunkSize int64, cfg StreamConfig) error {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return err
	}
	var spans []lease.Span
	if first, ok := lease.SpanAt(r.Start, r.End, chunkSize, r.Next); ok {
		spans = lease.Spans(first.From, r.End, chunkSize)
	}
	defer context.AfterFunc(ctx, w.Hurry)()
	now := cfg.Clock.Now()
	s := &streamer{cfg: cfg, out: w, lastCheck: now, lastSent: now}
	files, size, ok := s.openAll(r, spans)
	if ok {
		w.SetLength(size)
		s.w = edgeframe.NewWriter(w)
		return s.sendAll(ctx, spans, files)
	}
	closeAll(files)
	return s.sendBuffered(ctx, r, spans)
}

// sendBuffered writes the chunks through a buffer, waiting for those not
// stored yet, and flushes before every wait and at the end.
func (s *streamer) sendBuffered(ctx context.Context, r lease.Range, spans []lease.Span) error {
	bw := bufio.NewWriterSize(s.out, 256<<10)
	s.w = edgeframe.NewWriter(bw)
	s.flush = func() error {
		if err := bw.Flush(); err != nil {
			return err
		}
		return s.out.Flush()
	}
	for _, span := range spans {
		if err := s.chunk(ctx, r, span); err != nil {
			return s.abort(err)
		}
	}
	if err := s.w.End(); err != nil {
		return err
	}
	return s.flush()
}

type openChunk struct {
	rc io.ReadCloser
	n  int64
}

// openAll opens every chunk, and sums the stream's size: a header and
// span per chunk, and the end frame. ok is false when one is missing.
func (s *streamer) openAll(r lease.Range, spans []lease.Span) ([]openChunk, int64, bool) {
	files := make([]openChunk, 0, len(spans))
	size := int64(edgeframe.HeaderLen)
	for _, span := range spans {
		rc, n, err := s.open(r, span)
		if err != nil || rc == nil {
			return files, 0, false
		}
		files = append(files, openChunk{rc, n})
		size += edgeframe.HeaderLen + edgeframe.ChunkPrefixLen + n
	}
	return files, size, true
}

func closeAll(files []openChunk) {
	for _, f := range files {
		f.rc.Close()
	}
}

// sendAll writes chunks it opened already; an open file survives a Drop.
// The length is promised, so a failure cuts the stream: no error frame.
func (s *streamer) sendAll(ctx context.Context, spans []lease.Span, files []openChunk) error {
	defer closeAll(files)
	for i, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.w.ChunkFrom(spans[i].From, spans[i].To, f.rc, f.n); err != nil {
			return err
		}
		// Nothing is buffered here; Flush lets the caller bound each write.
		if err := s.out.Flush(); err != nil {
			return err
		}
		if err := s.check(ctx); err != nil {
			return err
		}
	}
	if err := s.w.End(); err != nil {
		return err
	}
	return s.out.Flush()
}

type streamer struct {
	cfg       StreamConfig
	out       FrameWriter
	w         *edgeframe.Writer
	flush     func() error
	lastCheck time.Time
	lastSent  time.Time // the last frame written: keepalives count from it
}

// sent flushes a frame just written.
func (s *streamer) sent(err error) error {
	if err != nil {
		return err
	}
	s.lastSent = s.cfg.Clock.Now()
	return s.flush()
}

// abort ends the stream with an error frame saying why.
func (s *streamer) abort(err error) error {
	msg := err.Error()
	if errors.Is(err, context.Canceled) {
		msg = "the coordinator is shutting down"
	}
	if werr := s.w.Error(msg); werr == nil {
		s.flush()
	}
	return err
}

// check checks the lease when CheckEvery has passed since the last check.
func (s *streamer) check(ctx context.Context) error {
	now := s.cfg.Clock.Now()
	if now.Sub(s.lastCheck) < s.cfg.CheckEvery {
		return nil
	}
	if err := s.cfg.Check(ctx); err != nil {
		return fmt.Errorf("check lease: %w", err)
	}
	s.lastCheck = now
	return nil
}

// open opens the chunk in the corpus or the spool; nil when neither has it.
func (s *streamer) open(r lease.Range, span lease.Span) (io.ReadCloser, int64, error) {
	if s.cfg.Corpus != nil {
		rc, n, err := s.cfg.Corpus.Open(r.Group, span)
		if !errors.Is(err, corpus.ErrNotFound) {
			return rc, n, err
		}
	}
	rc, n, err := s.cfg.Spool.Open(r.ID, span)
	if errors.Is(err, spool.ErrNotFound) {
		return nil, 0, nil
	}
	return rc, n, err
}

// chunk sends one chunk, waiting for it if it is not stored yet.
func (s *streamer) chunk(ctx context.Context, r lease.Range, span lease.Span) error {
	deadline := s.cfg.Clock.Now().Add(s.cfg.WaitLimit)
	for {
		arrived := s.cfg.Notify() // taken before the check, so no arrival is missed
		rc, n, err := s.open(r, span)
		if err != nil {
			return err
		}
		if rc != nil {
			err := s.w.ChunkFrom(span.From, span.To, rc, n)
			rc.Close()
			if err != nil {
				return err
			}
			s.lastSent = s.cfg.Clock.Now()
			return s.check(ctx)
		}
		if span.To < s.cfg.Stored {
			return nil // a replayed chunk nobody has any more: skipped
		}
		// Push what was written before waiting.
		if err := s.flush(); err != nil {
			return err
		}
		now := s.cfg.Clock.Now()
		if !now.Before(deadline) {
			return fmt.Errorf("%w: chunk %d-%d of range %d not fetched within %s", ErrWaitLimit, span.From, span.To, r.ID, s.cfg.WaitLimit)
		}
		if now.Sub(s.lastSent) >= s.cfg.Keepalive {
			if err := s.sent(s.w.Keepalive()); err != nil {
				return err
			}
			s.cfg.Keepalives()
			if err := s.check(ctx); err != nil {
				return err
			}
		}
		// Wake for the chunk, the next keepalive or the deadline, whichever is first.
		wait := min(s.lastSent.Add(s.cfg.Keepalive).Sub(now), deadline.Sub(now))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-arrived:
		case <-s.cfg.Clock.After(wait):
		}
	}
}
