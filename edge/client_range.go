package edge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/edgeframe"
)

// Lease asks for a range of an unordered group (POST /v1/lease). It returns
// false, with no error, when there is nothing to do (204). It is not retried.
func (c *Client) Lease(ctx context.Context) (api.Lease, bool, error) {
	var l api.Lease
	ok, err := c.json(ctx, &call{method: http.MethodPost, path: "/v1/lease"}, &l)
	if err != nil || !ok {
		return api.Lease{}, false, err
	}
	if err := checkLease(l); err != nil {
		return api.Lease{}, false, fmt.Errorf("edge: POST /v1/lease: %w", err)
	}
	return l, true, nil
}

// PostBatch posts a batch of results (POST /v1/ranges/{id}/batch), in the
// binary layout (api.BatchType) or, to a coordinator that predates it, as
// JSON. A batch already stored is answered with Result.Duplicate set and
// no error. A bad batch gets an error wrapping edgeindex.ErrInvalid and is
// not stored: its head and keys are checked before anything is sent, its
// values by the coordinator (and then by the JSON encoder here, which
// names the value).
func (c *Client) PostBatch(ctx context.Context, rangeID, token int64, b api.Batch) (api.BatchReply, error) {
	return c.postBatch(ctx, rangeID, token, b, nil)
}

// PostBatchThenLease is PostBatch asking (?then=lease) that, when the batch
// finishes its range (a final batch: Done), the answer carry the node's
// next lease (BatchReply.Lease), as Lease would grant it: a cycle of lease,
// batch and finish then costs one call. Lease is nil when there is no work,
// or the coordinator predates the query (it ignores it); the caller then
// calls Lease. A lease handed over is the caller's to work or release. Like
// every batch the call is retried; a retry whose first answer was lost
// leaves the range that answer handed over to expire, as a lost answer of
// Lease does.
func (c *Client) PostBatchThenLease(ctx context.Context, rangeID, token int64, b api.Batch) (api.BatchReply, error) {
	res, err := c.postBatch(ctx, rangeID, token, b, url.Values{"then": {api.ThenLease}})
	if err == nil {
		res.Lease = c.handedOver(res.Lease)
	}
	return res, err
}

// handedOver returns l, a lease handed over in a batch's answer, or nil
// when there is none or it cannot be worked: the batch is stored, so only
// the lease is dropped (it expires), and logged.
func (c *Client) handedOver(l *api.Lease) *api.Lease {
	if l == nil {
		return nil
	}
	if err := checkLease(*l); err != nil {
		c.cfg.Logger.Warn("edge: dropping a lease handed over that cannot be worked", "err", err)
		return nil
	}
	return l
}

// postBatch sends b in the binary layout (api.BatchType), whose values
// it need not check or encode, unless the coordinator has refused that
// layout before. A coordinator that predates the layout reads the body as
// JSON and refuses it (400 invalid), as it refuses a bad batch, so a 400
// is answered by sending b again as JSON: MarshalBatch then refuses a bad
// value here, and an old coordinator stores the batch, after which every
// batch goes as JSON. Nothing is stored by a refused body.
func (c *Client) postBatch(ctx context.Context, rangeID, token int64, b api.Batch, q url.Values) (api.BatchReply, error) {
	if !c.jsonBatches.Load() {
		if first, err := edgeframe.NewBatchBinaryReader(b); err == nil {
			cl := c.rangeCall(http.MethodPost, rangeID, "batch", token)
			cl.newBody, cl.ctype = func() (io.Reader, int64, error) {
				// The first attempt sends the reader that checked b; each
				// later one a reader of its own.
				r := first
				first = nil
				if r == nil {
					var err error
					if r, err = edgeframe.NewBatchBinaryReader(b); err != nil {
						return nil, 0, err
					}
				}
				return r, r.Size(), nil
			}, api.BatchType
			res, err := c.sendBatch(ctx, cl, q)
			if !errors.Is(err, edgeindex.ErrInvalid) {
				return res, err
			}
			res, jerr := c.postJSON(ctx, rangeID, token, b, q)
			if jerr == nil && !c.jsonBatches.Swap(true) {
				c.cfg.Logger.Warn("edge: the coordinator refused a binary batch and stored it as JSON; sending JSON from now on", "err", err)
			}
			return res, jerr
		}
	}
	return c.postJSON(ctx, rangeID, token, b, q)
}

// postJSON sends b as JSON.
func (c *Client) postJSON(ctx context.Context, rangeID, token int64, b api.Batch, q url.Values) (api.BatchReply, error) {
	body, err := edgeframe.MarshalBatch(b)
	if err != nil {
		return api.BatchReply{}, fmt.Errorf("edge: batch for range %d: %w: %w", rangeID, edgeindex.ErrInvalid, err)
	}
	cl := c.rangeCall(http.MethodPost, rangeID, "batch", token)
	cl.body, cl.ctype = body, "application/json"
	return c.sendBatch(ctx, cl, q)
}

// sendBatch posts cl, a batch call with its body, with the query q.
func (c *Client) sendBatch(ctx context.Context, cl *call, q url.Values) (api.BatchReply, error) {
	cl.retry, cl.query = true, q
	var res api.BatchReply
	if _, err := c.json(ctx, cl, &res); err != nil {
		return api.BatchReply{}, err
	}
	return res, nil
}

// Heartbeat renews a range lease (POST /v1/ranges/{id}/heartbeat) and
// returns its new expiry.
func (c *Client) Heartbeat(ctx context.Context, rangeID, token int64) (time.Time, error) {
	cl := c.rangeCall(http.MethodPost, rangeID, "heartbeat", token)
	cl.retry = true
	var ans api.Expiry
	_, err := c.json(ctx, cl, &ans)
	return ans.ExpiresAt, err
}

// Finish marks a range done (POST /v1/ranges/{id}/finish). It fails with
// edgeindex.ErrConflict when the stored batches do not reach the range's end.
func (c *Client) Finish(ctx context.Context, rangeID, token int64) error {
	cl := c.rangeCall(http.MethodPost, rangeID, "finish", token)
	cl.retry = true
	_, err := c.json(ctx, cl, nil)
	return err
}

// Release gives a range back as pending (POST /v1/ranges/{id}/release).
func (c *Client) Release(ctx context.Context, rangeID, token int64) error {
	cl := c.rangeCall(http.MethodPost, rangeID, "release", token)
	cl.retry = true
	_, err := c.json(ctx, cl, nil)
	return err
}

// Corrupt reports that the chunk starting at from does not inflate or parse
// (POST /v1/ranges/{id}/corrupt). The range is no longer held afterwards; it
// returns the range's new state (pending, or failed at the coordinator's
// maximum attempts) and its attempts.
func (c *Client) Corrupt(ctx context.Context, rangeID, token, from int64) (api.State, int, error) {
	cl := c.rangeCall(http.MethodPost, rangeID, "corrupt", token)
	cl.body, _ = json.Marshal(api.CorruptRequest{From: &from})
	cl.ctype, cl.retry = "application/json", true
	var ans api.CorruptReply
	if _, err := c.json(ctx, cl, &ans); err != nil {
		return "", 0, err
	}
	return ans.State, ans.Attempts, nil
}

func (c *Client) rangeCall(method string, rangeID int64, verb string, token int64) *call {
	return &call{
		method: method, path: "/v1/ranges/" + strconv.FormatInt(rangeID, 10) + "/" + verb,
		token: token, hasToken: true,
	}
}

// checkLease refuses a granted lease that cannot be worked.
func checkLease(l api.Lease) error {
	r := l.Range
	if r.Start > r.End || r.Next < r.Start || r.Next > r.End+1 {
		return fmt.Errorf("%w: range %d has start %d, end %d and next %d", ErrProtocol, r.ID, r.Start, r.End, r.Next)
	}
	return nil
}

// LeaseMany asks for up to max ranges of unordered groups in one call
// (POST /v1/leases?max=N), each a lease as Lease grants it. It returns none,
// with no error, when there is nothing to do. It is not retried, as Lease
// is not. A lease that cannot be worked is dropped (it expires).
//
// A coordinator that predates the call answers 404: the client then asks it
// for one lease with Lease, now and from then on.
func (c *Client) LeaseMany(ctx context.Context, max int) ([]api.Lease, error) {
	if c.single.Load() {
		return c.leaseOne(ctx)
	}
	cl := &call{method: http.MethodPost, path: "/v1/leases", query: url.Values{"max": {strconv.Itoa(max)}}}
	var ans api.LeasesReply
	if _, err := c.json(ctx, cl, &ans); err != nil {
		if c.predates(err) {
			return c.leaseOne(ctx)
		}
		return nil, err
	}
	if len(ans.Leases) > max {
		return nil, fmt.Errorf("edge: POST /v1/leases: %w: %d leases for a max of %d", ErrProtocol, len(ans.Leases), max)
	}
	seen := make(map[int64]bool, len(ans.Leases))
	for _, l := range ans.Leases {
		if seen[l.Range.ID] {
			// Worked twice at once, its batches would refuse each other.
			return nil, fmt.Errorf("edge: POST /v1/leases: %w: range %d granted twice", ErrProtocol, l.Range.ID)
		}
		seen[l.Range.ID] = true
	}
	return c.workable(ans.Leases), nil
}

// leaseOne is LeaseMany of a coordinator that predates it: Lease.
func (c *Client) leaseOne(ctx context.Context) ([]api.Lease, error) {
	l, ok, err := c.Lease(ctx)
	if err != nil || !ok {
		return nil, err
	}
	return []api.Lease{l}, nil
}

// predates reports whether err is the 404 of a route the coordinator does
// not know (the many-range calls, on a coordinator older than them), and
// if so makes the client use the single-range calls from then on.
func (c *Client) predates(err error) bool {
	if !errors.Is(err, edgeindex.ErrNotFound) {
		return false
	}
	if !c.single.Swap(true) {
		c.cfg.Logger.Warn("edge: the coordinator predates the many-range calls; using one range a call", "err", err)
	}
	return true
}

// workable drops the leases that cannot be worked, logging each.
func (c *Client) workable(ls []api.Lease) []api.Lease {
	out := ls[:0]
	for _, l := range ls {
		if err := checkLease(l); err != nil {
			c.cfg.Logger.Warn("edge: dropping a lease that cannot be worked", "err", err)
			continue
		}
		out = append(out, l)
	}
	return out
}

// PostBatches posts the batches of several held ranges in one call (POST
// /v1/batches, with ?then=lease when then is set: each entry that finishes
// its range may carry the node's next lease). The answer has one reply an
// entry, in their order; an entry the coordinator refused (a lost lease, a
// conflict) says so in its reply (RangeBatchReply.Err), and the others are
// stored. The call is retried, as PostBatch is: a retry of stored entries
// is answered as duplicates. A handed-over lease that cannot be worked is
// dropped (it expires).
//
// A coordinator that predates the call answers 404: the client then posts
// each batch with PostBatch (or PostBatchThenLease), now and from then on.
func (c *Client) PostBatches(ctx context.Context, bs []api.RangeBatch, then bool) ([]api.RangeBatchReply, error) {
	if c.single.Load() {
		return c.postEach(ctx, bs, then)
	}
	body, err := edgeframe.MarshalBatches(bs)
	if err != nil {
		return nil, fmt.Errorf("edge: batches: %w: %w", edgeindex.ErrInvalid, err)
	}
	cl := &call{method: http.MethodPost, path: "/v1/batches", body: body, ctype: "application/json", retry: true}
	if then {
		cl.query = url.Values{"then": {api.ThenLease}}
	}
	var ans api.BatchesReply
	if _, err := c.json(ctx, cl, &ans); err != nil {
		if c.predates(err) {
			return c.postEach(ctx, bs, then)
		}
		return nil, err
	}
	if len(ans.Results) != len(bs) {
		return nil, fmt.Errorf("edge: POST /v1/batches: %w: %d replies for %d batches", ErrProtocol, len(ans.Results), len(bs))
	}
	for i, r := range ans.Results {
		if r.Range != bs[i].Range || (r.BatchReply == nil && r.Err() == nil) {
			return nil, fmt.Errorf("edge: POST /v1/batches: %w: reply %d is not range %d's", ErrProtocol, i, bs[i].Range)
		}
		if r.BatchReply != nil {
			r.Lease = c.handedOver(r.Lease)
		}
	}
	return ans.Results, nil
}

// postEach is PostBatches of a coordinator that predates it: one call a
// batch, an entry refused as the call was (a 4xx) answered with its error,
// the first other error failing the whole.
func (c *Client) postEach(ctx context.Context, bs []api.RangeBatch, then bool) ([]api.RangeBatchReply, error) {
	out := make([]api.RangeBatchReply, len(bs))
	for i, rb := range bs {
		post := c.PostBatch
		if then {
			post = c.PostBatchThenLease
		}
		rep, err := post(ctx, rb.Range, rb.Token, rb.Batch)
		out[i].Range = rb.Range
		if refusedEntry(err, &out[i].Error, &out[i].Code) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[i].BatchReply = &rep
	}
	return out, nil
}

// HeartbeatMany renews the leases of several held ranges in one call (POST
// /v1/heartbeats). The answer has one reply a range, in their order: its
// new expiry, or why it was refused (HeartbeatReply.Err). It is retried as
// Heartbeat is.
//
// A coordinator that predates the call answers 404: the client then
// renews each lease with Heartbeat, now and from then on.
func (c *Client) HeartbeatMany(ctx context.Context, rs []api.RangeToken) ([]api.HeartbeatReply, error) {
	if c.single.Load() {
		return c.heartbeatEach(ctx, rs)
	}
	body, err := json.Marshal(api.FinishesRequest{Ranges: rs})
	if err != nil {
		return nil, fmt.Errorf("edge: heartbeats: %w", err)
	}
	cl := &call{method: http.MethodPost, path: "/v1/heartbeats", body: body, ctype: "application/json", retry: true}
	var ans api.HeartbeatsReply
	if _, err := c.json(ctx, cl, &ans); err != nil {
		if c.predates(err) {
			return c.heartbeatEach(ctx, rs)
		}
		return nil, err
	}
	if err := checkReplies("/v1/heartbeats", rs, ans.Results, func(r api.HeartbeatReply) int64 { return r.Range }); err != nil {
		return nil, err
	}
	for i, r := range ans.Results {
		if r.Code == "" && r.Error == "" && r.ExpiresAt == nil {
			return nil, fmt.Errorf("edge: POST /v1/heartbeats: %w: reply %d has neither an expiry nor an error", ErrProtocol, i)
		}
	}
	return ans.Results, nil
}

// refusedEntry reports whether err, the answer of a single-range call
// standing for an entry of a call of many, is the coordinator's refusal
// of that range (a 4xx), which the entry's reply then carries as msg and
// code; any other error fails the whole call.
func refusedEntry(err error, msg, code *string) bool {
	herr, ok := errors.AsType[*HTTPError](err)
	if !ok || herr.Status >= http.StatusInternalServerError {
		return false
	}
	*msg, *code = herr.Message, herr.Code
	return true
}

// heartbeatEach is HeartbeatMany of a coordinator that predates it: one
// call a range, as postEach posts.
func (c *Client) heartbeatEach(ctx context.Context, rs []api.RangeToken) ([]api.HeartbeatReply, error) {
	out := make([]api.HeartbeatReply, len(rs))
	for i, r := range rs {
		exp, err := c.Heartbeat(ctx, r.Range, r.Token)
		out[i].Range = r.Range
		if refusedEntry(err, &out[i].Error, &out[i].Code) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[i].ExpiresAt = &exp
	}
	return out, nil
}

// checkReplies checks the answer of a call of many ranges to path: one
// reply a range of rs, in their order.
func checkReplies[R any](path string, rs []api.RangeToken, replies []R, rangeOf func(R) int64) error {
	if len(replies) != len(rs) {
		return fmt.Errorf("edge: POST %s: %w: %d replies for %d ranges", path, ErrProtocol, len(replies), len(rs))
	}
	for i, r := range replies {
		if rangeOf(r) != rs[i].Range {
			return fmt.Errorf("edge: POST %s: %w: reply %d is not range %d's", path, ErrProtocol, i, rs[i].Range)
		}
	}
	return nil
}

// FinishMany finishes several held ranges in one call (POST /v1/finishes).
// The answer has one reply a range, in their order; a range the
// coordinator refused says so in its reply (RangeReply.Err). It is retried
// as Finish is: a range a first attempt finished is then refused as a lost
// lease.
func (c *Client) FinishMany(ctx context.Context, rs []api.RangeToken) ([]api.RangeReply, error) {
	body, err := json.Marshal(api.FinishesRequest{Ranges: rs})
	if err != nil {
		return nil, fmt.Errorf("edge: finishes: %w", err)
	}
	cl := &call{method: http.MethodPost, path: "/v1/finishes", body: body, ctype: "application/json", retry: true}
	var ans api.FinishesReply
	if _, err := c.json(ctx, cl, &ans); err != nil {
		return nil, err
	}
	if err := checkReplies("/v1/finishes", rs, ans.Results, func(r api.RangeReply) int64 { return r.Range }); err != nil {
		return nil, err
	}
	return ans.Results, nil
}
