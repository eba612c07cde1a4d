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
	"time"

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

	recounted time.Time // the last recount's start; under mu
}

var _ Store = (*Disk)(nil)

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
	tmp, err := d.createTemp(rangeID, span)
	if err != nil {
		return err
	}
	if err := chunkfile.WriteClose(tmp, data); err != nil {
		_ = os.Remove(tmp.Name())
		return putError(rangeID, span, err)
	}
	return d.place(rangeID, span, tmp.Name(), int64(len(data)))
}

// putError names the chunk whose Put failed with err.
func putError(rangeID int64, span lease.Span, err error) error {
	return fmt.Errorf("spool: put %d %s: %w", rangeID, ChunkName(span), err)
}

// createTemp creates the temporary file that Put writes a chunk to, in its
// range's directory, which it makes when needed.
//
// Creating the temp file under the lock keeps Drop's RemoveAll from racing
// with it: a Drop that comes later removes the temp file too, and the
// rename of place then fails instead of bringing the chunk back. Nothing
// is synced: the marker (see Disk) covers an unclean stop.
func (d *Disk) createTemp(rangeID int64, span lease.Span) (*os.File, error) {
	rdir := d.rangeDir(rangeID)
	pattern := TempPrefix + ChunkName(span) + "-*"
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, ErrClosed
	}
	if len(d.chunks[rangeID]) > 0 {
		// The directory is there, unless another process dropped the range.
		if tmp, err := os.CreateTemp(rdir, pattern); err == nil {
			return tmp, nil
		}
	}
	if _, err := chunkfile.Mkdir(rdir); err != nil {
		return nil, putError(rangeID, span, err)
	}
	tmp, err := os.CreateTemp(rdir, pattern)
	if err != nil {
		return nil, putError(rangeID, span, err)
	}
	return tmp, nil
}

// place renames the chunk's temporary file tmp, of size bytes, into place
// and records the chunk, or drops it when a Drop of its range came first.
func (d *Disk) place(rangeID int64, span lease.Span, tmp string, size int64) error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		_ = os.Remove(tmp)
		return ErrClosed
	}
	if err := os.Rename(tmp, ChunkPath(d.dir, rangeID, span)); err != nil {
		_, lerr := os.Lstat(tmp)
		d.mu.Unlock()
		if errors.Is(err, fs.ErrNotExist) && errors.Is(lerr, fs.ErrNotExist) {
			// A Drop of the range removed the temp file while it was being
			// written: this Put comes before that Drop, so it is dropped.
			return nil
		}
		_ = os.Remove(tmp)
		return putError(rangeID, span, err)
	}
	if d.add(rangeID, span, size) < 0 {
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

// recountEvery is how often a WaitRoom that finds no room looks on disk
// for chunks removed behind the spool's back (see Disk.WaitRoom).
var recountEvery = 5 * time.Second

// WaitRoom implements Store. A Disk counts only its own Puts and Drops,
// so when it finds no room it looks for the chunks it counts on disk,
// then every recountEvery while it waits, and forgets those that are gone:
// another process that shares dir (group rm's, another coordinator's)
// dropped their ranges, and their bytes are free. Without that, a serve
// whose removed group's chunks were dropped behind it would count them,
// and wait for room, until it restarts. A spool that is full because the
// workers are slower than the fetches is looked at once every
// recountEvery at most, however many WaitRooms find it full.
func (d *Disk) WaitRoom(ctx context.Context, n int64) error {
	d.mu.Lock()
	full := d.size+n > d.max
	d.mu.Unlock()
	if full {
		d.recount()
	}
	return d.waitRoom(ctx, n, recountEvery, d.recount)
}

// recount forgets the chunks the index has but the disk does not, unless
// it did less than recountEvery ago. It stats them without the lock; lost
// checks each missing one again under it.
func (d *Disk) recount() {
	d.mu.Lock()
	now := time.Now()
	if now.Sub(d.recounted) < recountEvery {
		d.mu.Unlock()
		return
	}
	d.recounted = now
	var have []rangeSpan
	for id, spans := range d.chunks {
		for sp := range spans {
			have = append(have, rangeSpan{id, sp})
		}
	}
	d.mu.Unlock()
	for _, c := range have {
		if _, err := os.Lstat(ChunkPath(d.dir, c.id, c.span)); errors.Is(err, fs.ErrNotExist) {
			d.lost(c.id, c.span)
		}
	}
}

// rangeSpan names one chunk.
type rangeSpan struct {
	id   int64
	span lease.Span
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
