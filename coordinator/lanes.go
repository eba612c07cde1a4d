package coordinator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/spool"
)

func (s *Server) handleLaneLease(w http.ResponseWriter, r *http.Request, n string) error {
	ln, err := lane(r)
	if err != nil {
		return err
	}
	gl, err := s.cfg.Store.GrantLane(r.Context(), n, ln, s.cfg.LeaseTTL)
	if errors.Is(err, lease.ErrNoWork) {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	if err != nil {
		return err
	}
	s.cfg.Metrics.leased()
	s.writeJSON(w, http.StatusOK, gl)
	return nil
}

// laneCall reads a lane call's group id, lane and fence.
func laneCall(r *http.Request, n string) (int64, lease.Lane, lease.Fence, error) {
	id, err := pathID(r)
	if err != nil {
		return 0, "", lease.Fence{}, err
	}
	ln, err := lane(r)
	if err != nil {
		return 0, "", lease.Fence{}, err
	}
	f, err := fence(r, n)
	return id, ln, f, err
}

func (s *Server) handleNext(w http.ResponseWriter, r *http.Request, n string) error {
	id, ln, f, err := laneCall(r, n)
	if err != nil {
		return err
	}
	l, err := s.cfg.Store.Next(r.Context(), id, ln, f, s.cfg.LeaseTTL)
	if errors.Is(err, lease.ErrNoWork) {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	if err != nil {
		return err
	}
	s.kick()
	s.writeJSON(w, http.StatusOK, l)
	return nil
}

func (s *Server) handleLaneHeartbeat(w http.ResponseWriter, r *http.Request, n string) error {
	id, ln, f, err := laneCall(r, n)
	if err != nil {
		return err
	}
	exp, err := s.cfg.Store.HeartbeatLane(r.Context(), id, ln, f, s.cfg.LeaseTTL)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, map[string]time.Time{"expiresAt": exp})
	return nil
}

func (s *Server) handleLaneRelease(w http.ResponseWriter, r *http.Request, n string) error {
	id, ln, f, err := laneCall(r, n)
	if err != nil {
		return err
	}
	if err := s.cfg.Store.ReleaseLane(r.Context(), id, ln, f); err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
	return nil
}

// handlePutSnapshot stores a lane's window state. The lane's fence, the
// next's bounds and its order are checked before a byte is read; the bytes
// then go to a new file of their own (temporary file, fsync, rename), and
// the fenced metadata update alone makes that file current. A refused or
// failed upload removes its file; a stored one removes the lane's others.
// A crash leaves the old snapshot or the new one, never half of one, and no
// upload ever touches the current file.
func (s *Server) handlePutSnapshot(w http.ResponseWriter, r *http.Request, n string) error {
	id, ln, f, err := laneCall(r, n)
	if err != nil {
		return err
	}
	next, ok, err := queryInt(r, "next")
	if err != nil {
		return err
	}
	if !ok {
		return lease.Invalidf("next: the article the snapshot resumes at is required")
	}
	if next < 1 {
		return lease.Invalidf("next: the article the snapshot resumes at is at least 1, not %d", next)
	}
	if r.ContentLength > s.cfg.MaxSnapshot {
		return fmt.Errorf("%w: a snapshot of at most %d bytes", errTooLarge, s.cfg.MaxSnapshot)
	}
	unlock, err := s.snaps.lock(r.Context(), id, ln)
	if err != nil {
		return err
	}
	defer unlock()
	chk, err := s.cfg.Store.CheckSnapshot(r.Context(), id, ln, f)
	if err != nil {
		return err
	}
	if next > chk.End+1 {
		return lease.Invalidf("next %d is past the end of the lane's last planned range + 1 (%d)", next, chk.End+1)
	}
	if chk.Current != nil && next < chk.Current.Next {
		return fmt.Errorf("%w: next %d is before the stored %d", grouplease.ErrSnapshotOlder, next, chk.Current.Next)
	}

	name := newName(id, ln, next, f.Token)
	size, err := s.snaps.write(name, http.MaxBytesReader(nil, r.Body, s.cfg.MaxSnapshot))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return fmt.Errorf("%w: a snapshot of at most %d bytes", errTooLarge, s.cfg.MaxSnapshot)
		}
		return err
	}
	// The client may be gone by now; the update and the cleanup still run,
	// so the file's fate is known.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 30*time.Second)
	defer cancel()
	snap := grouplease.SnapshotFile{Snapshot: grouplease.Snapshot{Next: next, Size: size, Token: f.Token}, File: name}
	if err := s.cfg.Store.PutSnapshot(ctx, id, ln, f, snap); err != nil {
		if refused(err) {
			if rerr := s.snaps.remove(name); rerr != nil {
				s.cfg.Logger.Warn("remove a refused snapshot", "file", name, "err", rerr)
			}
		} else {
			// Maybe stored: the file stays, and the next upload prunes it
			// if it did not become current.
			s.cfg.Logger.Warn("snapshot metadata update failed; its file stays", "file", name, "err", err)
		}
		return err
	}
	s.snaps.prune(id, ln, name)
	s.writeJSON(w, http.StatusOK, map[string]int64{"next": snap.Next, "size": snap.Size})
	return nil
}

// refused reports whether the store surely wrote nothing.
func refused(err error) bool {
	for _, e := range []error{lease.ErrLeaseLost, lease.ErrConflict, lease.ErrInvalid, lease.ErrNotFound} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func (s *Server) handleGetSnapshot(w http.ResponseWriter, r *http.Request, n string) error {
	id, ln, f, err := laneCall(r, n)
	if err != nil {
		return err
	}
	// An upload may make another file current, and remove this one, between
	// the read of the metadata and the open: read it again.
	var (
		snap grouplease.SnapshotFile
		file *os.File
	)
	for try := 0; file == nil; try++ {
		chk, err := s.cfg.Store.CheckSnapshot(r.Context(), id, ln, f)
		if err != nil {
			return err
		}
		if chk.Current == nil {
			return fmt.Errorf("snapshot: group %d %s lane has none: %w", id, ln, lease.ErrNotFound)
		}
		snap = *chk.Current
		name, err := s.snaps.name(id, ln, snap)
		if err != nil {
			return err
		}
		file, err = s.snaps.open(name)
		if err != nil && (!errors.Is(err, fs.ErrNotExist) || try == 2) {
			return fmt.Errorf("snapshot: %w", err)
		}
	}
	defer file.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(snap.Size, 10))
	w.Header().Set("X-Snapshot-Next", strconv.FormatInt(snap.Next, 10))
	rc := http.NewResponseController(w)
	dw := spool.NewDeadlineWriter(w, rc.SetWriteDeadline, s.cfg.WriteTimeout)
	dw.Arm()
	w.WriteHeader(http.StatusOK)
	if _, err := io.Copy(dw, io.LimitReader(file, snap.Size)); err != nil {
		s.cfg.Logger.Info("snapshot not sent whole", "group", id, "lane", ln, "node", n, "err", err)
	}
	return nil
}

// handleResetSnapshot is the admin's DELETE /v1/groups/{id}/snapshot?lane=:
// the lane's snapshot is forgotten and its file removed.
func (s *Server) handleResetSnapshot(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	ln, err := lane(r)
	if err != nil {
		return err
	}
	unlock, err := s.snaps.lock(r.Context(), id, ln)
	if err != nil {
		return err
	}
	defer unlock()
	old, err := ResetSnapshot(r.Context(), s.cfg.Store, s.snaps.dir, id, ln)
	if err != nil {
		return err
	}
	var was *int64
	if old != nil {
		was = &old.Next
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"reset": old != nil, "next": was})
	return nil
}
