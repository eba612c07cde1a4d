package spool

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/edgeindex/edgeindex/corpus"
	"github.com/edgeindex/edgeindex/edgeframe"
	"github.com/edgeindex/edgeindex/lease"
)

// ErrWaitLimit means a chunk did not arrive within the stream's wait limit.
var ErrWaitLimit = errors.New("chunk did not arrive within the wait limit")

// Clock is the time a stream sees; tests inject one. Its After behaves like
// time.After.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// StreamConfig configures Stream. Spool is required; the zero value of
// every other field means its default.
type StreamConfig struct {
	Spool  Store
	Corpus corpus.Store // read first, for capture ranges; nil: spool only
	// Notify returns a channel closed when the next chunk is stored.
	// Default: Spool.Notify. A coordinator whose prefetcher also fills the
	// corpus passes Prefetcher.Notify.
	Notify func() <-chan struct{}
	// Renew renews the lease; the stream calls it at least every
	// RenewEvery, and ends with an error frame when it fails.
	Renew      func(ctx context.Context) error
	RenewEvery time.Duration // default 20s
	// Keepalive is the longest the stream stays silent. Default 20s.
	Keepalive time.Duration
	// WaitLimit is how long the stream waits for one chunk. Default 1h.
	WaitLimit time.Duration
	// Flush pushes written frames to the worker (http.ResponseController's).
	Flush func() error
	// Keepalives, when set, is called for every keepalive sent (metrics).
	Keepalives func()
	// SetLength, when set, is told the stream's exact length before the
	// first byte when every chunk is stored already.
	SetLength func(n int64)
	Clock     Clock
}

func (c *StreamConfig) validate() error {
	if c.Spool == nil {
		return lease.Invalidf("stream: a Spool is required")
	}
	if c.Notify == nil {
		c.Notify = c.Spool.Notify
	}
	if c.Renew == nil {
		c.Renew = func(context.Context) error { return nil }
	}
	if c.Flush == nil {
		c.Flush = func() error { return nil }
	}
	if c.Keepalives == nil {
		c.Keepalives = func() {}
	}
	setDefault(&c.RenewEvery, 20*time.Second)
	setDefault(&c.Keepalive, 20*time.Second)
	setDefault(&c.WaitLimit, time.Hour)
	if c.Clock == nil {
		c.Clock = realClock{}
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
// Keepalive; it renews the lease as it goes. It ends with an end frame when
// every chunk is sent, or with an error frame (and an error) when a chunk
// misses the wait limit, the lease cannot be renewed, or ctx ends.
func Stream(ctx context.Context, w io.Writer, r lease.Range, chunkSize int64, cfg StreamConfig) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	var spans []lease.Span
	if first, ok := lease.SpanAt(r.Start, r.End, chunkSize, r.Next); ok {
		spans = lease.Spans(first.From, r.End, chunkSize)
	}
	now := cfg.Clock.Now()
	s := &streamer{cfg: cfg, lastRenew: now, lastSent: now}
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
		if err := s.renew(ctx); err != nil {
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
	lastRenew time.Time
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

// renew renews the lease when RenewEvery has passed since the last renewal.
func (s *streamer) renew(ctx context.Context) error {
	now := s.cfg.Clock.Now()
	if now.Sub(s.lastRenew) < s.cfg.RenewEvery {
		return nil
	}
	if err := s.cfg.Renew(ctx); err != nil {
		return fmt.Errorf("renew lease: %w", err)
	}
	s.lastRenew = now
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
			return s.renew(ctx)
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
			if err := s.renew(ctx); err != nil {
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
