package coordinator

import (
	"context"
	"errors"
	"fmt"
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
	then := r.URL.Query().Get("then")
	if then != "" && then != api.ThenLease {
		return edgeindex.Invalidf("batch: ?then= takes one value, %q", api.ThenLease)
	}
	b, done, err := s.readBatch(r.Context(), id, f, r)
	if err != nil {
		return err
	}
	res, err := func() (api.BatchReply, error) {
		defer done() // the budget is given back before the answer goes out, and after a panic
		return s.svc.storeBatch(r.Context(), id, f, b, then == api.ThenLease)
	}()
	return s.reply(w, res, err)
}

// smallBatch is the largest body readBatch decodes before the fence is
// checked: decoding it costs less than the check's read, and the store
// checks the fence anyway as it writes.
const smallBatch = 64 << 10

// readBatch decodes the batch body of r (its Content-Length, or -1 when
// unknown). The fence is checked before the body is read, so a stale
// holder's body costs nothing, unless the body is small (smallBatch): the
// store's own check as it writes is then the only one, and a small body
// that fails to decode is answered with the lease check's error when the
// lease is lost, so the answer is the same either way. A body over
// Config.MaxBody fails with api.ErrTooLarge. The body's bytes are then
// taken from the batch budget (Config.MaxBatchBytes) until done is
// called, and a batch the budget has no room for fails with api.ErrBusy.
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
	if size > s.cfg.MaxBody {
		return api.Batch{}, nil, fmt.Errorf("%w: a batch of at most %d bytes", api.ErrTooLarge, s.cfg.MaxBody)
	}
	reserved := size
	if size < 0 { // unknown length: the most it may be
		reserved = s.cfg.MaxBody
	}
	if !s.batches.take(reserved) {
		return api.Batch{}, nil, errBatchBusy
	}
	b, err = edgeframe.DecodeBatchSize(r.Body, size, s.cfg.MaxBody)
	if err != nil {
		s.batches.give(reserved)
		if small {
			if ferr := s.svc.CheckBatch(ctx, rangeID, f); ferr != nil {
				err = ferr // a stale holder hears that first, as it would have
			}
		}
		return api.Batch{}, nil, err
	}
	return b, func() { s.batches.give(reserved) }, nil
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
