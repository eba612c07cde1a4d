package spool

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/internal/chunkfile"

	"github.com/edgeindex/edgeindex/lease"
)

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
		return edgeindex.Invalidf("spool max bytes %d is negative", c.MaxBytes)
	}
	return nil
}

// Disk is the disk spool. Each chunk is one file, dir/<rangeID>/<from>-<to>.gz
// (see ChunkPath). A Put writes a temporary file in the range's directory
// and renames it into place, so readers, in this process or in another one
// that shares dir, see a chunk whole or not at all; it syncs nothing, as a
// chunk can always be fetched again. It is safe for concurrent use.
//
// Crashes: every open Disk holds a marker file, dir/.open-<random>, made
// durable at Open, locked (flock) while it is open, and removed by Close
// once syncfs(2) has made every chunk durable. A marker that is there but
// not locked is a Disk that stopped without Close, maybe with the machine,
// leaving files that were never synced: truncated, empty, or garbage after
// a power loss. Open then reads every chunk through gzip (its CRC-32 and
// size trailer) and removes each that is not one whole gzip stream, so it
// counts as absent and is fetched again, never served as a corrupt chunk
// (nor counted as one of its range's attempts); only after those removals
// are durable does it remove the dead marker. A clean restart trusts the
// files without reading them.
type Disk struct {
	index  // the chunks on disk, with their file sizes
	dir    string
	drops  uint64   // Drops so far, to name the directories they move aside; under mu
	marker *os.File // this Disk's marker, locked; nil once closed
	torn   int      // chunks Open removed as torn
}

// MarkerPrefix begins the name of the marker file each open Disk holds in
// its directory (see Disk).
const MarkerPrefix = ".open-"

// LockName is the file in a Disk's directory whose lock Open holds while
// it looks at the markers and the chunks.
const LockName = ".lock"

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
		return nil, edgeindex.Invalidf("spool directory is empty")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	// Opens of one directory take turns, so that a second one waits for
	// the first to have checked the chunks of a dead Disk, rather than
	// taking the marker the first holds meanwhile for a live Disk's.
	lock, err := os.OpenFile(filepath.Join(dir, LockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	defer lock.Close()
	if err := chunkfile.Lock(lock); err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	d := &Disk{index: newIndex(cfg.MaxBytes), dir: dir}
	dead, err := deadMarkers(dir)
	defer func() {
		for _, f := range dead {
			_ = f.Close()
		}
	}()
	if err == nil {
		err = d.mark()
	}
	if err == nil {
		err = d.scan(len(dead) > 0)
	}
	if err == nil && len(dead) > 0 {
		// The torn chunks' removals are durable (scan synced them) and so is
		// this Disk's own marker, which now covers the chunks that were
		// whole but never synced: the dead markers can go.
		for _, f := range dead {
			if rerr := os.Remove(f.Name()); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
				err = rerr
			}
		}
		if err == nil {
			err = chunkfile.SyncDir(dir)
		}
	}
	if err != nil {
		if d.marker != nil {
			_ = d.marker.Close() // the marker stays: the next Open checks every chunk
		}
		return nil, fmt.Errorf("spool: open %s: %w", dir, err)
	}
	return d, nil
}

// deadMarkers returns the markers in dir of Disks that stopped without
// Close, opened and locked; a marker that another open Disk holds is left
// alone.
func deadMarkers(dir string) ([]*os.File, error) {
	top, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var dead []*os.File
	for _, e := range top {
		if !strings.HasPrefix(e.Name(), MarkerPrefix) {
			continue
		}
		f, err := os.OpenFile(filepath.Join(dir, e.Name()), os.O_RDWR, 0)
		if errors.Is(err, fs.ErrNotExist) {
			continue // its Disk closed meanwhile
		}
		if err == nil {
			var ok bool
			if ok, err = chunkfile.TryLock(f); err == nil && !ok {
				_ = f.Close() // a Disk that is open: its files are whole
				continue
			}
		}
		if err != nil {
			if f != nil {
				_ = f.Close()
			}
			for _, f := range dead {
				_ = f.Close()
			}
			return nil, err
		}
		dead = append(dead, f)
	}
	return dead, nil
}

// mark makes this Disk's marker, locks it, and makes it durable before any
// chunk is written.
func (d *Disk) mark() error {
	f, err := os.CreateTemp(d.dir, MarkerPrefix+"*")
	if err != nil {
		return err
	}
	if ok, err := chunkfile.TryLock(f); err != nil || !ok {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return cmp.Or(err, fmt.Errorf("lock %s: held by another", f.Name()))
	}
	d.marker = f
	return chunkfile.SyncDir(d.dir)
}

// scan counts the chunks on disk and removes what a crash left behind:
// temporary files, and, when check is set (a Disk stopped without Close),
// every chunk that is not one whole gzip stream.
func (d *Disk) scan(check bool) error {
	top, err := os.ReadDir(d.dir)
	if err != nil {
		return err
	}
	for _, e := range top {
		if strings.HasPrefix(e.Name(), TempPrefix) {
			if err := os.RemoveAll(filepath.Join(d.dir, e.Name())); err != nil {
				return fmt.Errorf("remove leftover: %w", err)
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
			return err
		}
		removed := false
		for _, f := range files {
			if strings.HasPrefix(f.Name(), TempPrefix) {
				if err := os.RemoveAll(filepath.Join(rdir, f.Name())); err != nil {
					return fmt.Errorf("remove leftover: %w", err)
				}
				continue
			}
			span, ok := chunkfile.ParseName(f.Name())
			if !ok || !f.Type().IsRegular() {
				continue
			}
			path := filepath.Join(rdir, f.Name())
			if check {
				err := chunkfile.CheckGzipFile(path)
				if errors.Is(err, chunkfile.ErrTorn) {
					if err := os.Remove(path); err != nil {
						return fmt.Errorf("remove torn chunk: %w", err)
					}
					d.torn++
					removed = true
					continue
				}
				if err != nil {
					return fmt.Errorf("check chunk: %w", err)
				}
			}
			info, err := f.Info()
			if err != nil {
				return err
			}
			d.add(id, span, info.Size())
		}
		if removed {
			if err := chunkfile.SyncDir(rdir); err != nil {
				return err
			}
		}
	}
	return nil
}

// Torn is how many chunks Open removed as torn (see Disk).
func (d *Disk) Torn() int { return d.torn }

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
	// Nothing is synced: the marker (see Disk) covers an unclean stop.
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return ErrClosed
	}
	var tmp *os.File
	var err error
	if len(d.chunks[rangeID]) > 0 {
		// The directory is there, unless another process dropped the range.
		tmp, err = os.CreateTemp(rdir, TempPrefix+ChunkName(span)+"-*")
	}
	if tmp == nil {
		_, err = chunkfile.Mkdir(rdir)
		if err == nil {
			tmp, err = os.CreateTemp(rdir, TempPrefix+ChunkName(span)+"-*")
		}
	}
	d.mu.Unlock()
	if err != nil {
		return fmt.Errorf("spool: put %d %s: %w", rangeID, ChunkName(span), err)
	}
	if err := chunkfile.WriteClose(tmp, data); err != nil {
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
		d.lost(rangeID, span)
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

// lost forgets a chunk the index has but the disk does not (removed behind
// the spool's back: another process that shares dir dropped its range, or
// a hand), so that Has reports it missing and the prefetcher fetches it
// again, rather than a stream waiting for a chunk that nobody fetches.
func (d *Disk) lost(rangeID int64, span lease.Span) {
	d.mu.Lock()
	defer d.mu.Unlock()
	size, ok := d.chunks[rangeID][span]
	if !ok || d.closed {
		return
	}
	if _, err := os.Lstat(ChunkPath(d.dir, rangeID, span)); !errors.Is(err, fs.ErrNotExist) {
		return // put back meanwhile
	}
	delete(d.chunks[rangeID], span)
	if len(d.chunks[rangeID]) == 0 {
		delete(d.chunks, rangeID)
	}
	d.size -= size
	if size > 0 {
		d.wakeRoom()
	}
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

// Close implements Store. The files stay on disk for the next Open: Close
// makes them durable with one syncfs(2), then removes the Disk's marker, so
// the next Open trusts them without reading them. When the sync fails, the
// marker stays and the next Open checks every chunk.
func (d *Disk) Close() error {
	d.mu.Lock()
	d.close()
	marker := d.marker
	d.marker = nil
	d.mu.Unlock()
	if marker == nil {
		return nil
	}
	defer marker.Close() // the lock goes with it, after the removal
	err := chunkfile.SyncFS(d.dir)
	if err == nil {
		err = os.Remove(marker.Name())
	}
	if err == nil {
		err = chunkfile.SyncDir(d.dir)
	}
	if err != nil {
		return fmt.Errorf("spool: close: %w", err)
	}
	return nil
}

// crash stops d as a crash would: it closes d and lets its marker's lock
// go, without syncing or removing the marker. Tests call it.
func (d *Disk) crash() {
	d.mu.Lock()
	d.close()
	marker := d.marker
	d.marker = nil
	d.mu.Unlock()
	if marker != nil {
		_ = marker.Close()
	}
}
