package spool

import (
	"context"
	"errors"
	"fmt"
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
	Clock Clock
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
// spool, waiting for chunks still being fetched. While it waits it sends a
// keepalive at least every Keepalive; it renews the lease as it goes. It
// ends with an end frame when every chunk is sent, or with an error frame
// (and an error) when a chunk misses the wait limit, the lease cannot be
// renewed, or ctx ends. Chunks go out as stored: already compressed.
func Stream(ctx context.Context, w *edgeframe.Writer, r lease.Range, chunkSize int64, cfg StreamConfig) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	now := cfg.Clock.Now()
	s := &streamer{cfg: cfg, w: w, lastRenew: now, lastSent: now}
	first, ok := lease.SpanAt(r.Start, r.End, chunkSize, r.Next)
	if ok {
		for _, span := range lease.Spans(first.From, r.End, chunkSize) {
			if err := s.chunk(ctx, r, span); err != nil {
				return s.abort(err)
			}
		}
	}
	if err := w.End(); err != nil {
		return err
	}
	return cfg.Flush()
}

type streamer struct {
	cfg       StreamConfig
	w         *edgeframe.Writer
	lastRenew time.Time
	lastSent  time.Time // the last frame written: keepalives count from it
}

// sent flushes a frame just written.
func (s *streamer) sent(err error) error {
	if err != nil {
		return err
	}
	s.lastSent = s.cfg.Clock.Now()
	return s.cfg.Flush()
}

// abort ends the stream with an error frame saying why.
func (s *streamer) abort(err error) error {
	msg := err.Error()
	if errors.Is(err, context.Canceled) {
		msg = "the coordinator is shutting down"
	}
	if werr := s.w.Error(msg); werr == nil {
		s.cfg.Flush()
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

// read returns the chunk from the corpus or the spool, or nil when neither has it.
func (s *streamer) read(r lease.Range, span lease.Span) ([]byte, error) {
	if s.cfg.Corpus != nil && s.cfg.Corpus.Has(r.Group, span) {
		data, err := s.cfg.Corpus.Read(r.Group, span)
		if !errors.Is(err, corpus.ErrNotFound) {
			return data, err
		}
	}
	data, err := s.cfg.Spool.Read(r.ID, span)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	return data, err
}

// chunk sends one chunk, waiting for it if it is not stored yet.
func (s *streamer) chunk(ctx context.Context, r lease.Range, span lease.Span) error {
	deadline := s.cfg.Clock.Now().Add(s.cfg.WaitLimit)
	for {
		arrived := s.cfg.Notify() // taken before the check, so no arrival is missed
		data, err := s.read(r, span)
		if err != nil {
			return err
		}
		if data != nil {
			if err := s.sent(s.w.Chunk(span.From, span.To, data)); err != nil {
				return err
			}
			return s.renew(ctx)
		}
		now := s.cfg.Clock.Now()
		if !now.Before(deadline) {
			return fmt.Errorf("%w: chunk %d-%d of range %d not fetched within %s", ErrWaitLimit, span.From, span.To, r.ID, s.cfg.WaitLimit)
		}
		if now.Sub(s.lastSent) >= s.cfg.Keepalive {
			if err := s.sent(s.w.Keepalive()); err != nil {
				return err
			}
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
