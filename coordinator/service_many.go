package coordinator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/lease"
)

// GrantMany grants node up to n ranges, as n calls of Grant made at once
// would (each its own grant, in the store's rounds: concurrent grants
// share a statement and a commit). It returns fewer, or none, when there
// is less work; a grant that fails is logged when others were granted,
// and its error returned when none was.
func (s *Service) GrantMany(ctx context.Context, node string, n int) ([]api.Lease, error) {
	if n < 1 || n > api.MaxLeases {
		return nil, edgeindex.Invalidf("max %d: want 1 to %d", n, api.MaxLeases)
	}
	leases := make([]api.Lease, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { leases[i], errs[i] = s.Grant(ctx, node) })
	}
	wg.Wait()
	out := leases[:0]
	var failed error
	for i, err := range errs {
		switch {
		case err == nil:
			out = append(out, leases[i])
		case !errors.Is(err, lease.ErrNoWork) && failed == nil:
			failed = err
		}
	}
	if failed != nil {
		if len(out) == 0 {
			return nil, failed
		}
		s.cfg.Logger.Warn("grant of several leases: one failed; answering the others", "node", node, "err", failed)
	}
	return out, nil
}

// StoreBatches stores the batches of several ranges that node holds, as
// StoreBatch (or StoreBatchThenLease, with then) called for each at once
// would: each under its own fence, decided on its own, the concurrent ones
// stored in the store's rounds. An entry refused as that call would
// refuse it (a lost lease, a conflict, a batch past its range) gets its
// error in its reply; the others are stored. A failure of the store (a 5xx)
// fails the call: entries stored before it are answered as duplicates
// when the call is sent again. The entries have passed edgeframe's checks
// (edgeframe.DecodeBatches): no range twice.
func (s *Service) StoreBatches(ctx context.Context, node string, bs []api.RangeBatch, then bool) ([]api.RangeBatchReply, error) {
	out := make([]api.RangeBatchReply, len(bs))
	errs := make([]error, len(bs))
	var wg sync.WaitGroup
	for i, rb := range bs {
		wg.Go(func() {
			rep, err := s.storeBatch(ctx, rb.Range, lease.Fence{Node: node, Token: rb.Token}, rb.Batch, then)
			out[i], errs[i] = api.RangeBatchReply{Range: rb.Range, BatchReply: &rep}, err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err == nil {
			continue
		}
		status, code := api.StatusOf(err)
		if status >= http.StatusInternalServerError {
			s.giveBackHandedOver(ctx, node, out)
			return nil, fmt.Errorf("batch of range %d: %w", bs[i].Range, err)
		}
		out[i] = api.RangeBatchReply{Range: bs[i].Range, Error: clipMessage(err.Error()), Code: code}
	}
	return out, nil
}

// giveBackHandedOver releases the leases the entries' answers would have
// handed over, when the call fails and they will not reach the worker.
func (s *Service) giveBackHandedOver(ctx context.Context, node string, out []api.RangeBatchReply) {
	for _, r := range out {
		if r.BatchReply == nil || r.Lease == nil {
			continue
		}
		l := r.Lease
		if err := s.Release(context.WithoutCancel(ctx), l.Range.ID, lease.Fence{Node: node, Token: l.Token}); err != nil {
			s.cfg.Logger.Warn("giving back a lease of a failed call", "range", l.Range.ID, "err", err)
		}
	}
}
