package coordinator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/edgeframe"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/spool"
)

// Grant grants node a range of an unordered group (the tail lane first,
// then the lowest start; a range reported corrupt waits out its retry
// delay first), and kicks the prefetcher. It fails with lease.ErrNoWork when no range is eligible.
func (s *Service) Grant(ctx context.Context, node string) (api.Lease, error) {
	l, err := s.cfg.Store.Grant(ctx, node, s.cfg.LeaseTTL)
	if err != nil {
		return api.Lease{}, err
	}
	s.kick()
	s.cfg.Metrics.leased()
	return l, nil
}

// Check returns the range's lease if f holds it; it writes nothing.
func (s *Service) Check(ctx context.Context, rangeID int64, f lease.Fence) (api.Lease, error) {
	return s.cfg.Store.Check(ctx, rangeID, f)
}

// A RangeStream is a held range whose stream is ready to send: OpenStream
// or OpenReplay checked the lease.
type RangeStream struct {
	s      *Service
	l      api.Lease
	f      lease.Fence
	stored int64 // the range's real next; l.Range.Next is where the stream starts
}

// StreamSink is where a stream's frames go, and how they are pushed: an
// http.ResponseController's Flush and SetWriteDeadline for an HTTP answer.
// Only W is required.
type StreamSink struct {
	W io.Writer
	// Flush pushes the frames written so far to the worker.
	Flush func() error
	// SetWriteDeadline is called before every write with Config.WriteTimeout
	// from now: a worker that stops reading ends its stream.
	SetWriteDeadline func(time.Time) error
	// SetLength, when set, is told the stream's exact length before its
	// first byte when every chunk is stored already.
	SetLength func(n int64)
}

// OpenStream checks f's lease of the range and returns its stream, from the
// chunk that holds the range's next.
func (s *Service) OpenStream(ctx context.Context, rangeID int64, f lease.Fence) (*RangeStream, error) {
	l, err := s.cfg.Store.Check(ctx, rangeID, f)
	if err != nil {
		return nil, err
	}
	return &RangeStream{s: s, l: l, f: f, stored: l.Range.Next}, nil
}

// OpenReplay is OpenStream from the chunk that holds article from, which
// must lie between the range's start and its next: the chunks already
// stored come first (those no longer kept are skipped), for a lane's new
// holder to rebuild its window.
func (s *Service) OpenReplay(ctx context.Context, rangeID int64, f lease.Fence, from int64) (*RangeStream, error) {
	rs, err := s.OpenStream(ctx, rangeID, f)
	if err != nil {
		return nil, err
	}
	if r := rs.l.Range; from < r.Start || from > r.Next {
		return nil, edgeindex.Invalidf("from %d: want %d to the range's next %d", from, r.Start, r.Next)
	}
	rs.l.Range.Next = from
	return rs, nil
}

// Lease is the lease the stream was opened under.
func (rs *RangeStream) Lease() api.Lease { return rs.l }

// Send writes the range's frames to sink until the end frame, an error
// frame (the lease lost, a chunk past the wait limit, Drain) or a failed
// write. The lease is checked every TTL/3, not renewed. The returned error
// says why a stream ended early; the frames said it to the worker already.
func (rs *RangeStream) Send(ctx context.Context, sink StreamSink) error {
	svc := rs.s
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(svc.streams, cancel)() // Drain ends streams

	cw := &countingWriter{w: sink.W}
	cfg := spool.StreamConfig{
		Spool:     svc.cfg.Spool,
		Corpus:    svc.cfg.Corpus,
		Keepalive: svc.cfg.Keepalive,
		WaitLimit: svc.cfg.WaitLimit,
		Clock:     svc.cfg.Clock,
		Check: func(ctx context.Context) error {
			_, err := svc.cfg.Store.Check(ctx, rs.l.Range.ID, rs.f)
			return err
		},
		CheckEvery:       svc.cfg.LeaseTTL / 3,
		Stored:           rs.stored,
		Flush:            sink.Flush,
		SetWriteDeadline: sink.SetWriteDeadline,
		WriteTimeout:     svc.cfg.WriteTimeout,
		SetLength:        sink.SetLength,
		Keepalives:       svc.cfg.Metrics.keepalive,
	}
	if svc.cfg.Prefetcher != nil {
		cfg.Notify = svc.cfg.Prefetcher.Notify
	}
	err := spool.Stream(ctx, cw, rs.l.Range, rs.l.ChunkSize, cfg)
	svc.cfg.Metrics.streamed(cw.n)
	if err != nil && !errors.Is(err, context.Canceled) {
		svc.cfg.Logger.Info("stream ended", "range", rs.l.Range.ID, "node", rs.f.Node, "err", err)
	}
	return err
}

type countingWriter struct {
	w io.Writer
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

// smallBatch is the largest body PostBatch decodes before the fence is
// checked: decoding it costs less than the check's read, and the store
// checks the fence anyway as it writes.
const smallBatch = 64 << 10

// PostBatch stores the batch whose encoded body (size bytes, or -1 when
// unknown) body holds: the route's way in. The fence is checked before the
// body is read, so a stale holder's body costs nothing, unless the body is
// small (smallBatch): the store's own check as it writes is then the only
// one, and a small body that fails to decode is answered with the lease
// check's error when the lease is lost, so the answer is the same either
// way. The body's bytes are then taken from the batch budget
// (Config.MaxBatchBytes) while it is decoded and stored, and a batch the
// budget has no room for fails with api.ErrBusy. A body over
// Config.MaxBody fails with api.ErrTooLarge.
//
// A final batch (Batch.Final) also finishes the range, in the transaction
// that stores it, and drops its spool chunks, as Finish does: the answer
// says Done. A final batch whose range f's own grant finished already is
// the retry of one whose answer was lost: it gets Duplicate and Done. Only
// then is the body of a batch whose lease is lost read.
func (s *Service) PostBatch(ctx context.Context, rangeID int64, f lease.Fence, size int64, body io.Reader) (api.BatchReply, error) {
	return s.postBatch(ctx, rangeID, f, size, body, false)
}

// PostBatchThenLease is PostBatch for a batch posted with ?then=lease: when
// it finishes its range, the answer also carries f.Node's next lease
// (BatchReply.Lease), granted in the statement that stores the batch where
// the store can (sqlstore's PutThenGrant), else right after it. With no
// work there is no lease, as there is none when the grant fails (it is
// logged): the batch is stored either way, and the worker asks for its
// next range the usual way.
func (s *Service) PostBatchThenLease(ctx context.Context, rangeID int64, f lease.Fence, size int64, body io.Reader) (api.BatchReply, error) {
	return s.postBatch(ctx, rangeID, f, size, body, true)
}

func (s *Service) postBatch(ctx context.Context, rangeID int64, f lease.Fence, size int64, body io.Reader, then bool) (api.BatchReply, error) {
	small := size >= 0 && size <= min(smallBatch, s.cfg.MaxBody)
	if !small {
		if err := s.fence(ctx, rangeID, f); err != nil {
			s.cfg.Metrics.batch("refused", 0)
			return api.BatchReply{}, err
		}
	}
	if size > s.cfg.MaxBody {
		s.cfg.Metrics.batch("refused", 0)
		return api.BatchReply{}, fmt.Errorf("%w: a batch of at most %d bytes", api.ErrTooLarge, s.cfg.MaxBody)
	}
	hint := size
	if size < 0 { // unknown length: the most it may be
		size = s.cfg.MaxBody
	}
	if !s.batches.take(size) {
		s.cfg.Metrics.batch("busy", 0)
		return api.BatchReply{}, fmt.Errorf("%w: batches being stored hold the coordinator's batch memory; try again", api.ErrBusy)
	}
	defer s.batches.give(size)
	b, err := edgeframe.DecodeBatchSize(body, hint, s.cfg.MaxBody)
	if err != nil {
		if small {
			if ferr := s.fence(ctx, rangeID, f); ferr != nil {
				err = ferr // a stale holder hears that first, as it would have
			}
		}
		s.cfg.Metrics.batch("refused", 0)
		return api.BatchReply{}, err
	}
	return s.store(ctx, rangeID, f, b, then)
}

// fence checks f's lease of the range before a batch is looked at. A range
// f's own grant finished passes: a final batch may be the retry of the one
// that finished it (the store decides).
func (s *Service) fence(ctx context.Context, rangeID int64, f lease.Fence) error {
	_, err := s.cfg.Store.Check(ctx, rangeID, f)
	if errors.Is(err, edgeindex.ErrFinished) {
		return nil
	}
	return err
}

// StoreBatch stores b for the range f holds: a program's way in, with the
// checks PostBatch's decoding makes (edgeframe.ValidateBatch).
func (s *Service) StoreBatch(ctx context.Context, rangeID int64, f lease.Fence, b api.Batch) (api.BatchReply, error) {
	err := s.fence(ctx, rangeID, f)
	if err == nil {
		err = edgeframe.ValidateBatch(b)
	}
	if err != nil {
		s.cfg.Metrics.batch("refused", 0)
		return api.BatchReply{}, err
	}
	return s.store(ctx, rangeID, f, b, false)
}

// store applies the batch rule (batch.Store.Put) to a decoded batch: from
// == next stores it, to < next is a duplicate, anything else a conflict;
// the store checks f's lease as it writes. With then, a batch that
// finishes its range gets f.Node's next lease too (PostBatchThenLease).
func (s *Service) store(ctx context.Context, rangeID int64, f lease.Fence, b api.Batch, then bool) (api.BatchReply, error) {
	var reply api.BatchReply
	tried := false
	var err error
	if g, ok := s.cfg.Store.(thenGranter); ok && then {
		reply.Result, reply.Lease, tried, err = g.PutThenGrant(ctx, rangeID, f, b, s.cfg.LeaseTTL)
	} else {
		reply.Result, err = s.cfg.Store.Put(ctx, rangeID, f, b)
	}
	switch {
	case err != nil:
		s.cfg.Metrics.batch("refused", 0)
		return api.BatchReply{}, err
	case reply.Duplicate:
		s.cfg.Metrics.batch("duplicate", 0)
	default:
		s.cfg.Metrics.batch("stored", len(b.Items))
	}
	if reply.Done {
		s.dropSpool(rangeID)
	}
	switch {
	case reply.Lease != nil:
		s.kick()
		s.cfg.Metrics.leased()
	case then && reply.Done && !tried:
		l, err := s.Grant(ctx, f.Node)
		if err == nil {
			reply.Lease = &l
		} else if !errors.Is(err, lease.ErrNoWork) {
			s.cfg.Logger.Warn("lease after a final batch", "node", f.Node, "err", err)
		}
	}
	return reply, nil
}

// thenGranter is a store that can grant a node's next range in the
// statement that stores its final batch (sqlstore.Store.PutThenGrant):
// tried says it did try; when it did not, the Service grants after.
type thenGranter interface {
	PutThenGrant(ctx context.Context, rangeID int64, f lease.Fence, b batch.Batch, ttl time.Duration) (batch.Result, *lease.Lease, bool, error)
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

// Heartbeat renews f's lease of the range and returns its new expiry.
func (s *Service) Heartbeat(ctx context.Context, rangeID int64, f lease.Fence) (time.Time, error) {
	return s.cfg.Store.Heartbeat(ctx, rangeID, f, s.cfg.LeaseTTL)
}

// Finish marks the range done when its batches reach its end (a conflict
// otherwise), and drops its spool chunks.
func (s *Service) Finish(ctx context.Context, rangeID int64, f lease.Fence) error {
	if err := s.cfg.Store.Finish(ctx, rangeID, f); err != nil {
		return err
	}
	s.dropSpool(rangeID)
	return nil
}

// dropSpool drops a done range's spool chunks; a failure is only logged.
func (s *Service) dropSpool(rangeID int64) {
	if err := s.cfg.Spool.Drop(rangeID); err != nil {
		s.cfg.Logger.Warn("drop spool", "range", rangeID, "err", err)
	}
}

// Corrupt records that the range's chunk starting at from does not inflate
// or parse: the range goes back to pending with one more attempt (failed at
// the store's maximum), and the chunk leaves the spool, and the corpus when
// the range's chunks live there, so it is fetched again.
func (s *Service) Corrupt(ctx context.Context, rangeID int64, f lease.Fence, from int64) (api.Range, error) {
	l, err := s.cfg.Store.Check(ctx, rangeID, f)
	if err != nil {
		return api.Range{}, err
	}
	rg, err := s.cfg.Store.Corrupt(ctx, rangeID, f, from, "reported corrupt by "+f.Node)
	if err != nil {
		return api.Range{}, err
	}
	span, _ := lease.SpanAt(l.Range.Start, l.Range.End, l.ChunkSize, from)
	if err := s.cfg.Spool.DropChunk(rangeID, span); err != nil {
		return api.Range{}, fmt.Errorf("drop corrupt chunk: %w", err)
	}
	if spool.InCorpus(l.Range, s.cfg.Corpus) {
		if err := s.cfg.Corpus.Delete(l.Range.Group, span); err != nil {
			return api.Range{}, fmt.Errorf("drop corrupt chunk: %w", err)
		}
	}
	s.kick()
	return rg, nil
}

// Release gives the range back as pending, with no attempt counted.
func (s *Service) Release(ctx context.Context, rangeID int64, f lease.Fence) error {
	return s.cfg.Store.Release(ctx, rangeID, f)
}
