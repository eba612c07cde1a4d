package edge

import (
	"context"
	"sync"

	"github.com/edgeindex/edgeindex/api"
)

// finals posts the final batches of the ranges a worker holds at once,
// those waiting together in one call (POST /v1/batches), the way the
// coordinator's rounds store concurrent calls: a batch alone is sent at
// once, and the batches that come while a call is out make the next one.
// A call carries at most api.MaxBatches entries and about maxFinalsBytes of
// items; a larger batch goes alone.
type finals struct {
	c    *Client
	then bool // ask for the next lease in each finished entry's answer

	mu      sync.Mutex
	queue   []*waitingFinal
	sending bool
	wg      sync.WaitGroup // the sending goroutine
}

// maxFinalsBytes bounds the items' bytes of one call of finals, well under
// the coordinator's body limit (64 MiB by default).
const maxFinalsBytes = 4 << 20

// waitingFinal is one final batch waiting for its call's answer.
type waitingFinal struct {
	ctx  context.Context
	rb   api.RangeBatch
	size int
	rep  api.BatchReply
	err  error
	done chan struct{}
}

// post posts rb with the others waiting and returns its answer: what
// PostBatch (or PostBatchThenLease) would have returned for it alone. A
// caller whose ctx ends stops waiting; its batch may still be stored.
func (f *finals) post(ctx context.Context, rb api.RangeBatch) (api.BatchReply, error) {
	p := &waitingFinal{ctx: ctx, rb: rb, size: batchBytes(rb.Batch), done: make(chan struct{})}
	f.mu.Lock()
	f.queue = append(f.queue, p)
	if !f.sending {
		f.sending = true
		f.wg.Add(1)
		go f.send()
	}
	f.mu.Unlock()
	select {
	case <-p.done:
		return p.rep, p.err
	case <-ctx.Done():
		return api.BatchReply{}, context.Cause(ctx)
	}
}

// wait waits until nothing is being sent.
func (f *finals) wait() { f.wg.Wait() }

// send posts what is queued, a call at a time, until the queue is empty.
func (f *finals) send() {
	defer f.wg.Done()
	for {
		f.mu.Lock()
		call := f.take()
		if len(call) == 0 {
			f.sending = false
			f.mu.Unlock()
			return
		}
		f.mu.Unlock()
		f.call(call)
	}
}

// take removes the next call's batches from the queue (under mu): the
// oldest first, those whose callers still wait, within the call's bounds.
// A second batch of a range already in the call (a coordinator that handed
// one range to two of the worker's chains) waits for the next call: a
// call names a range once.
func (f *finals) take() []*waitingFinal {
	var call, rest []*waitingFinal
	size := 0
	in := map[int64]bool{}
	for i, p := range f.queue {
		if p.ctx.Err() != nil {
			p.err = context.Cause(p.ctx)
			close(p.done)
			continue
		}
		if len(call) > 0 && (len(call) == api.MaxBatches || size+p.size > maxFinalsBytes) {
			rest = append(rest, f.queue[i:]...)
			break
		}
		if in[p.rb.Range] {
			rest = append(rest, p)
			continue
		}
		in[p.rb.Range] = true
		call = append(call, p)
		size += p.size
	}
	f.queue = rest
	return call
}

// call sends one call of batches and answers each. It runs until the
// client's attempts end, under a context that lasts while a caller waits.
func (f *finals) call(call []*waitingFinal) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waiting := len(call)
	var mu sync.Mutex
	for _, p := range call {
		stop := context.AfterFunc(p.ctx, func() {
			mu.Lock()
			defer mu.Unlock()
			if waiting--; waiting == 0 {
				cancel() // nobody waits for the answer any more
			}
		})
		defer stop()
	}
	bs := make([]api.RangeBatch, len(call))
	for i, p := range call {
		bs[i] = p.rb
	}
	reps, err := f.c.PostBatches(ctx, bs, f.then)
	for i, p := range call {
		switch {
		case err != nil:
			p.err = err
		case reps[i].Err() != nil:
			p.err = reps[i].Err()
		default:
			p.rep = *reps[i].BatchReply
		}
		close(p.done)
	}
}

// batchBytes estimates the bytes of b's items on the wire.
func batchBytes(b api.Batch) int {
	n := 64
	for _, it := range b.Items {
		n += 24 + len(it.Key) + len(it.Value)
	}
	return n
}
