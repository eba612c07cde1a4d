package coordinator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/edgeframe"
	"github.com/edgeindex/edgeindex/lease"
)

// handleBatch answers POST /v1/ranges/{id}/batch[?then=lease]: it decodes
// the body (readBatch) and hands the Service the decoded batch.
func (s *Server) handleBatch(w http.ResponseWriter, r *http.Request, n string) error {
	id, f, err := rangeCall(r, n)
	if err != nil {
		return err
	}
	then, err := thenLease(r)
	if err != nil {
		return err
	}
	b, done, err := s.readBatch(r.Context(), id, f, r)
	if err != nil {
		// The body may be unread: net/http would read up to 256 KiB of
		// it before answering, waiting on a worker that paused mid-body.
		w.Header().Set("Connection", "close")
		return err
	}
	res, err := func() (api.BatchReply, error) {
		defer done() // the budget is given back before the answer goes out, and after a panic
		return s.svc.storeBatch(r.Context(), id, f, b, then)
	}()
	return s.reply(w, res, err)
}

// smallBatch is the largest body readBatch decodes before the fence is
// checked: decoding it costs less than the check's read, and the store
// checks the fence anyway as it writes.
const smallBatch = 64 << 10

// readBatch decodes the batch body of r (its Content-Length, or -1 when
// unknown): in the binary layout when its Content-Type is api.BatchType,
// else as JSON. The fence is checked before the body is read, so a stale
// holder's body costs nothing, unless the body is small (smallBatch): the
// store's own check as it writes is then the only one, and a small body
// that fails to decode is answered with the lease check's error when the
// lease is lost, so the answer is the same either way. A body over
// Config.MaxBody fails with api.ErrTooLarge. The body's bytes are then
// taken from the batch budget (Config.MaxBatchBytes) until done is
// called: a known length's at once, an unknown length's as they arrive.
// A batch the budget has no room for fails with api.ErrBusy.
// A decoded batch passed edgeframe's checks (edgeframe.ValidateBatch).
func (s *Server) readBatch(ctx context.Context, rangeID int64, f lease.Fence, r *http.Request) (b api.Batch, done func(), err error) {
	size := r.ContentLength
	small := size >= 0 && size <= min(smallBatch, s.cfg.MaxBody)
	defer func() {
		if err != nil {
			s.cfg.Metrics.batch(batchOutcome(err), 0)
		}
	}()
	if !small {
		if err := s.svc.CheckBatch(ctx, rangeID, f); err != nil {
			return api.Batch{}, nil, err
		}
	}
	body, reserved, err := s.budgeted(r)
	if err != nil {
		return api.Batch{}, nil, err
	}
	decode := edgeframe.DecodeBatchSize
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == api.BatchType {
		decode = edgeframe.DecodeBatchBinary
	}
	b, err = decode(body, size, s.cfg.MaxBody)
	if err != nil {
		s.batches.give(*reserved)
		if small {
			if ferr := s.svc.CheckBatch(ctx, rangeID, f); ferr != nil {
				err = ferr // a stale holder hears that first, as it would have
			}
		}
		return api.Batch{}, nil, err
	}
	return b, func() { s.batches.give(*reserved) }, nil
}

// budgeted returns r's body as read under the batch budget, and what it
// holds of it (to give back): a body of known length takes its bytes at
// once, or fails with errBatchBusy; one of unknown length takes them as
// they arrive (budgetReader). A body over Config.MaxBody fails with
// api.ErrTooLarge.
func (s *Server) budgeted(r *http.Request) (io.Reader, *int64, error) {
	size := r.ContentLength
	if size > s.cfg.MaxBody {
		return nil, nil, fmt.Errorf("%w: a batch of at most %d bytes", api.ErrTooLarge, s.cfg.MaxBody)
	}
	reserved := new(int64)
	switch {
	case size < 0:
		return &budgetReader{r: r.Body, b: &s.batches, held: reserved, limit: s.cfg.MaxBody}, reserved, nil
	case !s.batches.take(size):
		return nil, nil, errBatchBusy
	}
	*reserved = size
	return r.Body, reserved, nil
}

// handleBatches answers POST /v1/batches[?then=lease]: the batches of
// several held ranges in one body, each fenced by its own token, so the
// fences are checked as they are stored, after the body is read.
func (s *Server) handleBatches(w http.ResponseWriter, r *http.Request, n string) error {
	then, err := thenLease(r)
	if err != nil {
		return err
	}
	body, reserved, err := s.budgeted(r)
	if err != nil {
		s.cfg.Metrics.batch(batchOutcome(err), 0)
		w.Header().Set("Connection", "close")
		return err
	}
	bs, err := edgeframe.DecodeBatches(body, r.ContentLength, s.cfg.MaxBody, api.MaxBatches)
	if err != nil {
		s.batches.give(*reserved)
		s.cfg.Metrics.batch(batchOutcome(err), 0)
		w.Header().Set("Connection", "close")
		return err
	}
	res, err := func() ([]api.RangeBatchReply, error) {
		defer s.batches.give(*reserved)
		return s.svc.StoreBatches(r.Context(), n, bs, then)
	}()
	return s.reply(w, api.BatchesReply{Results: res}, err)
}

// thenLease reads a batch call's ?then=: true for "lease", false when
// absent.
func thenLease(r *http.Request) (bool, error) {
	then := r.URL.Query().Get("then")
	if then != "" && then != api.ThenLease {
		return false, edgeindex.Invalidf("batch: ?then= takes one value, %q", api.ThenLease)
	}
	return then == api.ThenLease, nil
}

// errBatchBusy is the answer to a batch the budget has no room for.
var errBatchBusy = fmt.Errorf("%w: batches being stored hold the coordinator's batch memory; try again", api.ErrBusy)

// batchOutcome is the metrics' outcome of a batch readBatch refused.
func batchOutcome(err error) string {
	if errors.Is(err, errBatchBusy) {
		return "busy"
	}
	return "refused"
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

// budgetStep is the most a budgetReader reads at once: the most memory a
// body of unknown length holds past the budget, in the moment before its
// read finds no room and it is refused.
const budgetStep = 64 << 10

// budgetReader reads a body of unknown length, taking each read's bytes
// from the budget once read (at most budgetStep a read, MaxBody, limit, in
// all), so that the body holds what it has sent, not MaxBody from its
// first byte: one that stalls halfway holds half. *held counts what it
// holds; a read whose bytes find no room fails with errBatchBusy.
type budgetReader struct {
	r     io.Reader
	b     *budget
	held  *int64
	limit int64
}

func (br *budgetReader) Read(p []byte) (int, error) {
	n := min(int64(len(p)), budgetStep, br.limit-*br.held)
	if n <= 0 && len(p) > 0 {
		// A byte past the limit, unbudgeted: the decoder reads it to
		// tell a body over MaxBody (413) from one that ends there.
		return br.r.Read(p[:1])
	}
	m, err := br.r.Read(p[:n])
	if m > 0 && !br.b.take(int64(m)) {
		return 0, errBatchBusy
	}
	*br.held += int64(m)
	return m, err
}

// maxFinishesBody bounds the body of POST /v1/finishes and POST
// /v1/heartbeats: api.MaxBatches entries of two int64s fit in it with
// room to spare.
const maxFinishesBody = 64 << 10

// handleFinishes answers POST /v1/finishes: several held ranges finished
// in one call, each fenced by its own token.
func (s *Server) handleFinishes(w http.ResponseWriter, r *http.Request, n string) error {
	rs, err := readRanges(r)
	if err != nil {
		return err
	}
	res, err := s.svc.FinishMany(r.Context(), n, rs)
	return s.reply(w, api.FinishesReply{Results: res}, err)
}

// handleHeartbeats answers POST /v1/heartbeats: the leases of several held
// ranges renewed in one call, each fenced by its own token. Its body is
// POST /v1/finishes's.
func (s *Server) handleHeartbeats(w http.ResponseWriter, r *http.Request, n string) error {
	rs, err := readRanges(r)
	if err != nil {
		return err
	}
	res, err := s.svc.HeartbeatMany(r.Context(), n, rs)
	return s.reply(w, api.HeartbeatsReply{Results: res}, err)
}

// readRanges reads the body of a call that names held ranges (POST
// /v1/finishes, /v1/heartbeats), at most maxFinishesBody bytes, and checks
// its entries (checkRanges).
func readRanges(r *http.Request) ([]api.RangeToken, error) {
	var body api.FinishesRequest
	if err := decodeJSON(r, maxFinishesBody, &body); err != nil {
		return nil, err
	}
	return body.Ranges, checkRanges(body.Ranges)
}

// checkRanges checks the entries of a call of many ranges: 1 to
// api.MaxBatches of them, positive ids and tokens, no range twice.
func checkRanges(rs []api.RangeToken) error {
	if len(rs) == 0 || len(rs) > api.MaxBatches {
		return edgeindex.Invalidf("ranges: want 1 to %d entries, not %d", api.MaxBatches, len(rs))
	}
	seen := make(map[int64]bool, len(rs))
	for i, r := range rs {
		switch {
		case r.Range <= 0 || r.Token <= 0:
			return edgeindex.Invalidf("ranges[%d]: range and token must be positive, not %d and %d", i, r.Range, r.Token)
		case seen[r.Range]:
			return edgeindex.Invalidf("ranges[%d]: range %d appears in an earlier entry", i, r.Range)
		}
		seen[r.Range] = true
	}
	return nil
}
