package edge

import (
	"context"
	"time"

	"github.com/edgeindex/edgeindex/api"
)

// maxFinalsBytes bounds the items' bytes of one call of final batches,
// well under the coordinator's body limit (64 MiB by default); a larger
// batch goes alone.
const maxFinalsBytes = 4 << 20

// newFinals returns the gather that posts the final batches of the ranges
// a worker holds at once (POST /v1/batches), asking for the next lease in
// each finished entry's answer when then is set: what PostBatch (or
// PostBatchThenLease) would have returned for each alone.
func newFinals(c *Client, then bool) *gather[api.RangeBatch, api.BatchReply] {
	return &gather[api.RangeBatch, api.BatchReply]{
		send: func(ctx context.Context, bs []api.RangeBatch) ([]answer[api.BatchReply], error) {
			reps, err := c.PostBatches(ctx, bs, then)
			return answers(reps, err, api.RangeBatchReply.Err, func(r api.RangeBatchReply) api.BatchReply { return *r.BatchReply })
		},
		key:     func(rb api.RangeBatch) int64 { return rb.Range },
		size:    func(rb api.RangeBatch) int { return batchBytes(rb.Batch) },
		maxSize: maxFinalsBytes,
	}
}

// newHeartbeats returns the gather that renews the leases of the ranges a
// worker holds at once (POST /v1/heartbeats): what Heartbeat would have
// returned for each alone.
func newHeartbeats(c *Client) *gather[api.RangeToken, time.Time] {
	return &gather[api.RangeToken, time.Time]{
		send: func(ctx context.Context, rs []api.RangeToken) ([]answer[time.Time], error) {
			reps, err := c.HeartbeatMany(ctx, rs)
			return answers(reps, err, api.HeartbeatReply.Err, func(r api.HeartbeatReply) time.Time { return *r.ExpiresAt })
		},
		key: func(r api.RangeToken) int64 { return r.Range },
	}
}

// answers is the answer of each entry of a call of many whose replies
// are reps (err failing them all): the entry's refusal (refused), or else
// its value.
func answers[R, A any](reps []R, err error, refused func(R) error, value func(R) A) ([]answer[A], error) {
	if err != nil {
		return nil, err
	}
	ans := make([]answer[A], len(reps))
	for i, r := range reps {
		if ans[i].err = refused(r); ans[i].err == nil {
			ans[i].a = value(r)
		}
	}
	return ans, nil
}

// batchBytes estimates the bytes of b's items on the wire.
func batchBytes(b api.Batch) int {
	n := 64
	for _, it := range b.Items {
		n += 24 + len(it.Key) + len(it.Value)
	}
	return n
}
