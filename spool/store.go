package spool

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/corpus"
	"github.com/edgeindex/edgeindex/internal/chunkfile"
	"github.com/edgeindex/edgeindex/lease"
)

// Sentinel errors of the spools.
var (
	// ErrNotFound means the spool holds no such chunk. It wraps
	// edgeindex.ErrNotFound, so errors.Is matches either.
	ErrNotFound = fmt.Errorf("chunk %w", edgeindex.ErrNotFound)
	// ErrClosed means the store was closed.
	ErrClosed = errors.New("spool closed")
)

// TempPrefix begins the name of every file a store is still writing. Such a
// file is never read; Open removes the ones a crash left behind.
const TempPrefix = chunkfile.TempPrefix

// DefaultMaxBytes is the spool's size bound when Config.MaxBytes is 0.
const DefaultMaxBytes int64 = 2 << 30

// Store is a spool of chunks keyed by range and span. Disk implements it;
// spooltest.Run checks any implementation.
//
// Arguments: a span must have 0 <= From <= To, or the call returns an error
// wrapping edgeindex.ErrInvalid (Has returns false). After Close every call
// that can fail returns ErrClosed, and Has returns false.
type Store interface {
	// Put stores data as the chunk of (rangeID, span), replacing any
	// previous one, atomically: a reader sees the old chunk or the new one,
	// never half of one. A crash of the machine may lose a chunk (a spool
	// is a cache of the source: a lost chunk is fetched again) but never
	// leaves half of one to be read. Put never blocks on the size
	// bound; callers call WaitRoom first. A Put that overlaps a Drop of
	// its range is ordered before the Drop: it returns nil and the chunk
	// is gone with the range.
	Put(rangeID int64, span lease.Span, data []byte) error
	// Has reports whether the chunk is stored.
	Has(rangeID int64, span lease.Span) bool
	// Read returns the chunk, or an error wrapping ErrNotFound.
	Read(rangeID int64, span lease.Span) ([]byte, error)
	// Open returns the chunk for streaming and its size, or an error
	// wrapping ErrNotFound. The caller closes it.
	Open(rangeID int64, span lease.Span) (io.ReadCloser, int64, error)
	// Drop removes every chunk of the range. Dropping a range with no
	// chunk is not an error.
	Drop(rangeID int64) error
	// DropChunk removes one chunk, e.g. one reported corrupt, so it is
	// fetched again. Dropping a missing chunk is not an error.
	DropChunk(rangeID int64, span lease.Span) error
	// Size is the total size in bytes of the stored chunks.
	Size() int64
	// MaxBytes is the size bound.
	MaxBytes() int64
	// WaitRoom returns nil once Size()+n <= MaxBytes(); it waits for Drop
	// or DropChunk to free room, or returns ctx's error. It reserves
	// nothing: concurrent callers may overshoot the bound together. An n
	// below 0 or above MaxBytes() is an error wrapping edgeindex.ErrInvalid.
	WaitRoom(ctx context.Context, n int64) error
	// Notify returns a channel that is closed at the next Put (or Close).
	// Take it before checking Has, then wait on it, to miss no chunk.
	Notify() <-chan struct{}
	// WaitChunk returns nil once the chunk is stored, or ctx's error.
	WaitChunk(ctx context.Context, rangeID int64, span lease.Span) error
	// Close wakes every waiter with ErrClosed. It is safe to call twice.
	Close() error
}

// InCorpus reports whether the chunks of r live in the corpus c: a capture
// range's do when a corpus is configured; every other range's live in the
// spool. Prefetching, dropping and serving a chunk all ask it.
func InCorpus(r lease.Range, c corpus.Store) bool { return r.Capture && c != nil }

// setDefault sets *v to def when *v is the zero value.
func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}
