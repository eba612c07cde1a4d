package corpus

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/internal/chunkfile"

	"github.com/edgeindex/edgeindex/lease"
)

// Sentinel errors of the corpus.
var (
	// ErrNotFound means the corpus holds no such chunk. It wraps
	// edgeindex.ErrNotFound, so errors.Is matches either.
	ErrNotFound = fmt.Errorf("chunk %w", edgeindex.ErrNotFound)
	// ErrTooLarge means a chunk is over Config.MaxChunkBytes.
	ErrTooLarge = errors.New("chunk too large")
	// ErrClosed means the store was closed.
	ErrClosed = errors.New("corpus closed")
)

// TempPrefix begins the name of every file a store is still writing. Such a
// file is never read; Open removes the ones a crash left behind.
const TempPrefix = chunkfile.TempPrefix

// DefaultMaxChunkBytes is the largest chunk when Config.MaxChunkBytes is 0:
// the largest frame payload a stream decoder accepts by default.
const DefaultMaxChunkBytes int64 = 64 << 20

// Store is the durable archive of chunks per group and span. Disk
// implements it; corpustest.Run checks any implementation.
//
// Arguments: a group must not be empty and a span must have
// 0 <= From <= To, or the call returns an error wrapping edgeindex.ErrInvalid
// (Has returns false). After Close every call that can fail returns
// ErrClosed, and Has returns false.
type Store interface {
	// Put stores data as the chunk of (group, span), replacing any previous
	// one, atomically: a reader sees the old chunk or the new one, and a
	// crash leaves one or the other.
	Put(group string, span lease.Span, data []byte) error
	// Has reports whether the chunk is stored.
	Has(group string, span lease.Span) bool
	// Read returns the chunk, or an error wrapping ErrNotFound.
	Read(group string, span lease.Span) ([]byte, error)
	// Open returns the chunk for streaming and its size, or an error
	// wrapping ErrNotFound. The caller closes it.
	Open(group string, span lease.Span) (io.ReadCloser, int64, error)
	// Delete removes a chunk, e.g. one reported corrupt, so it is fetched
	// again. Deleting a missing chunk is not an error.
	Delete(group string, span lease.Span) error
	// Spans lists the group's stored chunks in ascending order of From
	// (then To); a group with none has an empty list.
	Spans(group string) ([]lease.Span, error)
	// Close closes the store; it is safe to call twice.
	Close() error
}

// Disk is the corpus on disk. It keeps no index in memory: every call asks
// the file system, so it is always what a restart would find. It is safe
// for concurrent use.
type Disk struct {
	dir string
	cfg Config

	gate
}

var _ Store = (*Disk)(nil)

// Config configures a Disk corpus. The zero value means the defaults.
type Config struct {
	// MaxChunkBytes is the largest chunk Put accepts; 0 means
	// DefaultMaxChunkBytes.
	MaxChunkBytes int64
}

// withDefaults returns c with every zero field that has a default set to it.
func (c Config) withDefaults() Config {
	c.MaxChunkBytes = cmp.Or(c.MaxChunkBytes, DefaultMaxChunkBytes)
	return c
}

// validate checks a Config that has its defaults.
func (c Config) validate() error {
	if c.MaxChunkBytes < 0 {
		return edgeindex.Invalidf("corpus max chunk bytes %d is negative", c.MaxChunkBytes)
	}
	return nil
}

// Open opens the corpus in dir, creating dir if needed, and removes the
// temporary files a crash left behind. Other files are left alone.
func Open(dir string, cfg Config) (*Disk, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if dir == "" {
		return nil, edgeindex.Invalidf("corpus directory is empty")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("corpus: %w", err)
	}
	if err := removeLeftovers(dir); err != nil {
		return nil, err
	}
	return &Disk{dir: dir, cfg: cfg}, nil
}

func removeLeftovers(dir string) error {
	top, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("corpus: %w", err)
	}
	for _, e := range top {
		path := filepath.Join(dir, e.Name())
		if strings.HasPrefix(e.Name(), TempPrefix) {
			if err := os.RemoveAll(path); err != nil {
				return fmt.Errorf("corpus: remove leftover: %w", err)
			}
			continue
		}
		if !e.IsDir() {
			continue
		}
		files, err := os.ReadDir(path)
		if err != nil {
			return fmt.Errorf("corpus: %w", err)
		}
		for _, f := range files {
			if strings.HasPrefix(f.Name(), TempPrefix) {
				if err := os.RemoveAll(filepath.Join(path, f.Name())); err != nil {
					return fmt.Errorf("corpus: remove leftover: %w", err)
				}
			}
		}
	}
	return nil
}

// ChunkName is the file name of a span's chunk: "<from>-<to>.gz".
func ChunkName(span lease.Span) string { return chunkfile.Name(span) }

// ChunkPath is where a Disk corpus in dir keeps the chunk of (group, span).
func ChunkPath(dir, group string, span lease.Span) (string, error) {
	g, err := EscapeGroup(group)
	if err != nil {
		return "", err
	}
	if err := chunkfile.CheckSpan(span); err != nil {
		return "", err
	}
	return filepath.Join(dir, g, ChunkName(span)), nil
}

// path checks the arguments and the store; the caller holds d.mu for reading.
func (d *Disk) path(group string, span lease.Span) (string, error) {
	if d.closed {
		return "", ErrClosed
	}
	return ChunkPath(d.dir, group, span)
}

// Put implements Store. A chunk over MaxChunkBytes is an error wrapping
// ErrTooLarge.
func (d *Disk) Put(group string, span lease.Span, data []byte) error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	final, err := d.path(group, span)
	if err != nil {
		return err
	}
	if int64(len(data)) > d.cfg.MaxChunkBytes {
		return fmt.Errorf("corpus: put %q %s: %d bytes: %w (at most %d)", group, ChunkName(span), len(data), ErrTooLarge, d.cfg.MaxChunkBytes)
	}
	if err := chunkfile.WriteAtomic(d.dir, final, data); err != nil {
		return fmt.Errorf("corpus: put %q %s: %w", group, ChunkName(span), err)
	}
	return nil
}

// Has implements Store.
func (d *Disk) Has(group string, span lease.Span) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	path, err := d.path(group, span)
	if err != nil {
		return false
	}
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular()
}

// Read implements Store.
func (d *Disk) Read(group string, span lease.Span) ([]byte, error) {
	return chunkfile.ReadAll(d.Open(group, span))
}

// Open implements Store. The reader is an *os.File.
func (d *Disk) Open(group string, span lease.Span) (io.ReadCloser, int64, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	path, err := d.path(group, span)
	if err != nil {
		return nil, 0, err
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, fmt.Errorf("corpus: group %q span %d-%d: %w", group, span.From, span.To, ErrNotFound)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("corpus: open %q %s: %w", group, ChunkName(span), err)
	}
	info, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, 0, fmt.Errorf("corpus: open %q %s: %w", group, ChunkName(span), err)
	}
	return f, info.Size(), nil
}

// Delete implements Store.
func (d *Disk) Delete(group string, span lease.Span) error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	path, err := d.path(group, span)
	if err != nil {
		return err
	}
	err = os.Remove(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err == nil {
		err = chunkfile.SyncDir(filepath.Dir(path))
	}
	if err != nil {
		return fmt.Errorf("corpus: delete %q %s: %w", group, ChunkName(span), err)
	}
	return nil
}

// Spans implements Store.
func (d *Disk) Spans(group string) ([]lease.Span, error) {
	g, err := d.enterGroup(group)
	if err != nil {
		return nil, err
	}
	defer d.leave()
	entries, err := os.ReadDir(filepath.Join(d.dir, g))
	if errors.Is(err, fs.ErrNotExist) {
		return []lease.Span{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("corpus: spans %q: %w", group, err)
	}
	spans := make([]lease.Span, 0, len(entries))
	for _, e := range entries {
		if sp, ok := chunkfile.ParseName(e.Name()); ok && e.Type().IsRegular() {
			spans = append(spans, sp)
		}
	}
	return sortSpans(spans), nil
}

// Dir is the corpus directory.
func (d *Disk) Dir() string { return d.dir }

// sortSpans sorts spans by From, then To, for Spans.
func sortSpans(spans []lease.Span) []lease.Span {
	slices.SortFunc(spans, func(a, b lease.Span) int {
		return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To))
	})
	return spans
}

// gate lets a store's calls run together and its Close wait for them:
// Disk and Bucket embed it. Calls hold mu for reading, Close for writing.
type gate struct {
	mu     sync.RWMutex
	closed bool
}

// enterGroup begins a call on group's chunks: it fails with ErrClosed after
// Close, and returns the escaped group. The caller calls leave when done.
func (g *gate) enterGroup(group string) (string, error) {
	g.mu.RLock()
	if g.closed {
		g.mu.RUnlock()
		return "", ErrClosed
	}
	esc, err := EscapeGroup(group)
	if err != nil {
		g.mu.RUnlock()
		return "", err
	}
	return esc, nil
}

func (g *gate) leave() { g.mu.RUnlock() }

// Close implements Store. It waits for the calls in progress; the chunks
// stay where they are, for the next Open.
func (g *gate) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	return nil
}
