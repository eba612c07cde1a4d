package coordinator

import (
	"net/http"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/lease"
)

func (s *Server) handleLease(w http.ResponseWriter, r *http.Request, n string) error {
	l, err := s.svc.Grant(r.Context(), n)
	return s.reply(w, l, err)
}

// handleLeases answers POST /v1/leases?max=N: up to N leases at once.
func (s *Server) handleLeases(w http.ResponseWriter, r *http.Request, n string) error {
	max, given, err := queryInt(r, "max")
	if err != nil {
		return err
	}
	if !given {
		max = 1
	}
	if max > api.MaxLeases {
		max = api.MaxLeases + 1 // refused as such, whatever its size
	}
	ls, err := s.svc.GrantMany(r.Context(), n, int(max))
	if err != nil {
		return err
	}
	if ls == nil {
		ls = []api.Lease{}
	}
	return s.reply(w, api.LeasesReply{Leases: ls}, nil)
}

// rangeCall reads a range call's id and the caller's fence.
func rangeCall(r *http.Request, n string) (int64, lease.Fence, error) {
	id, err := pathID(r)
	if err != nil {
		return 0, lease.Fence{}, err
	}
	f, err := fence(r, n)
	return id, f, err
}

// handleStream answers GET /v1/ranges/{id}/stream[?from=N] with frames,
// flushed as written, each write under the write deadline.
func (s *Server) handleStream(w http.ResponseWriter, r *http.Request, n string) error {
	id, f, err := rangeCall(r, n)
	if err != nil {
		return err
	}
	from, replay, err := queryInt(r, "from")
	if err != nil {
		return err
	}
	var rs *RangeStream
	if replay {
		rs, err = s.svc.OpenReplay(r.Context(), id, f, from)
	} else {
		rs, err = s.svc.OpenStream(r.Context(), id, f)
	}
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", api.FramesType)
	w.Header().Set("Cache-Control", "no-store")
	rs.Send(r.Context(), newHTTPFrames(w, s.cfg.WriteTimeout))
	return nil // the stream's frames said what happened
}

func (s *Server) handleHeartbeat(w http.ResponseWriter, r *http.Request, n string) error {
	id, f, err := rangeCall(r, n)
	if err != nil {
		return err
	}
	exp, err := s.svc.Heartbeat(r.Context(), id, f)
	return s.reply(w, api.Expiry{ExpiresAt: exp}, err)
}

func (s *Server) handleFinish(w http.ResponseWriter, r *http.Request, n string) error {
	id, f, err := rangeCall(r, n)
	if err != nil {
		return err
	}
	return s.reply(w, okReply, s.svc.Finish(r.Context(), id, f))
}

// handleCorrupt checks the fence before it reads the body: a stale
// holder's report costs nothing.
func (s *Server) handleCorrupt(w http.ResponseWriter, r *http.Request, n string) error {
	id, f, err := rangeCall(r, n)
	if err != nil {
		return err
	}
	if _, err := s.svc.Check(r.Context(), id, f); err != nil {
		return err
	}
	var body api.CorruptRequest
	if err := decodeJSON(r, 4096, &body); err != nil {
		return err
	}
	if body.From == nil {
		return edgeindex.Invalidf("from: the first article of the corrupt chunk is required")
	}
	rg, err := s.svc.Corrupt(r.Context(), id, f, *body.From)
	return s.reply(w, api.CorruptReply{State: rg.State, Attempts: rg.Attempts}, err)
}

func (s *Server) handleRelease(w http.ResponseWriter, r *http.Request, n string) error {
	id, f, err := rangeCall(r, n)
	if err != nil {
		return err
	}
	return s.reply(w, okReply, s.svc.Release(r.Context(), id, f))
}
