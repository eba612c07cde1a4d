package spool

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/corpus"
	"github.com/edgeindex/edgeindex/edgeframe"
	"github.com/edgeindex/edgeindex/lease"
)

// ErrWaitLimit means a chunk did not arrive within the stream's wait limit.
var ErrWaitLimit = errors.New("chunk did not arrive within the wait limit")

// StreamConfig configures Stream. Spool is required; the zero value of
// every other field means its default.
type StreamConfig struct {
	Spool  Store
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
	// Flush pushes written frames to the worker (http.ResponseController's).
	Flush func() error
	// SetWriteDeadline, when set, is called before every write to the
	// worker and before every Flush with WriteTimeout from now
	// (http.ResponseController's): a worker that stops reading ends the
	// stream within one WriteTimeout.
	// Writes go out in pieces of at most WritePiece bytes, each with its
	// own deadline, so a slow worker that keeps reading is never cut.
	SetWriteDeadline func(time.Time) error
	// WriteTimeout bounds one piece of a write. Default 30s.
	WriteTimeout time.Duration
	// Keepalives, when set, is called for every keepalive sent (metrics).
	Keepalives func()
	// SetLength, when set, is told the stream's exact length before the
	// first byte when every chunk is stored already.
	SetLength func(n int64)
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
	if c.Flush == nil {
		c.Flush = func() error { return nil }
	}
	if c.Keepalives == nil {
		c.Keepalives = func() {}
	}
	setDefault(&c.CheckEvery, 20*time.Second)
	setDefault(&c.Keepalive, 20*time.Second)
	setDefault(&c.WaitLimit, time.Hour)
	setDefault(&c.WriteTimeout, 30*time.Second)
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
// SetLength the stream's exact size (so an HTTP handler can set
// Content-Length, and the kernel can send the files), and writes them
// straight to w. Otherwise it buffers frames and flushes them before every
// wait and at the end. While it waits it sends a keepalive at least every
// Keepalive; it checks the lease as it goes. It ends with an end frame when
// every chunk is sent, or with an error frame (and an error) when a chunk
// misses the wait limit, the lease is lost, or ctx ends.
func Stream(ctx context.Context, w io.Writer, r lease.Range, chunkSize int64, cfg StreamConfig) error {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return err
	}
	var spans []lease.Span
	if first, ok := lease.SpanAt(r.Start, r.End, chunkSize, r.Next); ok {
		spans = lease.Spans(first.From, r.End, chunkSize)
	}
	if cfg.SetWriteDeadline != nil {
		dw := NewDeadlineWriter(w, cfg.SetWriteDeadline, cfg.WriteTimeout)
		// Once ctx ends (the coordinator drains), every write gets a short
		// grace: the error frame still reaches a worker that reads, and a
		// write blocked on one that does not ends soon.
		stop := context.AfterFunc(ctx, func() { dw.Shorten(DrainGrace) })
		defer stop()
		w = dw
		flush := cfg.Flush
		cfg.Flush = func() error {
			dw.Arm()
			return flush()
		}
	}
	now := cfg.Clock.Now()
	s := &streamer{cfg: cfg, lastCheck: now, lastSent: now}
	if cfg.SetLength != nil {
		files, size, ok := s.openAll(r, spans)
		if ok {
			cfg.SetLength(size)
			s.w = edgeframe.NewWriter(w)
			return s.sendAll(ctx, spans, files)
		}
		closeAll(files)
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	s.w = edgeframe.NewWriter(bw)
	s.flush = func() error {
		if err := bw.Flush(); err != nil {
			return err
		}
		return cfg.Flush()
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
		if err := s.cfg.Flush(); err != nil {
			return err
		}
		if err := s.check(ctx); err != nil {
			return err
		}
	}
	if err := s.w.End(); err != nil {
		return err
	}
	return s.cfg.Flush()
}

type streamer struct {
	cfg       StreamConfig
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
	if errors.Is(err, ErrNotFound) {
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

// WritePiece is the most a DeadlineWriter writes under one deadline.
const WritePiece = 256 << 10

// DrainGrace is the write deadline of a stream whose context ended.
const DrainGrace = time.Second

// DeadlineWriter bounds every write to a peer that may stop reading. Before
// each piece of at most WritePiece bytes it sets the write deadline Timeout
// from now, so a peer that stops reading costs at most one Timeout, and one
// that reads slowly but steadily is never cut. ReadFrom keeps the
// underlying writer's ReadFrom (sendfile) for each piece. Errors from the
// deadline setter are ignored: a writer that takes no deadline cannot be
// bounded.
type DeadlineWriter struct {
	w       io.Writer
	set     func(time.Time) error
	timeout time.Duration

	mu    sync.Mutex
	grace time.Duration // > 0 once Shorten was called
}

// NewDeadlineWriter returns a DeadlineWriter that writes to w and sets
// deadlines with set, timeout from the start of each piece.
func NewDeadlineWriter(w io.Writer, set func(time.Time) error, timeout time.Duration) *DeadlineWriter {
	return &DeadlineWriter{w: w, set: set, timeout: timeout}
}

// Arm sets the deadline of the next write: Timeout from now, or the grace
// from now once Shorten was called.
func (d *DeadlineWriter) Arm() {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.timeout
	if d.grace > 0 {
		t = min(t, d.grace)
	}
	d.set(time.Now().Add(t))
}

// Shorten makes the write in progress, and every later one, end within
// grace from now. It is safe to call from another goroutine.
func (d *DeadlineWriter) Shorten(grace time.Duration) {
	d.mu.Lock()
	d.grace = max(grace, time.Nanosecond)
	d.mu.Unlock()
	d.Arm()
}

// Write writes p in pieces, each under its own deadline.
func (d *DeadlineWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		n := min(len(p), WritePiece)
		d.Arm()
		m, err := d.w.Write(p[:n])
		written += m
		if err != nil {
			return written, err
		}
		p = p[n:]
	}
	return written, nil
}

// ReadFrom copies r in pieces, each under its own deadline. A limited
// reader is unwrapped, so each piece is one *io.LimitedReader over the
// source and the kernel can still send a file.
func (d *DeadlineWriter) ReadFrom(r io.Reader) (int64, error) {
	src, remain := r, int64(-1)
	if lr, ok := r.(*io.LimitedReader); ok {
		if lr.N <= 0 {
			return 0, nil
		}
		src, remain = lr.R, lr.N
		defer func() { lr.N = remain }()
	}
	var total int64
	for remain != 0 {
		n := int64(WritePiece)
		if remain > 0 {
			n = min(n, remain)
		}
		d.Arm()
		m, err := io.Copy(d.w, &io.LimitedReader{R: src, N: n})
		total += m
		if remain > 0 {
			remain -= m
		}
		if err != nil || m < n {
			return total, err
		}
	}
	return total, nil
}
