package coordinator

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
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
	writeJSON(w, http.StatusOK, gl)
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
	writeJSON(w, http.StatusOK, l)
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
	writeJSON(w, http.StatusOK, map[string]time.Time{"expiresAt": exp})
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
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
	return nil
}

// handlePutSnapshot stores a lane's window state. The bytes go to a file
// named after the snapshot's next and the grant's token first (temporary
// file, fsync, rename), then the fenced metadata update makes them current,
// then the lane's other files go. A crash leaves the old snapshot or the new
// one, never half of one, and a fenced-out holder's file never becomes
// current.
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
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, s.cfg.MaxSnapshot))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return fmt.Errorf("%w: a snapshot of at most %d bytes", errTooLarge, s.cfg.MaxSnapshot)
		}
		return err
	}
	if err := checkGzip(body); err != nil {
		return err
	}
	// Refuse a stale holder before writing anything; the write itself is
	// fenced again below.
	if _, err := s.cfg.Store.Snapshot(r.Context(), id, ln, f); err != nil && !errors.Is(err, lease.ErrNotFound) {
		return err
	}
	snap := grouplease.Snapshot{Next: next, Size: int64(len(body)), Token: f.Token}
	if err := s.snaps.write(id, ln, snap, body); err != nil {
		return err
	}
	// A refused upload's file is left for the lane's next snapshot to prune,
	// never removed here: a holder fenced out between the check above and
	// this write may share the current file's name (the same next and grant).
	if err := s.cfg.Store.PutSnapshot(r.Context(), id, ln, f, snap); err != nil {
		return err
	}
	s.snaps.prune(id, ln, snap)
	writeJSON(w, http.StatusOK, map[string]int64{"next": snap.Next, "size": snap.Size})
	return nil
}

// checkGzip refuses a body that is not a whole gzip stream.
func checkGzip(body []byte) error {
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err == nil {
		_, err = io.Copy(io.Discard, zr)
	}
	if err != nil {
		return lease.Invalidf("snapshot: the body must be gzip (%v)", err)
	}
	return nil
}

func (s *Server) handleGetSnapshot(w http.ResponseWriter, r *http.Request, n string) error {
	id, ln, f, err := laneCall(r, n)
	if err != nil {
		return err
	}
	snap, err := s.cfg.Store.Snapshot(r.Context(), id, ln, f)
	if err != nil {
		return err
	}
	file, err := s.snaps.open(id, ln, snap)
	if err != nil {
		return err
	}
	defer file.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(snap.Size, 10))
	w.Header().Set("X-Snapshot-Next", strconv.FormatInt(snap.Next, 10))
	w.WriteHeader(http.StatusOK)
	_, err = io.Copy(w, file)
	return nil
}
