package sources

import (
	"context"
	"errors"

	"github.com/edgeindex/edgeindex/lease"
)

// ErrNoSuchGroup means the source does not carry the group.
var ErrNoSuchGroup = errors.New("no such group")

// ChunkSource is where chunks come from: an NNTP provider, the Synthetic
// generator, or anything else a user plugs in.
type ChunkSource interface {
	// Fetch returns the chunk of span in group: the gzip of the overview
	// lines of the articles present in [span.From, span.To], in article
	// order, each ending in "\n". It returns an error wrapping
	// ErrNoSuchGroup when the source does not carry the group. A source
	// that waits for a scarce resource (a connection) calls Ready(ctx)
	// once it holds it, and ends the fetch with Ready's error.
	Fetch(ctx context.Context, group string, span lease.Span) ([]byte, error)
	// Watermarks returns the group's lowest and highest article numbers, as
	// NNTP GROUP reports them.
	Watermarks(ctx context.Context, group string) (low, high int64, err error)
}

// Funcs adapts two functions to a ChunkSource, the way
// http.HandlerFunc adapts one. A nil WatermarksFunc reports
// ErrNoSuchGroup for every group; a nil FetchFunc does too.
type Funcs struct {
	FetchFunc      func(ctx context.Context, group string, span lease.Span) ([]byte, error)
	WatermarksFunc func(ctx context.Context, group string) (low, high int64, err error)
}

var _ ChunkSource = Funcs{}

// Fetch calls Ready, then s.FetchFunc.
func (s Funcs) Fetch(ctx context.Context, group string, span lease.Span) ([]byte, error) {
	if s.FetchFunc == nil {
		return nil, ErrNoSuchGroup
	}
	if err := Ready(ctx); err != nil {
		return nil, err
	}
	return s.FetchFunc(ctx, group, span)
}

// Watermarks calls s.WatermarksFunc.
func (s Funcs) Watermarks(ctx context.Context, group string) (low, high int64, err error) {
	if s.WatermarksFunc == nil {
		return 0, 0, ErrNoSuchGroup
	}
	return s.WatermarksFunc(ctx, group)
}
