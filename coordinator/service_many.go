package coordinator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/lease"
)

// GrantMany grants node up to n ranges, as n calls of Grant made at once
// would, in one round of the store's (Store.GrantMany). It returns fewer,
// or none, when there is less work.
func (s *Service) GrantMany(ctx context.Context, node string, n int) ([]api.Lease, error) {
	if n < 1 || n > api.MaxLeases {
		return nil, edgeindex.Invalidf("max %d: want 1 to %d", n, api.MaxLeases)
	}
	ls, err := s.cfg.Store.GrantMany(ctx, node, n, s.cfg.LeaseTTL)
	if err != nil {
		return nil, err
	}
	for range ls {
		s.cfg.Metrics.leased()
	}
	return ls, nil
}

// StoreBatches stores the batches of several ranges that node holds, as
// StoreBatch (or StoreBatchThenLease, with then) called for each at once
// would: in one round of the store's (Store.PutMany), each under its own
// fence and decided on its own. An entry refused as that call would refuse
// it (a lost lease, a conflict, a batch past its range) gets its error in
// its reply; the others are stored. A failure of the store (a 5xx) fails
// the call: entries stored before it are answered as duplicates when the
// call is sent again. The entries have passed edgeframe's checks
// (edgeframe.DecodeBatches): no range twice.
func (s *Service) StoreBatches(ctx context.Context, node string, bs []api.RangeBatch, then bool) ([]api.RangeBatchReply, error) {
	entries := make([]batch.Entry, len(bs))
	for i, rb := range bs {
		entries[i] = batch.Entry{RangeID: rb.Range, Fence: lease.Fence{Node: node, Token: rb.Token}, Batch: rb.Batch}
	}
	var ttl time.Duration
	if then {
		ttl = s.cfg.LeaseTTL
	}
	answers, err := s.cfg.Store.PutMany(ctx, entries, ttl)
	if err != nil {
		return nil, fmt.Errorf("batches: %w", err)
	}
	out := make([]api.RangeBatchReply, len(bs))
	errs := make([]error, len(bs))
	var grant []int // the entries that finished a range, their next lease not tried
	for i, a := range answers {
		// The grants not tried are made below, together, not one by one.
		rep, err := s.stored(ctx, bs[i].Range, entries[i].Fence, bs[i].Batch, false,
			api.BatchReply{Result: a.Result, Lease: a.Lease}, a.Tried, a.Err)
		out[i], errs[i] = api.RangeBatchReply{Range: bs[i].Range, BatchReply: &rep}, err
		if then && err == nil && rep.Done && !a.Tried {
			grant = append(grant, i)
		}
	}
	if len(grant) > 0 {
		ls, err := s.GrantMany(ctx, node, len(grant))
		if err != nil && !errors.Is(err, lease.ErrNoWork) {
			s.cfg.Logger.Warn("leases after final batches", "node", node, "err", err)
		}
		for j, l := range ls {
			out[grant[j]].Lease = &l
		}
	}
	for i, err := range errs {
		if err == nil {
			continue
		}
		code, msg, failed := refusal(err)
		if failed {
			s.giveBackHandedOver(ctx, node, out)
			return nil, fmt.Errorf("batch of range %d: %w", bs[i].Range, err)
		}
		out[i] = api.RangeBatchReply{Range: bs[i].Range, Error: msg, Code: code}
	}
	return out, nil
}

// refusal is what an entry of a call of many says for err, the error its
// own call would have had: its code and sentence, or failed when err is a
// failure of the coordinator (a 5xx), which fails the whole call.
func refusal(err error) (code, msg string, failed bool) {
	status, code := api.StatusOf(err)
	if status >= http.StatusInternalServerError {
		return "", "", true
	}
	return code, clipMessage(err.Error()), false
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

// FinishMany finishes several ranges node holds, as Finish called for each
// at once would, in one round of the store's (Store.FinishMany): a range
// refused (a lost lease, batches short of its end) gets its error in its
// reply, the others are finished and their spool chunks dropped. A failure
// of the store (a 5xx) fails the call; finishing again what it finished is
// refused as a lost lease, as a retried Finish is. The ranges are
// distinct.
func (s *Service) FinishMany(ctx context.Context, node string, rs []api.RangeToken) ([]api.RangeReply, error) {
	held := make([]lease.Held, len(rs))
	for i, r := range rs {
		held[i] = lease.Held{RangeID: r.Range, Fence: lease.Fence{Node: node, Token: r.Token}}
	}
	errs, err := s.cfg.Store.FinishMany(ctx, held)
	if err != nil {
		return nil, fmt.Errorf("finishes: %w", err)
	}
	out := make([]api.RangeReply, len(rs))
	for i, err := range errs {
		out[i] = api.RangeReply{Range: rs[i].Range, OK: err == nil}
		if err == nil {
			s.dropSpool(rs[i].Range)
			continue
		}
		code, msg, failed := refusal(err)
		if failed {
			return nil, fmt.Errorf("finish of range %d: %w", rs[i].Range, err)
		}
		out[i].Error, out[i].Code = msg, code
	}
	return out, nil
}

// HeartbeatMany renews the leases of several ranges node holds, as
// Heartbeat called for each at once would: the calls run together, so the
// store renews them in a round or two (its heartbeat rounds group
// concurrent calls). A range refused (a lost lease, an unknown range) gets
// its error in its reply, the others their new expiry. A failure of the
// store (a 5xx) fails the call, which is safe to send again. The ranges
// are distinct and at most api.MaxBatches.
func (s *Service) HeartbeatMany(ctx context.Context, node string, rs []api.RangeToken) ([]api.HeartbeatReply, error) {
	out := make([]api.HeartbeatReply, len(rs))
	errs := make([]error, len(rs))
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Go(func() {
			exp, err := s.Heartbeat(ctx, r.Range, lease.Fence{Node: node, Token: r.Token})
			out[i], errs[i] = api.HeartbeatReply{Range: r.Range, ExpiresAt: &exp}, err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err == nil {
			continue
		}
		code, msg, failed := refusal(err)
		if failed {
			return nil, fmt.Errorf("heartbeat of range %d: %w", rs[i].Range, err)
		}
		out[i] = api.HeartbeatReply{Range: rs[i].Range, Error: msg, Code: code}
	}
	return out, nil
}
