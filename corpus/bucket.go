package corpus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/blobstore"
	"github.com/edgeindex/edgeindex/internal/chunkfile"
	"github.com/edgeindex/edgeindex/lease"
)

// DefaultTimeout bounds one call of a Bucket to its store when
// BucketConfig.Timeout is 0.
const DefaultTimeout = time.Minute

// BucketConfig configures a Bucket corpus. The zero value means the
// defaults.
type BucketConfig struct {
	// MaxChunkBytes is the largest chunk Put accepts; 0 means
	// DefaultMaxChunkBytes.
	MaxChunkBytes int64
	// Timeout bounds each call to the store (for Open, until the first
	// byte); 0 means DefaultTimeout.
	Timeout time.Duration
}

// withDefaults returns c with every zero field that has a default set to it.
func (c BucketConfig) withDefaults() BucketConfig {
	if c.MaxChunkBytes == 0 {
		c.MaxChunkBytes = DefaultMaxChunkBytes
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	return c
}

// validate checks a BucketConfig that has its defaults.
func (c BucketConfig) validate() error {
	if c.MaxChunkBytes < 0 {
		return edgeindex.Invalidf("corpus max chunk bytes %d is negative", c.MaxChunkBytes)
	}
	if c.Timeout < 0 {
		return edgeindex.Invalidf("corpus timeout %s is negative", c.Timeout)
	}
	return nil
}

// Bucket is the corpus in a blobstore.Store, an S3 bucket usually
// (blobstore.Sub of the coordinators' store at "corpus"), which several
// coordinators may share. Each chunk is one blob, <escaped group>/<from>-<to>.gz
// (EscapeGroup), written with one atomic Put of its known length. Like
// Disk it keeps no index in memory: every call asks the store, so a chunk
// one coordinator stores is seen by all at once. It is safe for concurrent
// use.
type Bucket struct {
	store blobstore.Store
	cfg   BucketConfig

	gate
}

var _ Store = (*Bucket)(nil)

// OpenBucket opens the corpus in store. It makes no request: a bad store
// shows at the first call.
func OpenBucket(store blobstore.Store, cfg BucketConfig) (*Bucket, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if store == nil {
		return nil, edgeindex.Invalidf("corpus: the store is nil")
	}
	return &Bucket{store: store, cfg: cfg}, nil
}

// BucketKey is the key of the chunk of (group, span) in a Bucket's store.
func BucketKey(group string, span lease.Span) (string, error) {
	g, err := EscapeGroup(group)
	if err != nil {
		return "", err
	}
	if err := chunkfile.CheckSpan(span); err != nil {
		return "", err
	}
	return g + "/" + ChunkName(span), nil
}

// key checks the arguments and the store; the caller holds b.mu for
// reading.
func (b *Bucket) key(group string, span lease.Span) (string, error) {
	if b.closed {
		return "", ErrClosed
	}
	return BucketKey(group, span)
}

func (b *Bucket) call() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), b.cfg.Timeout)
}

// Put implements Store. A chunk over MaxChunkBytes is an error wrapping
// ErrTooLarge.
func (b *Bucket) Put(group string, span lease.Span, data []byte) error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	key, err := b.key(group, span)
	if err != nil {
		return err
	}
	if int64(len(data)) > b.cfg.MaxChunkBytes {
		return fmt.Errorf("corpus: put %q %s: %d bytes: %w (at most %d)", group, ChunkName(span), len(data), ErrTooLarge, b.cfg.MaxChunkBytes)
	}
	ctx, cancel := b.call()
	defer cancel()
	if _, err := b.store.Put(ctx, key, bytes.NewReader(data), int64(len(data))); err != nil {
		return fmt.Errorf("corpus: put %q %s: %w", group, ChunkName(span), err)
	}
	return nil
}

// Has implements Store: one Stat. A store that cannot answer answers
// false.
func (b *Bucket) Has(group string, span lease.Span) bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	key, err := b.key(group, span)
	if err != nil {
		return false
	}
	ctx, cancel := b.call()
	defer cancel()
	_, err = b.store.Stat(ctx, key)
	return err == nil
}

// Read implements Store.
func (b *Bucket) Read(group string, span lease.Span) ([]byte, error) {
	return chunkfile.ReadAll(b.Open(group, span))
}

// Open implements Store. The reader streams the blob; Timeout bounds the
// wait for its first byte, not the reading, and Close does not cut it.
func (b *Bucket) Open(group string, span lease.Span) (io.ReadCloser, int64, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	key, err := b.key(group, span)
	if err != nil {
		return nil, 0, err
	}
	rc, size, err := blobstore.OpenWithin(b.store, key, b.cfg.Timeout)
	if errors.Is(err, blobstore.ErrNotFound) {
		return nil, 0, fmt.Errorf("corpus: group %q span %d-%d: %w", group, span.From, span.To, ErrNotFound)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("corpus: open %q %s: %w", group, ChunkName(span), err)
	}
	return rc, size, nil
}

// Delete implements Store.
func (b *Bucket) Delete(group string, span lease.Span) error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	key, err := b.key(group, span)
	if err != nil {
		return err
	}
	ctx, cancel := b.call()
	defer cancel()
	if err := b.store.Delete(ctx, key); err != nil {
		return fmt.Errorf("corpus: delete %q %s: %w", group, ChunkName(span), err)
	}
	return nil
}

// Spans implements Store: one List of the group's prefix (a request per
// 1000 chunks).
func (b *Bucket) Spans(group string) ([]lease.Span, error) {
	g, err := b.enterGroup(group)
	if err != nil {
		return nil, err
	}
	defer b.leave()
	ctx, cancel := b.call()
	defer cancel()
	spans := []lease.Span{}
	err = b.store.List(ctx, g+"/", func(info blobstore.Info) error {
		name := strings.TrimPrefix(info.Key, g+"/")
		if sp, ok := chunkfile.ParseName(name); ok {
			spans = append(spans, sp)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("corpus: spans %q: %w", group, err)
	}
	return sortSpans(spans), nil
}
