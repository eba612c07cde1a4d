package coordinator

import (
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/blobstore"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
)

// snapshotFiles keeps snapshot bytes in a blobstore.Store (a directory, or
// the snapshots part of a bucket that coordinators share) as blobs named
// <group id>-<lane>-<next>-<token>-<random>.gz: a blob per upload, never
// overwritten, made current only by the fenced metadata update. Names
// hold only numbers, a lane and hex: no group name becomes a key. Blobs
// the store names no file for (older snapshots) are
// <group id>-<lane>-<next>-<token>.gz.
//
// One upload per lane is written at a time in this process, so a lane
// keeps at most its current blob and the ones being written (one per
// coordinator); a refused upload removes its own blob, a stored one
// removes the lane's blobs that can never become current (see prune).
type snapshotFiles struct {
	store blobstore.Store

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

func newSnapshotFiles(store blobstore.Store) *snapshotFiles {
	return &snapshotFiles{store: store, lanes: map[laneKey]*laneSlot{}}
}

// lock waits until no other upload of the lane is being written here.
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

// blobName returns the blob name of the snapshot s names, checked to be one of
// the lane's: a name from the database never leaves the lane's blobs.
func blobName(group int64, ln lease.Lane, s grouplease.SnapshotFile) (string, error) {
	if s.File == "" {
		return fmt.Sprintf("%s%d-%d.gz", prefix(group, ln), s.Next, s.Token), nil
	}
	if strings.Contains(s.File, "/") || blobstore.CheckKey(s.File) != nil || !strings.HasPrefix(s.File, prefix(group, ln)) || !strings.HasSuffix(s.File, ".gz") {
		return "", fmt.Errorf("snapshot: the store names the file %q, not one of group %d's %s lane", s.File, group, ln)
	}
	return s.File, nil
}

// newName names a new upload's blob; the random part makes it unique.
func newName(group int64, ln lease.Lane, next, token int64) string {
	var b [8]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s%d-%d-%s.gz", prefix(group, ln), next, token, hex.EncodeToString(b[:]))
}

// parseName reads the next and token of a name of the lane's.
func parseName(group int64, ln lease.Lane, name string) (next, token int64, ok bool) {
	rest, ok := strings.CutPrefix(name, prefix(group, ln))
	if !ok {
		return 0, 0, false
	}
	rest, ok = strings.CutSuffix(rest, ".gz")
	parts := strings.Split(rest, "-")
	if !ok || len(parts) < 2 || len(parts) > 3 {
		return 0, 0, false
	}
	next, err1 := strconv.ParseInt(parts[0], 10, 64)
	token, err2 := strconv.ParseInt(parts[1], 10, 64)
	return next, token, err1 == nil && err2 == nil
}

// write stores body, size bytes (-1: unknown), checked to be whole gzip,
// under name, and returns its size. The store's Put is atomic and the
// check refuses the bytes before they become visible, so a failed or
// refused body leaves nothing behind.
func (f *snapshotFiles) write(ctx context.Context, name string, body io.Reader, size int64) (int64, error) {
	r := blobstore.Checked(body, checkGzip)
	defer r.Close()
	n, err := f.store.Put(ctx, name, r, size)
	if err != nil {
		return n, fmt.Errorf("snapshot: %w", err)
	}
	return n, nil
}

// checkGzip refuses bytes that are not a whole gzip stream. It reads them
// to the end either way, so a body over the size limit is refused as such
// (413) even when its first bytes are no gzip.
func checkGzip(r io.Reader) error {
	zr, err := gzip.NewReader(r)
	if err == nil {
		_, err = io.Copy(io.Discard, zr)
	}
	if err != nil {
		io.Copy(io.Discard, r)
		return edgeindex.Invalidf("snapshot: the body must be gzip (%v)", err)
	}
	return nil
}

func (f *snapshotFiles) open(ctx context.Context, name string) (io.ReadCloser, int64, error) {
	return f.store.Open(ctx, name)
}

// remove removes one blob of the lane.
func (f *snapshotFiles) remove(ctx context.Context, name string) error {
	return f.store.Delete(ctx, name)
}

// staleUpload is the age past which a blob that is not current is an
// upload whose outcome was lost (its metadata update failed), never to
// become current: an upload is made current within seconds of its Put.
const staleUpload = time.Hour

// prune removes the lane's blobs that can never become current now that
// keep is: those of an older grant (a lower token, fenced), those of the
// same grant with an older next (refused as older), and any other but
// keep older than staleUpload. Blobs of a newer grant or next may be
// uploads another coordinator is making current: they stay.
func (f *snapshotFiles) prune(ctx context.Context, group int64, ln lease.Lane, keep string) error {
	keepNext, keepToken, ok := parseName(group, ln, keep)
	if !ok {
		return fmt.Errorf("snapshot: prune: %q is not a snapshot name of the lane", keep)
	}
	var old []string
	err := f.store.List(ctx, prefix(group, ln), func(info blobstore.Info) error {
		if info.Key == keep {
			return nil
		}
		next, token, ok := parseName(group, ln, info.Key)
		if !ok {
			return nil // another lane's whose prefix this one is
		}
		older := token < keepToken || token == keepToken && next < keepNext
		if older || time.Since(info.ModTime) > staleUpload {
			old = append(old, info.Key)
		}
		return nil
	})
	for _, k := range old {
		err = errors.Join(err, f.store.Delete(ctx, k))
	}
	return err
}

// ResetSnapshot forgets a lane's snapshot, whoever holds the lane, and
// removes its blob from snaps (the coordinator's Config.Snapshots). It
// returns the snapshot it forgot, nil when the lane had none. It is the
// operator's way out of a snapshot whose next is wrong: the next upload
// may start anywhere again.
func ResetSnapshot(ctx context.Context, st grouplease.SnapshotStore, snaps blobstore.Store, group int64, ln lease.Lane) (*grouplease.Snapshot, error) {
	old, err := st.ResetSnapshot(ctx, group, ln)
	if err != nil || old == nil {
		return nil, err
	}
	file, err := blobName(group, ln, *old)
	if err != nil {
		return &old.Snapshot, err
	}
	if err := snaps.Delete(ctx, file); err != nil {
		return &old.Snapshot, fmt.Errorf("snapshot reset, but its file stays: %w", err)
	}
	return &old.Snapshot, nil
}
