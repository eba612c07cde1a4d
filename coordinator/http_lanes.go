package coordinator

import (
	"io"
	"net/http"
	"strconv"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/lease"
)

func (s *Server) handleLaneLease(w http.ResponseWriter, r *http.Request, n string) error {
	ln, err := lane(r)
	if err != nil {
		return err
	}
	gl, err := s.svc.GrantLane(r.Context(), n, ln)
	return s.reply(w, gl, err)
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
	l, err := s.svc.Next(r.Context(), id, ln, f)
	return s.reply(w, l, err)
}

func (s *Server) handleLaneHeartbeat(w http.ResponseWriter, r *http.Request, n string) error {
	id, ln, f, err := laneCall(r, n)
	if err != nil {
		return err
	}
	exp, err := s.svc.HeartbeatLane(r.Context(), id, ln, f)
	return s.reply(w, api.Expiry{ExpiresAt: exp}, err)
}

func (s *Server) handleLaneRelease(w http.ResponseWriter, r *http.Request, n string) error {
	id, ln, f, err := laneCall(r, n)
	if err != nil {
		return err
	}
	return s.reply(w, okReply, s.svc.ReleaseLane(r.Context(), id, ln, f))
}

// handlePutSnapshot answers PUT /v1/groups/{id}/snapshot?lane=&next=N; see
// Service.PutSnapshot for what is checked before the body is read.
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
		return edgeindex.Invalidf("next: the article the snapshot resumes at is required")
	}
	snap, err := s.svc.PutSnapshot(r.Context(), id, ln, f, next, r.ContentLength, r.Body)
	return s.reply(w, snap, err)
}

// handleGetSnapshot sends the lane's snapshot with its length and next,
// each piece under the write deadline.
func (s *Server) handleGetSnapshot(w http.ResponseWriter, r *http.Request, n string) error {
	id, ln, f, err := laneCall(r, n)
	if err != nil {
		return err
	}
	body, snap, err := s.svc.OpenSnapshot(r.Context(), id, ln, f)
	if err != nil {
		return err
	}
	defer body.Close()
	w.Header().Set("Content-Type", api.SnapshotType)
	w.Header().Set("Content-Length", strconv.FormatInt(snap.Size, 10))
	w.Header().Set(api.HeaderSnapshotNext, strconv.FormatInt(snap.Next, 10))
	rc := http.NewResponseController(w)
	dw := newDeadlineWriter(w, rc.SetWriteDeadline, s.cfg.WriteTimeout)
	dw.Arm()
	w.WriteHeader(http.StatusOK)
	if _, err := io.Copy(dw, body); err != nil {
		s.cfg.Logger.Info("snapshot not sent whole", "group", id, "lane", ln, "node", n, "err", err)
	}
	return nil
}

// handleResetSnapshot is the admin's DELETE /v1/groups/{id}/snapshot?lane=.
func (s *Server) handleResetSnapshot(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	ln, err := lane(r)
	if err != nil {
		return err
	}
	res, err := s.svc.ResetSnapshot(r.Context(), id, ln)
	return s.reply(w, res, err)
}
