package coordinator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/blobstore"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
)

// GrantLane grants node a lane of an ordered group that is free, or whose
// lease expired, and that has work. It fails with lease.ErrNoWork when none
// has.
func (s *Service) GrantLane(ctx context.Context, node string, ln lease.Lane) (api.GroupLease, error) {
	gl, err := s.cfg.Store.GrantLane(ctx, node, ln, s.cfg.LeaseTTL)
	if err != nil {
		return api.GroupLease{}, err
	}
	s.cfg.Metrics.leased()
	return gl, nil
}

// Next returns the lane's next range in article order as a range lease.
// It fails with lease.ErrNoWork when no range is ready. As Grant, it
// leaves the prefetcher to the range's stream.
func (s *Service) Next(ctx context.Context, groupID int64, ln lease.Lane, f lease.Fence) (api.Lease, error) {
	l, err := s.cfg.Store.Next(ctx, groupID, ln, f, s.cfg.LeaseTTL)
	if err != nil {
		return api.Lease{}, err
	}
	return l, nil
}

// HeartbeatLane renews f's grant of the lane and returns its new expiry.
func (s *Service) HeartbeatLane(ctx context.Context, groupID int64, ln lease.Lane, f lease.Fence) (time.Time, error) {
	return s.cfg.Store.HeartbeatLane(ctx, groupID, ln, f, s.cfg.LeaseTTL)
}

// ReleaseLane frees the lane; the range it was working on goes to its next
// holder.
func (s *Service) ReleaseLane(ctx context.Context, groupID int64, ln lease.Lane, f lease.Fence) error {
	return s.cfg.Store.ReleaseLane(ctx, groupID, ln, f)
}

// PutSnapshot stores a lane's window state taken at next: body, size bytes
// of gzip (-1 when unknown). The lane's fence, the next's bounds and its
// order are checked before a byte is read; the bytes then go to a new blob
// of their own (one atomic Put, checked to be gzip before it is visible),
// and the fenced metadata update alone makes that blob current. A refused
// or failed upload leaves no blob; a stored one removes the lane's blobs
// that can no longer become current. A crash leaves the old snapshot or
// the new one, never half of one, and no upload ever touches the current
// blob.
func (s *Service) PutSnapshot(ctx context.Context, groupID int64, ln lease.Lane, f lease.Fence, next, size int64, body io.Reader) (api.Snapshot, error) {
	if next < 1 {
		return api.Snapshot{}, edgeindex.Invalidf("next: the article the snapshot resumes at is at least 1, not %d", next)
	}
	tooLarge := fmt.Errorf("%w: a snapshot of at most %d bytes", api.ErrTooLarge, s.cfg.MaxSnapshot)
	if size > s.cfg.MaxSnapshot {
		return api.Snapshot{}, tooLarge
	}
	unlock, err := s.snaps.lock(ctx, groupID, ln)
	if err != nil {
		return api.Snapshot{}, err
	}
	defer unlock()
	if err := s.checkSnapshot(ctx, groupID, ln, f, next); err != nil {
		return api.Snapshot{}, err
	}
	name := newName(groupID, ln, next, f.Token)
	n, err := s.snaps.write(ctx, name, &capReader{r: body, n: s.cfg.MaxSnapshot}, size)
	if err != nil {
		if errors.Is(err, errOverCap) {
			return api.Snapshot{}, tooLarge
		}
		return api.Snapshot{}, err
	}
	snap := grouplease.SnapshotFile{Snapshot: grouplease.Snapshot{Next: next, Size: n, Token: f.Token}, File: name}
	if err := s.makeCurrent(ctx, groupID, ln, f, snap); err != nil {
		return api.Snapshot{}, err
	}
	return snap.Snapshot, nil
}

// checkSnapshot checks, before an upload is read, that f holds the lane and
// that next is within the lane's plan and not older than the stored one.
func (s *Service) checkSnapshot(ctx context.Context, groupID int64, ln lease.Lane, f lease.Fence, next int64) error {
	chk, err := s.cfg.Store.CheckSnapshot(ctx, groupID, ln, f)
	if err != nil {
		return err
	}
	if next > chk.End+1 {
		return edgeindex.Invalidf("next %d is past the end of the lane's last planned range + 1 (%d)", next, chk.End+1)
	}
	if chk.Current != nil && next < chk.Current.Next {
		return fmt.Errorf("%w: next %d is before the stored %d", grouplease.ErrSnapshotOlder, next, chk.Current.Next)
	}
	return nil
}

// makeCurrent makes the written blob snap current with the fenced metadata
// update, then prunes the lane's other blobs; a refused update removes
// snap's blob instead. The caller may be gone by now; the update and the
// cleanup still run, so the blob's fate is known.
func (s *Service) makeCurrent(ctx context.Context, groupID int64, ln lease.Lane, f lease.Fence, snap grouplease.SnapshotFile) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := s.cfg.Store.PutSnapshot(ctx, groupID, ln, f, snap); err != nil {
		if refused(err) {
			if rerr := s.snaps.remove(ctx, snap.File); rerr != nil {
				s.cfg.Logger.Warn("remove a refused snapshot", "file", snap.File, "err", rerr)
			}
		} else {
			// Maybe stored: the blob stays, and a later upload prunes it
			// if it did not become current.
			s.cfg.Logger.Warn("snapshot metadata update failed; its file stays", "file", snap.File, "err", err)
		}
		return err
	}
	if err := s.snaps.prune(ctx, groupID, ln, snap.File); err != nil {
		s.cfg.Logger.Warn("prune a lane's old snapshots", "group", groupID, "lane", ln, "err", err)
	}
	return nil
}

// refused reports whether the store surely wrote nothing.
func refused(err error) bool {
	for _, e := range []error{edgeindex.ErrLeaseLost, edgeindex.ErrConflict, edgeindex.ErrInvalid, edgeindex.ErrNotFound} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// OpenSnapshot opens the lane's current snapshot for f's holder: its bytes,
// to be closed by the caller, and its next and size. It fails with
// edgeindex.ErrNotFound when the lane has none.
func (s *Service) OpenSnapshot(ctx context.Context, groupID int64, ln lease.Lane, f lease.Fence) (io.ReadCloser, api.Snapshot, error) {
	// An upload may make another blob current, and remove this one, between
	// the read of the metadata and the open: read it again.
	for try := 0; ; try++ {
		chk, err := s.cfg.Store.CheckSnapshot(ctx, groupID, ln, f)
		if err != nil {
			return nil, api.Snapshot{}, err
		}
		if chk.Current == nil {
			return nil, api.Snapshot{}, fmt.Errorf("snapshot: group %d %s lane has none: %w", groupID, ln, edgeindex.ErrNotFound)
		}
		name, err := blobName(groupID, ln, *chk.Current)
		if err != nil {
			return nil, api.Snapshot{}, err
		}
		rc, _, err := s.snaps.open(ctx, name)
		if err == nil {
			return readCloser{io.LimitReader(rc, chk.Current.Size), rc}, chk.Current.Snapshot, nil
		}
		if !errors.Is(err, blobstore.ErrNotFound) || try == 2 {
			return nil, api.Snapshot{}, fmt.Errorf("snapshot: %w", err)
		}
	}
}

// readCloser reads the first Size bytes of a snapshot's blob. It is
// neither an io.WriterTo nor an io.ReaderFrom, so a copy keeps to the size.
type readCloser struct {
	r  io.Reader
	rc io.Closer
}

func (r readCloser) Read(p []byte) (int, error) { return r.r.Read(p) }
func (r readCloser) Close() error               { return r.rc.Close() }

// ResetSnapshot forgets a lane's snapshot, whoever holds the lane, and
// removes its file: the operator's way out of a snapshot whose next is
// wrong.
func (s *Service) ResetSnapshot(ctx context.Context, groupID int64, ln lease.Lane) (api.SnapshotReset, error) {
	unlock, err := s.snaps.lock(ctx, groupID, ln)
	if err != nil {
		return api.SnapshotReset{}, err
	}
	defer unlock()
	old, err := ResetSnapshot(ctx, s.cfg.Store, s.snaps.store, groupID, ln)
	if err != nil {
		return api.SnapshotReset{}, err
	}
	if old == nil {
		return api.SnapshotReset{}, nil
	}
	return api.SnapshotReset{Reset: true, Next: &old.Next}, nil
}

// errOverCap is a body read past its cap.
var errOverCap = errors.New("over the size cap")

// capReader reads r, and fails with errOverCap once it holds more than n
// bytes: the bytes up to the cap are read, and none after.
type capReader struct {
	r   io.Reader
	n   int64 // bytes left under the cap
	err error
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if int64(len(p)) > c.n+1 {
		p = p[:c.n+1] // one byte past the cap tells it is over
	}
	n, err := c.r.Read(p)
	if int64(n) <= c.n {
		c.n -= int64(n)
		c.err = err
		return n, err
	}
	n, c.n, c.err = int(c.n), 0, errOverCap
	return n, c.err
}
