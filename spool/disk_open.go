package spool

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/internal/chunkfile"
)

// MarkerPrefix begins the name of the marker file each open Disk holds in
// its directory (see Disk).
const MarkerPrefix = ".open-"

// LockName is the file in a Disk's directory whose lock Open holds while
// it looks at the markers and the chunks.
const LockName = ".lock"

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
			if err := removeLeftover(d.dir, e.Name()); err != nil {
				return err
			}
			continue
		}
		id, err := strconv.ParseInt(e.Name(), 10, 64)
		if err != nil || !e.IsDir() || strconv.FormatInt(id, 10) != e.Name() {
			continue
		}
		if err := d.scanRange(id, filepath.Join(d.dir, e.Name()), check); err != nil {
			return err
		}
	}
	return nil
}

// scanRange counts the chunks of range id in its directory rdir, as scan
// does the spool's.
func (d *Disk) scanRange(id int64, rdir string, check bool) error {
	files, err := os.ReadDir(rdir)
	if err != nil {
		return err
	}
	removed := false
	for _, f := range files {
		if strings.HasPrefix(f.Name(), TempPrefix) {
			if err := removeLeftover(rdir, f.Name()); err != nil {
				return err
			}
			continue
		}
		span, ok := chunkfile.ParseName(f.Name())
		if !ok || !f.Type().IsRegular() {
			continue
		}
		if check {
			torn, err := d.removeTorn(filepath.Join(rdir, f.Name()))
			if err != nil {
				return err
			}
			if torn {
				removed = true
				continue
			}
		}
		info, err := f.Info()
		if err != nil {
			return err
		}
		d.add(id, span, info.Size())
	}
	if removed {
		return chunkfile.SyncDir(rdir)
	}
	return nil
}

// removeLeftover removes the temporary file (or directory) name in dir
// that a crash left behind.
func removeLeftover(dir, name string) error {
	if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("remove leftover: %w", err)
	}
	return nil
}

// removeTorn removes the chunk file at path when it is not one whole gzip
// stream, and reports whether it did.
func (d *Disk) removeTorn(path string) (bool, error) {
	err := chunkfile.CheckGzipFile(path)
	if errors.Is(err, chunkfile.ErrTorn) {
		if err := os.Remove(path); err != nil {
			return false, fmt.Errorf("remove torn chunk: %w", err)
		}
		d.torn++
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("check chunk: %w", err)
	}
	return false, nil
}

// Torn is how many chunks Open removed as torn (see Disk).
func (d *Disk) Torn() int { return d.torn }
