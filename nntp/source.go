package nntp

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/overview"
	"github.com/edgeindex/edgeindex/sources"
)

// Source is a sources.ChunkSource on an NNTP server: Fetch sends OVER (or
// XOVER) for the span and gzips the lines as they arrive. It is safe for
// concurrent use; it keeps up to Config.MaxConns connections.
type Source struct {
	cfg  Config
	pool *pool

	lines   atomic.Int64
	dropped atomic.Int64
	cutTime atomic.Int64 // fetches cut by their deadline
	cutSize atomic.Int64 // fetches cut by a byte bound
	// connections used, by the compression they negotiated
	deflated, gzipped atomic.Int64

	bodies     chan struct{} // a token per body being read (Config.BodyConns)
	bodiesRead atomic.Int64

	mu       sync.Mutex
	nextID   uint64
	inFlight map[uint64]time.Time // the fetches running, by when they started
}

var _ sources.ChunkSource = (*Source)(nil)

// New returns a Source for cfg. It does not connect; Check does.
func New(cfg Config) (*Source, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Source{cfg: cfg, inFlight: map[uint64]time.Time{}, bodies: make(chan struct{}, cfg.BodyConns)}
	s.pool = newPool(&s.cfg)
	return s, nil
}

// Open is ParseURL then New.
func Open(rawURL string) (*Source, error) {
	cfg, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	return New(cfg)
}

// MaxConns is the most connections the Source opens at once, so a caller
// can size its concurrency (e.g. prefetch.Config.Concurrency) to it.
// When it is 2 or more, fetches use at most MaxConns-1 of them: one is
// kept for GROUP, so watermarks never wait behind fetches.
func (s *Source) MaxConns() int { return s.cfg.MaxConns }

// Close closes the idle connections and makes every later call fail with
// ErrClosed; connections in use close when their call ends.
func (s *Source) Close() error {
	s.pool.close()
	return nil
}

// Stats counts what the Source has done, and what it is doing.
type Stats struct {
	Dials   int64 // connections dialled, failed ones included
	Lines   int64 // overview lines written into chunks
	Dropped int64 // overview lines left out of chunks; see Fetch
	// CutDeadline and CutTooLarge count the fetches cut by their deadline
	// (ErrDeadline) and by a byte bound (ErrTooLarge).
	CutDeadline, CutTooLarge int64
	// Deflate and Gzip count the connections used that negotiated COMPRESS
	// DEFLATE and XFEATURE COMPRESS GZIP; the rest read plain text.
	Deflate, Gzip int64
	// Bodies counts the article bodies Body read.
	Bodies int64
	// InFlight is the fetches running now, and Oldest how long the oldest
	// of them has run (0 when none runs).
	InFlight int
	Oldest   time.Duration
}

// Stats returns the counts so far.
func (s *Source) Stats() Stats {
	st := Stats{Dials: s.pool.dials.Load(), Lines: s.lines.Load(), Dropped: s.dropped.Load(),
		CutDeadline: s.cutTime.Load(), CutTooLarge: s.cutSize.Load(),
		Deflate: s.deflated.Load(), Gzip: s.gzipped.Load(), Bodies: s.bodiesRead.Load()}
	now := time.Now()
	s.mu.Lock()
	st.InFlight = len(s.inFlight)
	for _, t := range s.inFlight {
		st.Oldest = max(st.Oldest, now.Sub(t))
	}
	s.mu.Unlock()
	return st
}

// started records a fetch in flight; the func it returns ends it.
func (s *Source) started() func() {
	s.mu.Lock()
	s.nextID++
	id := s.nextID
	s.inFlight[id] = time.Now()
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.inFlight, id)
		s.mu.Unlock()
	}
}

// fetchDeadline is how long a fetch of span may take in all: Timeout, and
// deadlineArticleBytes per article at MinRate, up to a day.
func (s *Source) fetchDeadline(span lease.Span) time.Duration {
	n := float64(span.To-span.From) + 1
	secs := min(n*deadlineArticleBytes/float64(s.cfg.MinRate), 24*3600)
	return s.cfg.Timeout + time.Duration(secs*float64(time.Second))
}

// Check dials a new connection and does the whole handshake (greeting,
// capabilities, STARTTLS, AUTHINFO), so a daemon can fail fast at start
// with one clear error for a bad login or an unreachable server. The
// connection then waits in the pool.
func (s *Source) Check(ctx context.Context) error {
	c, err := s.pool.get(ctx, true, false)
	if err != nil {
		return err
	}
	s.seen(c)
	s.pool.put(c)
	return nil
}

// with runs fn on a pooled connection, which must end within within (its
// every read and write, dialling aside) and read at most limit bytes off
// the wire (0: callWireBytes). The bound is on wire bytes, not only on the
// text: a deflated reply of empty blocks inflates to nothing, so no line
// or block bound is ever reached, and only this ends it before the
// deadline. ctx's end closes the connection, which aborts fn. A reused
// connection that fails before its first reply (the server closed it while
// idle) is dropped and fn runs once more on a fresh one.
func (s *Source) with(ctx context.Context, within time.Duration, limit int64, fn func(*conn) error) error {
	return s.withConn(ctx, false, within, limit, fn)
}

// withConn is with; fetch says fn is a fetch, which waits for a
// connection behind the calls that are not (the pool's put).
func (s *Source) withConn(ctx context.Context, fetch bool, within time.Duration, limit int64, fn func(*conn) error) error {
	for attempt := 0; ; attempt++ {
		c, err := s.pool.get(ctx, attempt > 0, fetch)
		if err != nil {
			return err
		}
		s.seen(c)
		c.replied = false
		c.read = 0
		stop := context.AfterFunc(ctx, func() { c.Close() })
		if limit <= 0 {
			limit = callWireBytes
		}
		c.dc.bound(within, limit)
		err = c.dc.deadlineErr(fn(c))
		c.dc.unbound()
		if err != nil && s.pool.lost(c) {
			err = fmt.Errorf("%w: %w", ErrSlotLost, err)
		}
		if !stop() {
			c.broken = true
			if err != nil && !errors.Is(err, ctx.Err()) {
				err = fmt.Errorf("%w (%w)", context.Cause(ctx), err)
			}
		}
		retry := err != nil && c.broken && c.used && !c.replied && ctx.Err() == nil && attempt == 0
		s.pool.put(c)
		if !retry {
			return err
		}
	}
}

// Group sends GROUP and returns the reply. It fails with an error
// wrapping ErrNoSuchGroup (and sources.ErrNoSuchGroup) on 411.
func (s *Source) Group(ctx context.Context, name string) (GroupInfo, error) {
	var g GroupInfo
	err := s.with(ctx, s.cfg.Timeout, groupWireBytes, func(c *conn) (err error) {
		g, err = c.selectGroup(name, true)
		return err
	})
	return g, err
}

// Watermarks returns the low and high watermarks exactly as GROUP reports
// them; an empty group may report high < low, or 0 and 0 (see
// GroupInfo.Empty).
func (s *Source) Watermarks(ctx context.Context, group string) (low, high int64, err error) {
	g, err := s.Group(ctx, group)
	return g.Low, g.High, err
}

// Fetch returns the gzip of the OVER lines of span in group, each ending
// in "\n" instead of the wire's "\r\n", dot-unstuffed, bytes as sent. The
// lines go into the gzip stream as they arrive; the uncompressed response
// is never held whole. An empty range (423, 420, or an empty block) is a
// valid chunk with no lines.
//
// A chunk must be readable by overview.ReadChunk, so Fetch leaves out, and
// counts in Stats.Dropped, a line that would make the whole chunk unusable
// or break its order: one that does not start with a decimal article
// number and a tab, whose number is outside the span or not above the
// previous line's, that has fewer than eight fields or a bytes or lines
// field that is not a count, or that is longer than overview.MaxLineBytes. A
// server that sends more such lines than the span has articles (at least
// 1024) gets an ErrProtocol error: it is not answering the command sent;
// each such line counts as it arrives, so an endless stream of them ends
// the fetch at the limit.
//
// A fetch is bounded in time and size: its whole response must arrive
// within Timeout + 1 KiB per article of the span at Config.MinRate, or it
// is cut with ErrDeadline; it reads at most Config.MaxFetchBytes, and its
// chunk may not pass Config.MaxChunkBytes compressed, or it fails with
// ErrTooLarge (which wraps overview.ErrBadChunk: the span cannot make a
// chunk a worker takes). Either error says how long the fetch ran and how
// many bytes it read. Fetches hold at most MaxConns-1 connections (when
// MaxConns > 1), so Watermarks never waits behind them. Fetch calls
// sources.Ready once it holds a connection, before it sends a command.
func (s *Source) Fetch(ctx context.Context, group string, span lease.Span) ([]byte, error) {
	if span.From < 0 || span.From > span.To {
		return nil, edgeindex.Invalidf("span %d-%d: want 0 <= from <= to", span.From, span.To)
	}
	if err := s.pool.reserve(ctx); err != nil {
		return nil, fmt.Errorf("nntp: fetch %s %d-%d: %w", group, span.From, span.To, err)
	}
	defer s.pool.unreserve()
	defer s.started()()
	start := time.Now()
	var out []byte
	var read int64
	err := s.withConn(ctx, true, s.fetchDeadline(span), s.cfg.MaxFetchBytes+readBufSize, func(c *conn) error {
		defer func() { read = c.read }()
		// The connection is held: the caller may now claim the chunk.
		if err := sources.Ready(ctx); err != nil {
			return err
		}
		// A server may fix a group's articles when GROUP selects it (INN's
		// nnrpd does): a span past the high it saw selects the group again.
		if _, err := c.selectGroup(group, span.To > c.high); err != nil {
			return err
		}
		w := newChunkWriter(span, s.cfg.MaxChunkBytes)
		defer w.release()
		c.lim = blockLimits{total: s.cfg.MaxFetchBytes, skip: w.drop}
		defer func() { c.lim = blockLimits{} }()
		xover := s.pool.xover.Load()
		err := c.over(xover, span.From, span.To, w.line)
		if errors.Is(err, errUnknownCommand) {
			s.pool.xover.Store(true)
			err = c.over(true, span.From, span.To, w.line)
		}
		if err == nil {
			out, err = w.finish()
		}
		if errors.Is(err, ErrTooLarge) {
			return fmt.Errorf("%w: %w", ErrChunkTooLarge, err)
		}
		if err != nil {
			return err
		}
		s.lines.Add(w.lines)
		s.dropped.Add(w.dropped)
		return nil
	})
	if err != nil {
		switch {
		case errors.Is(err, ErrDeadline):
			s.cutTime.Add(1)
		case errors.Is(err, ErrTooLarge):
			s.cutSize.Add(1)
		}
		return nil, fmt.Errorf("nntp: fetch %s %d-%d (elapsed %s, %d bytes read): %w", group, span.From, span.To,
			time.Since(start).Round(time.Millisecond), read, err)
	}
	return out, nil
}

// flushAt is how much uncompressed text a chunkWriter gathers before it
// hands it to gzip: one Write per line would cost more than the lines.
const flushAt = 32 << 10

// chunkWriter gzips overview lines, keeping the ones a chunk may hold.
type chunkWriter struct {
	from, to int64
	last     int64 // the last number kept
	limit    int64 // the most lines it drops before it gives up
	buf      []byte
	out      []byte
	max      int64 // the most bytes out may hold
	zw       *gzip.Writer
	err      error
	lines    int64
	dropped  int64
}

var chunkGzip = sync.Pool{New: func() any {
	zw, err := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	if err != nil {
		panic(err) // BestSpeed is a valid level
	}
	return zw
}}

var chunkBuf = sync.Pool{New: func() any { b := make([]byte, 0, flushAt+4096); return &b }}

func newChunkWriter(span lease.Span, maxBytes int64) *chunkWriter {
	w := &chunkWriter{from: span.From, to: span.To, last: -1, limit: 1024, max: maxBytes}
	if n := span.To - span.From; n >= w.limit { // no overflow: From >= 0
		w.limit = min(n+1, 1<<30)
	}
	// About 35 bytes a gzipped line at BestSpeed (250 plain), for a full span of a
	// typical chunk size; bigger ones grow.
	w.out = make([]byte, 0, int(min(span.To-span.From+1, 4000))*48)
	w.zw = chunkGzip.Get().(*gzip.Writer)
	w.zw.Reset(boundedWriter{w})
	w.buf = (*chunkBuf.Get().(*[]byte))[:0]
	return w
}

// boundedWriter is where a chunkWriter's gzip goes: its buffer, refusing
// any write that would take it past max before the buffer grows. The
// buffer doubles, but never past max, so a refused chunk costs at most
// max and a half.
type boundedWriter struct{ w *chunkWriter }

func (b boundedWriter) Write(p []byte) (int, error) {
	w := b.w
	need := int64(len(w.out)) + int64(len(p))
	if w.max > 0 && need > w.max {
		return 0, fmt.Errorf("%w: the chunk would pass %d bytes compressed", ErrTooLarge, w.max)
	}
	if need > int64(cap(w.out)) {
		c := max(2*int64(cap(w.out)), need, 4096)
		if w.max > 0 {
			c = min(c, w.max)
		}
		out := make([]byte, len(w.out), c)
		copy(out, w.out)
		w.out = out
	}
	w.out = append(w.out, p...)
	return len(p), nil
}

func (w *chunkWriter) release() {
	if w.zw != nil {
		w.zw.Reset(nil)
		chunkGzip.Put(w.zw)
		w.zw = nil
		b := w.buf[:0]
		chunkBuf.Put(&b)
		w.buf = nil
	}
}

// line takes one line of the response, without its line ending.
func (w *chunkWriter) line(l []byte) error {
	n, ok := overviewNumber(l)
	if !ok || n < w.from || n > w.to || n <= w.last || len(l) >= overview.MaxLineBytes {
		return w.drop()
	}
	w.last = n
	w.buf = append(w.buf, l...)
	w.buf = append(w.buf, '\n')
	w.lines++
	if len(w.buf) >= flushAt {
		if _, err := w.zw.Write(w.buf); err != nil {
			return err
		}
		w.buf = w.buf[:0]
	}
	return nil
}

func (w *chunkWriter) drop() error {
	w.dropped++
	if w.dropped > w.limit {
		return fmt.Errorf("%w: more than %d lines that are not overview lines of the span", ErrProtocol, w.limit)
	}
	return nil
}

func (w *chunkWriter) finish() ([]byte, error) {
	if _, err := w.zw.Write(w.buf); err != nil {
		return nil, err
	}
	if err := w.zw.Close(); err != nil {
		return nil, err
	}
	return w.out, nil
}

// overviewNumber returns the article number of an overview line that
// overview.Parse accepts, and false for any other line: the number
// must be decimal digits that fit an int64, there must be at least eight
// tab-separated fields, and the seventh and eighth (bytes, lines) must be
// digits or empty.
func overviewNumber(l []byte) (int64, bool) {
	n, i, ok := digits(l, 0)
	if !ok || i == 0 || i >= len(l) || l[i] != '\t' {
		return 0, false
	}
	// Skip Subject, From, Date, Message-ID and References.
	for f := 0; f < 5; f++ {
		j := bytes.IndexByte(l[i+1:], '\t')
		if j < 0 {
			return 0, false
		}
		i += 1 + j
	}
	// bytes, then lines, each followed by a tab or the end.
	for f := 0; f < 2; f++ {
		_, j, ok := digits(l, i+1)
		if !ok {
			return 0, false
		}
		if f == 0 && (j >= len(l) || l[j] != '\t') {
			return 0, false
		}
		if f == 1 && j < len(l) && l[j] != '\t' {
			return 0, false
		}
		i = j
	}
	return n, true
}

// digits parses the decimal digits of l from i, returning the value, the
// index after them, and false on an int64 overflow.
func digits(l []byte, i int) (int64, int, bool) {
	var n int64
	for ; i < len(l); i++ {
		c := l[i]
		if c < '0' || c > '9' {
			break
		}
		d := int64(c - '0')
		if n > (1<<63-1-d)/10 {
			return 0, i, false
		}
		n = n*10 + d
	}
	return n, i, true
}
