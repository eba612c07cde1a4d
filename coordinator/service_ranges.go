package coordinator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/edgeframe"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/spool"
)

// Grant grants node a range of an unordered group (the tail lane first,
// then the lowest start; a range reported corrupt waits out its retry
// delay first). It fails with lease.ErrNoWork when no range is eligible.
// It does not kick the prefetcher: the range's stream does when it opens
// (RangeStream.Send), so a range that nobody streams costs no fetch.
func (s *Service) Grant(ctx context.Context, node string) (api.Lease, error) {
	l, err := s.cfg.Store.Grant(ctx, node, s.cfg.LeaseTTL)
	if err != nil {
		return api.Lease{}, err
	}
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

// Send writes the range's frames to w until the end frame, an error frame
// (the lease lost, a chunk past the wait limit, Drain) or a failed write.
// The lease is checked every TTL/3, not renewed. The returned error says
// why a stream ended early; the frames said it to the worker already.
func (rs *RangeStream) Send(ctx context.Context, w FrameWriter) error {
	svc := rs.s
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(svc.streams, cancel)() // Drain ends streams

	// A stream is what the prefetcher fetches for: its range's chunks
	// first, then the ranges a grant takes next. Each stream kicks it, not
	// each grant, so ranges nobody streams cost no fetch, and streams that
	// find their chunks stored still move the lookahead on.
	svc.kick()
	cw := &countingFrames{FrameWriter: w}
	cfg := StreamConfig{
		Spool:     svc.cfg.Spool,
		Corpus:    svc.cfg.Corpus,
		Keepalive: svc.cfg.Keepalive,
		WaitLimit: svc.cfg.WaitLimit,
		Clock:     svc.cfg.Clock,
		Check: func(ctx context.Context) error {
			_, err := svc.cfg.Store.Check(ctx, rs.l.Range.ID, rs.f)
			return err
		},
		CheckEvery: svc.cfg.LeaseTTL / 3,
		Stored:     rs.stored,
		Keepalives: svc.cfg.Metrics.keepalive,
	}
	if svc.cfg.Prefetcher != nil {
		cfg.Notify = svc.cfg.Prefetcher.Notify
	}
	err := Stream(ctx, cw, rs.l.Range, rs.l.ChunkSize, cfg)
	svc.cfg.Metrics.streamed(cw.n)
	if err != nil && !errors.Is(err, context.Canceled) {
		svc.cfg.Logger.Info("stream ended", "range", rs.l.Range.ID, "node", rs.f.Node, "err", err)
	}
	return err
}

// countingFrames counts the bytes written through a FrameWriter.
type countingFrames struct {
	FrameWriter
	n int64
}

func (c *countingFrames) Write(p []byte) (int, error) {
	n, err := c.FrameWriter.Write(p)
	c.n += int64(n)
	return n, err
}

// ReadFrom keeps the writer's own ReadFrom (sendfile) reachable.
func (c *countingFrames) ReadFrom(r io.Reader) (int64, error) {
	n, err := io.Copy(c.FrameWriter, r)
	c.n += n
	return n, err
}

// CheckBatch checks, before a batch is read, that f holds the range: the
// HTTP layer's fence before it decodes a body, so a stale holder's batch
// costs nothing. A range f's own grant finished passes: a final batch may
// be the retry of the one that finished it (the store decides).
func (s *Service) CheckBatch(ctx context.Context, rangeID int64, f lease.Fence) error {
	_, err := s.cfg.Store.Check(ctx, rangeID, f)
	if errors.Is(err, edgeindex.ErrFinished) {
		return nil
	}
	return err
}

// StoreBatch stores b for the range f holds, after the checks a decoded
// batch passed (edgeframe.ValidateBatch); a batch that fails them gets
// CheckBatch's error first when the lease is lost.
//
// A final batch (Batch.Final) also finishes the range, in the transaction
// that stores it, and drops its spool chunks, as Finish does: the answer
// says Done. A final batch whose range f's own grant finished already is
// the retry of one whose answer was lost: it gets Duplicate and Done.
func (s *Service) StoreBatch(ctx context.Context, rangeID int64, f lease.Fence, b api.Batch) (api.BatchReply, error) {
	if err := s.validBatch(ctx, rangeID, f, b); err != nil {
		return api.BatchReply{}, err
	}
	return s.storeBatch(ctx, rangeID, f, b, false)
}

// StoreBatchThenLease is StoreBatch for a batch posted with ?then=lease:
// when it finishes its range, the answer also carries f.Node's next lease
// (BatchReply.Lease), granted in the statement that stores the batch where
// the store can (Store.PutThenGrant), else right after it. With no work
// there is no lease, as there is none when the grant fails (it is
// logged): the batch is stored either way, and the worker asks for its
// next range the usual way.
func (s *Service) StoreBatchThenLease(ctx context.Context, rangeID int64, f lease.Fence, b api.Batch) (api.BatchReply, error) {
	if err := s.validBatch(ctx, rangeID, f, b); err != nil {
		return api.BatchReply{}, err
	}
	return s.storeBatch(ctx, rangeID, f, b, true)
}

// validBatch checks b as decoding checks a body; a stale holder hears of
// its lease first.
func (s *Service) validBatch(ctx context.Context, rangeID int64, f lease.Fence, b api.Batch) error {
	err := s.CheckBatch(ctx, rangeID, f)
	if err == nil {
		err = edgeframe.ValidateBatch(b)
	}
	if err != nil {
		s.cfg.Metrics.batch("refused", 0)
	}
	return err
}

// storeBatch applies the batch rule (batch.Store.Put) to a batch that
// passed edgeframe's checks: from == next stores it, to < next is a
// duplicate, anything else a conflict; the store checks f's lease as it
// writes. With then, a batch that finishes its range gets f.Node's next
// lease too (StoreBatchThenLease). It is StoreBatch's last step, and the
// HTTP layer's way in for a batch it decoded (Server.readBatch), which
// checked the fence already when the body was large.
func (s *Service) storeBatch(ctx context.Context, rangeID int64, f lease.Fence, b api.Batch, then bool) (api.BatchReply, error) {
	var reply api.BatchReply
	tried := false
	var err error
	if then {
		reply.Result, reply.Lease, tried, err = s.cfg.Store.PutThenGrant(ctx, rangeID, f, b, s.cfg.LeaseTTL)
	} else {
		reply.Result, err = s.cfg.Store.Put(ctx, rangeID, f, b)
	}
	return s.stored(ctx, rangeID, f, b, then, reply, tried, err)
}

// stored does what follows a Put of b (its reply, or err): the metrics,
// the spool of a range it finished, and, with then, the next lease of a
// range it finished when the store did not try to grant it (tried).
func (s *Service) stored(ctx context.Context, rangeID int64, f lease.Fence, b api.Batch, then bool, reply api.BatchReply, tried bool, err error) (api.BatchReply, error) {
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
