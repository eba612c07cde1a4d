package sources

import (
	"context"
	"sync"
)

// readyKey is the context key of a fetch's ready hook.
type readyKey struct{}

type readyHook struct {
	once sync.Once
	fn   func() error
	err  error
}

// WithReady returns a context that carries fn for a ChunkSource's Fetch to
// call, through Ready, once it holds what the fetch needs (for package
// nntp's Source, a connection and its slot of the provider's budget) and
// before it starts the fetch's work. An error from fn ends the fetch with
// it. The prefetcher claims a chunk there, so that no claim is held while
// a fetch only waits for a connection.
func WithReady(ctx context.Context, fn func() error) context.Context {
	return context.WithValue(ctx, readyKey{}, &readyHook{fn: fn})
}

// Ready calls the hook WithReady put into ctx, once: a later call returns
// the first call's error. Without a hook it returns nil. A ChunkSource
// that waits for a scarce resource calls it once it holds it; one that
// does not call it is treated as ready when its Fetch returns.
func Ready(ctx context.Context) error {
	h, ok := ctx.Value(readyKey{}).(*readyHook)
	if !ok {
		return nil
	}
	h.once.Do(func() { h.err = h.fn() })
	return h.err
}
