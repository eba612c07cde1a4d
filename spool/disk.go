package spool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/edgeindex/edgeindex/internal/chunkfile"

	"github.com/edgeindex/edgeindex/lease"
)

// Sentinel errors of the disk spool.
var (
	// ErrNotFound means the spool holds no such chunk. It wraps
	// lease.ErrNotFound, so errors.Is matches either.
	ErrNotFound = fmt.Errorf("chunk %w", lease.ErrNotFound)
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
// wrapping lease.ErrInvalid (Has returns false). After Close every call
// that can fail returns ErrClosed, and Has returns false.
type Store interface {
	// Put stores data as the chunk of (rangeID, span), replacing any
	// previous one, atomically: a reader sees the old chunk or the new one,
	// and a crash leaves one or the other. Put never blocks on the size
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
	// below 0 or above MaxBytes() is an error wrapping lease.ErrInvalid.
	WaitRoom(ctx context.Context, n int64) error
	// Notify returns a channel that is closed at the next Put (or Close).
	// Take it before checking Has, then wait on it, to miss no chunk.
	Notify() <-chan struct{}
	// WaitChunk returns nil once the chunk is stored, or ctx's error.
	WaitChunk(ctx context.Context, rangeID int64, span lease.Span) error
	// Close wakes every waiter with ErrClosed. It is safe to call twice.
	Close() error
}

// Config configures a Disk spool. The zero value means the defaults.
type Config struct {
	// MaxBytes bounds the spool's total size; 0 means DefaultMaxBytes.
	MaxBytes int64
}

// withDefaults returns c with every zero field that has a default set to it.
func (c Config) withDefaults() Config {
	setDefault(&c.MaxBytes, DefaultMaxBytes)
	return c
}

// validate checks a Config that has its defaults.
func (c Config) validate() error {
	if c.MaxBytes < 0 {
		return lease.Invalidf("spool max bytes %d is negative", c.MaxBytes)
	}
	return nil
}

// Disk is the disk spool. Each chunk is one file, dir/<rangeID>/<from>-<to>.gz
// (see ChunkPath). Writes go to a temporary file in the same directory,
// which is synced, renamed into place, and the directory synced. It is safe
// for concurrent use.
type Disk struct {
	index // the chunks on disk, with their file sizes
	dir   string
	drops uint64 // Drops so far, to name the directories they move aside; under mu
}

var _ Store = (*Disk)(nil)

// Open opens the spool in dir, creating dir if needed. It counts the chunks
// already there and removes the temporary files that a crash left behind;
// files it does not recognise are left alone and not counted.
func Open(dir string, cfg Config) (*Disk, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if dir == "" {
		return nil, lease.Invalidf("spool directory is empty")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	d := &Disk{index: newIndex(cfg.MaxBytes), dir: dir}
	if err := d.scan(); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *Disk) scan() error {
	top, err := os.ReadDir(d.dir)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	for _, e := range top {
		if strings.HasPrefix(e.Name(), TempPrefix) {
			if err := os.RemoveAll(filepath.Join(d.dir, e.Name())); err != nil {
				return fmt.Errorf("spool: remove leftover: %w", err)
			}
			continue
		}
		id, err := strconv.ParseInt(e.Name(), 10, 64)
		if err != nil || !e.IsDir() || strconv.FormatInt(id, 10) != e.Name() {
			continue
		}
		rdir := filepath.Join(d.dir, e.Name())
		files, err := os.ReadDir(rdir)
		if err != nil {
			return fmt.Errorf("spool: %w", err)
		}
		for _, f := range files {
			if strings.HasPrefix(f.Name(), TempPrefix) {
				if err := os.RemoveAll(filepath.Join(rdir, f.Name())); err != nil {
					return fmt.Errorf("spool: remove leftover: %w", err)
				}
				continue
			}
			span, ok := chunkfile.ParseName(f.Name())
			if !ok || !f.Type().IsRegular() {
				continue
			}
			info, err := f.Info()
			if err != nil {
				return fmt.Errorf("spool: %w", err)
			}
			d.add(id, span, info.Size())
		}
	}
	return nil
}

// add records a chunk of size bytes, replacing any previous record; it
// returns the change in total size. The caller holds d.mu or owns d.
func (d *Disk) add(id int64, span lease.Span, size int64) int64 {
	m := d.chunks[id]
	if m == nil {
		m = make(map[lease.Span]int64)
		d.chunks[id] = m
	}
	old := m[span]
	m[span] = size
	d.size += size - old
	return size - old
}

// ChunkName is the file name of a span's chunk: "<from>-<to>.gz".
func ChunkName(span lease.Span) string { return chunkfile.Name(span) }

// ChunkPath is where a Disk spool in dir keeps the chunk of (rangeID, span).
func ChunkPath(dir string, rangeID int64, span lease.Span) string {
	return filepath.Join(dir, strconv.FormatInt(rangeID, 10), ChunkName(span))
}

func (d *Disk) rangeDir(id int64) string {
	return filepath.Join(d.dir, strconv.FormatInt(id, 10))
}

// Put implements Store.
func (d *Disk) Put(rangeID int64, span lease.Span, data []byte) error {
	if err := chunkfile.CheckSpan(span); err != nil {
		return err
	}
	rdir := d.rangeDir(rangeID)
	final := filepath.Join(rdir, ChunkName(span))

	// Creating the temp file under the lock keeps Drop's RemoveAll from
	// racing with it: a Drop that comes later removes the temp file too,
	// and the rename below then fails instead of bringing the chunk back.
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return ErrClosed
	}
	newDir, err := chunkfile.Mkdir(rdir)
	var tmp *os.File
	if err == nil {
		tmp, err = os.CreateTemp(rdir, TempPrefix+ChunkName(span)+"-*")
	}
	d.mu.Unlock()
	if err != nil {
		return fmt.Errorf("spool: put %d %s: %w", rangeID, ChunkName(span), err)
	}
	if newDir {
		if err := chunkfile.SyncDir(d.dir); err != nil {
			_ = os.Remove(tmp.Name())
			_ = tmp.Close()
			return fmt.Errorf("spool: put %d %s: %w", rangeID, ChunkName(span), err)
		}
	}
	if err := chunkfile.WriteSync(tmp, data); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("spool: put %d %s: %w", rangeID, ChunkName(span), err)
	}

	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		_ = os.Remove(tmp.Name())
		return ErrClosed
	}
	if err := os.Rename(tmp.Name(), final); err != nil {
		_, lerr := os.Lstat(tmp.Name())
		d.mu.Unlock()
		if errors.Is(err, fs.ErrNotExist) && errors.Is(lerr, fs.ErrNotExist) {
			// A Drop of the range removed the temp file while it was being
			// written: this Put comes before that Drop, so it is dropped.
			return nil
		}
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("spool: put %d %s: %w", rangeID, ChunkName(span), err)
	}
	if d.add(rangeID, span, int64(len(data))) < 0 {
		d.wakeRoom()
	}
	d.wakeArrived()
	d.mu.Unlock()

	// The rename is visible now; make it durable. A Drop may already have
	// removed the directory, and then there is nothing left to sync.
	if err := chunkfile.SyncDir(rdir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("spool: put %d %s: %w", rangeID, ChunkName(span), err)
	}
	return nil
}

// Read implements Store.
func (d *Disk) Read(rangeID int64, span lease.Span) ([]byte, error) {
	return chunkfile.ReadAll(d.Open(rangeID, span))
}

// Open implements Store. The reader is an *os.File.
func (d *Disk) Open(rangeID int64, span lease.Span) (io.ReadCloser, int64, error) {
	if err := chunkfile.CheckSpan(span); err != nil {
		return nil, 0, err
	}
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if closed {
		return nil, 0, ErrClosed
	}
	f, err := os.Open(ChunkPath(d.dir, rangeID, span))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, fmt.Errorf("spool: range %d span %d-%d: %w", rangeID, span.From, span.To, ErrNotFound)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("spool: open %d %s: %w", rangeID, ChunkName(span), err)
	}
	info, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, 0, fmt.Errorf("spool: open %d %s: %w", rangeID, ChunkName(span), err)
	}
	return f, info.Size(), nil
}

// Drop implements Store. Under the spool's lock it only renames the range's
// directory aside (a name scan removes on the next Open, should a crash come
// first) and forgets the range's chunks; the removal and the fsync of the
// spool's directory happen after the lock is released, so Puts, Opens and
// the Drops of other ranges do not queue behind them. A range that has no
// directory costs one failed rename and no fsync.
func (d *Disk) Drop(rangeID int64) error {
	rdir := d.rangeDir(rangeID)
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return ErrClosed
	}
	d.drops++
	aside := filepath.Join(d.dir, fmt.Sprintf("%sdrop-%d-%d-%d", TempPrefix, rangeID, os.Getpid(), d.drops))
	err := os.Rename(rdir, aside)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// Nothing on disk: nothing to remove or sync.
		freed := d.forget(rangeID)
		if freed > 0 {
			d.wakeRoom()
		}
		d.mu.Unlock()
		return nil
	case err != nil:
		// The directory cannot be moved aside: remove it in place, under the
		// lock, as a Put's temporary file must not be created meanwhile.
		err = os.RemoveAll(rdir)
		if err == nil {
			err = chunkfile.SyncDir(d.dir)
		}
		freed := d.forget(rangeID)
		if freed > 0 {
			d.wakeRoom()
		}
		d.mu.Unlock()
		if err != nil {
			return fmt.Errorf("spool: drop %d: %w", rangeID, err)
		}
		return nil
	}
	// Every chunk of the range left with its directory. A Put whose
	// temporary file went with it finds its rename failing, and is dropped.
	var freed int64
	for _, size := range d.chunks[rangeID] {
		freed += size
	}
	d.size -= freed
	delete(d.chunks, rangeID)
	if freed > 0 {
		d.wakeRoom()
	}
	d.mu.Unlock()

	err = os.RemoveAll(aside)
	if err == nil {
		err = chunkfile.SyncDir(d.dir)
	}
	if err != nil {
		return fmt.Errorf("spool: drop %d: %w", rangeID, err)
	}
	return nil
}

// forget recounts range id from disk after a removal and returns the bytes
// freed. The caller holds d.mu.
func (d *Disk) forget(id int64) int64 {
	var freed int64
	for span, size := range d.chunks[id] {
		if _, err := os.Lstat(ChunkPath(d.dir, id, span)); errors.Is(err, fs.ErrNotExist) {
			delete(d.chunks[id], span)
			d.size -= size
			freed += size
		}
	}
	if len(d.chunks[id]) == 0 {
		delete(d.chunks, id)
	}
	return freed
}

// DropChunk implements Store.
func (d *Disk) DropChunk(rangeID int64, span lease.Span) error {
	if err := chunkfile.CheckSpan(span); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	err := os.Remove(ChunkPath(d.dir, rangeID, span))
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	} else if err == nil {
		err = chunkfile.SyncDir(d.rangeDir(rangeID))
	}
	if size, ok := d.chunks[rangeID][span]; ok {
		if _, serr := os.Lstat(ChunkPath(d.dir, rangeID, span)); errors.Is(serr, fs.ErrNotExist) {
			delete(d.chunks[rangeID], span)
			if len(d.chunks[rangeID]) == 0 {
				delete(d.chunks, rangeID)
			}
			d.size -= size
			if size > 0 {
				d.wakeRoom()
			}
		}
	}
	if err != nil {
		return fmt.Errorf("spool: drop %d %s: %w", rangeID, ChunkName(span), err)
	}
	return nil
}

// Dir is the spool's directory.
func (d *Disk) Dir() string { return d.dir }

// WaitChunk implements Store.
func (d *Disk) WaitChunk(ctx context.Context, rangeID int64, span lease.Span) error {
	if err := chunkfile.CheckSpan(span); err != nil {
		return err
	}
	return d.waitChunk(ctx, rangeID, span, 0, nil)
}

// Close implements Store. The files stay on disk for the next Open.
func (d *Disk) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.close()
	return nil
}
