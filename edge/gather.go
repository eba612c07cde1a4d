package edge

import (
	"context"
	"sync"

	"github.com/edgeindex/edgeindex/api"
)

// gather sends the requests that a worker's goroutines make at once in one
// call of many (final batches in POST /v1/batches, heartbeats in POST
// /v1/heartbeats), the way the coordinator's rounds store concurrent
// calls: a request alone is sent at once, and those that come while a call
// is out make the next one. A call names a range once (key), and carries
// at most api.MaxBatches requests and, past its first, at most maxSize of
// their sizes (size; nil counts none).
type gather[Q, A any] struct {
	// send sends one call and answers each request of it, in order; an
	// error fails them all.
	send    func(ctx context.Context, qs []Q) ([]answer[A], error)
	key     func(Q) int64
	size    func(Q) int
	maxSize int

	mu      sync.Mutex
	queue   []*waiting[Q, A]
	sending bool
	wg      sync.WaitGroup // the sending goroutine
}

// answer is one request's answer in a call.
type answer[A any] struct {
	a   A
	err error
}

// waiting is one request waiting for its call's answer.
type waiting[Q, A any] struct {
	ctx  context.Context
	q    Q
	size int
	ans  answer[A]
	done chan struct{}
}

// do sends q with the others waiting and returns its answer. A caller
// whose ctx ends stops waiting; its request may still be sent.
func (g *gather[Q, A]) do(ctx context.Context, q Q) (A, error) {
	p := &waiting[Q, A]{ctx: ctx, q: q, done: make(chan struct{})}
	if g.size != nil {
		p.size = g.size(q)
	}
	g.mu.Lock()
	g.queue = append(g.queue, p)
	if !g.sending {
		g.sending = true
		g.wg.Add(1)
		go g.run()
	}
	g.mu.Unlock()
	select {
	case <-p.done:
		return p.ans.a, p.ans.err
	case <-ctx.Done():
		var zero A
		return zero, context.Cause(ctx)
	}
}

// wait waits until nothing is being sent.
func (g *gather[Q, A]) wait() { g.wg.Wait() }

// run sends what is queued, a call at a time, until the queue is empty.
func (g *gather[Q, A]) run() {
	defer g.wg.Done()
	for {
		g.mu.Lock()
		call := g.take()
		if len(call) == 0 {
			g.sending = false
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		g.call(call)
	}
}

// take removes the next call's requests from the queue (under mu): the
// oldest first, those whose callers still wait, within the call's bounds.
// A second request of a range already in the call (a coordinator that
// handed one range to two of the worker's chains) waits for the next
// call: a call names a range once.
func (g *gather[Q, A]) take() []*waiting[Q, A] {
	var call, rest []*waiting[Q, A]
	size := 0
	in := map[int64]bool{}
	for i, p := range g.queue {
		if p.ctx.Err() != nil {
			p.ans.err = context.Cause(p.ctx)
			close(p.done)
			continue
		}
		if len(call) > 0 && (len(call) == api.MaxBatches || size+p.size > g.maxSize) {
			rest = append(rest, g.queue[i:]...)
			break
		}
		k := g.key(p.q)
		if in[k] {
			rest = append(rest, p)
			continue
		}
		in[k] = true
		call = append(call, p)
		size += p.size
	}
	g.queue = rest
	return call
}

// call sends one call and answers each request. It runs until the
// client's attempts end, under a context that lasts while a caller waits.
func (g *gather[Q, A]) call(call []*waiting[Q, A]) {
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
	qs := make([]Q, len(call))
	for i, p := range call {
		qs[i] = p.q
	}
	ans, err := g.send(ctx, qs)
	for i, p := range call {
		if err != nil {
			p.ans.err = err
		} else {
			p.ans = ans[i]
		}
		close(p.done)
	}
}
