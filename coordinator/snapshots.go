package coordinator

import (
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/edgeindex/edgeindex/internal/chunkfile"

	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
)

// snapshotFiles keeps snapshot bytes as
// <dir>/<group id>-<lane>-<next>-<token>-<random>.gz: a file per upload,
// never overwritten, made current only by the fenced metadata update.
// Names hold only numbers, a lane and hex: no group name becomes a path.
// Files the store names no file for (older snapshots) are
// <group id>-<lane>-<next>-<token>.gz.
//
// One upload per lane is written at a time (in this process), so a lane
// keeps at most its current file and the one being written; a refused
// upload removes its own file, a stored one removes the lane's others.
type snapshotFiles struct {
	dir string

	mu    sync.Mutex
	lanes map[laneKey]*laneSlot
}

type laneKey struct {
	group int64
	lane  lease.Lane
}

// laneSlot lets one upload of a lane write at a time.
type laneSlot struct {
	ch    chan struct{} // holds a token while an upload writes
	users int
}

func openSnapshotFiles(dir string) (*snapshotFiles, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("coordinator: snapshots: %w", err)
	}
	// Writes a crash cut short are never read: remove them.
	leftovers, _ := filepath.Glob(filepath.Join(dir, chunkfile.TempPrefix+"*"))
	for _, l := range leftovers {
		os.Remove(l)
	}
	return &snapshotFiles{dir: dir, lanes: map[laneKey]*laneSlot{}}, nil
}

// lock waits until no other upload of the lane is being written.
func (f *snapshotFiles) lock(ctx context.Context, group int64, ln lease.Lane) (func(), error) {
	k := laneKey{group, ln}
	f.mu.Lock()
	slot := f.lanes[k]
	if slot == nil {
		slot = &laneSlot{ch: make(chan struct{}, 1)}
		f.lanes[k] = slot
	}
	slot.users++
	f.mu.Unlock()
	leave := func() {
		f.mu.Lock()
		if slot.users--; slot.users == 0 {
			delete(f.lanes, k)
		}
		f.mu.Unlock()
	}
	select {
	case slot.ch <- struct{}{}:
		return func() { <-slot.ch; leave() }, nil
	case <-ctx.Done():
		leave()
		return nil, ctx.Err()
	}
}

func prefix(group int64, ln lease.Lane) string {
	return fmt.Sprintf("%d-%s-", group, ln)
}

// name returns the file name of the snapshot s names, checked to be one of
// the lane's: a name from the database never leaves the directory.
func (f *snapshotFiles) name(group int64, ln lease.Lane, s grouplease.SnapshotFile) (string, error) {
	if s.File == "" {
		return fmt.Sprintf("%s%d-%d.gz", prefix(group, ln), s.Next, s.Token), nil
	}
	if filepath.Base(s.File) != s.File || !strings.HasPrefix(s.File, prefix(group, ln)) || !strings.HasSuffix(s.File, ".gz") {
		return "", fmt.Errorf("snapshot: the store names the file %q, not one of group %d's %s lane", s.File, group, ln)
	}
	return s.File, nil
}

// newName names a new upload's file; the random part makes it unique.
func newName(group int64, ln lease.Lane, next, token int64) string {
	var b [8]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s%d-%d-%s.gz", prefix(group, ln), next, token, hex.EncodeToString(b[:]))
}

// write stores body, checked to be whole gzip, in a new file (temporary
// file, fsync, rename, fsync of the directory) and returns its name and
// size. A failed or refused body leaves nothing behind.
func (f *snapshotFiles) write(name string, body io.Reader) (int64, error) {
	n, err := chunkfile.WriteAtomicFrom(f.dir, filepath.Join(f.dir, name), body, checkGzip)
	if err != nil {
		return n, fmt.Errorf("snapshot: %w", err)
	}
	return n, nil
}

// checkGzip refuses a file that is not a whole gzip stream.
func checkGzip(file *os.File) error {
	zr, err := gzip.NewReader(file)
	if err == nil {
		_, err = io.Copy(io.Discard, zr)
	}
	if err != nil {
		return lease.Invalidf("snapshot: the body must be gzip (%v)", err)
	}
	return nil
}

func (f *snapshotFiles) open(name string) (*os.File, error) {
	return os.Open(filepath.Join(f.dir, name))
}

// remove removes one file of the lane, durably.
func (f *snapshotFiles) remove(name string) error {
	err := os.Remove(filepath.Join(f.dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return chunkfile.SyncDir(f.dir)
}

// prune removes the lane's files other than keep: files of uploads a crash
// or an unknown outcome left.
func (f *snapshotFiles) prune(group int64, ln lease.Lane, keep string) {
	entries, _ := os.ReadDir(f.dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix(group, ln)) && e.Name() != keep {
			os.Remove(filepath.Join(f.dir, e.Name()))
		}
	}
}

// ResetSnapshot forgets a lane's snapshot, whoever holds the lane, and
// removes its file from dir (the coordinator's SnapshotDir). It returns the
// snapshot it forgot, nil when the lane had none. It is the operator's way
// out of a snapshot whose next is wrong: the next upload may start
// anywhere again.
func ResetSnapshot(ctx context.Context, st grouplease.SnapshotStore, dir string, group int64, ln lease.Lane) (*grouplease.Snapshot, error) {
	old, err := st.ResetSnapshot(ctx, group, ln)
	if err != nil || old == nil {
		return nil, err
	}
	f := &snapshotFiles{dir: dir}
	name, err := f.name(group, ln, *old)
	if err != nil {
		return &old.Snapshot, err
	}
	if err := f.remove(name); err != nil {
		return &old.Snapshot, fmt.Errorf("snapshot reset, but its file stays: %w", err)
	}
	return &old.Snapshot, nil
}
