package coordinator

import (
	"net/http"
	"time"

	"github.com/edgeindex/edgeindex/nzb"
	"github.com/edgeindex/edgeindex/release"
)

func (s *Server) handleReleases(w http.ResponseWriter, r *http.Request) error {
	lim, err := limit(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	page, err := s.svc.Releases(r.Context(), release.Query{Group: q.Get("group"), After: q.Get("after"), Limit: lim})
	return s.reply(w, page, err)
}

func (s *Server) handleReleaseByID(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	rel, err := s.svc.ReleaseByID(r.Context(), id)
	return s.reply(w, rel, err)
}

// handleNZB answers a release's NZB 1.1 file, named after the release.
func (s *Server) handleNZB(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	rel, err := s.svc.ReleaseByID(r.Context(), id)
	if err == nil {
		err = nzb.Check(rel)
	}
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", nzb.ContentType)
	w.Header().Set("Content-Disposition", nzb.ContentDisposition(rel.Name))
	http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	if err := nzb.Write(w, rel); err != nil {
		// The status is sent: the client sees a cut body.
		s.cfg.Logger.Warn("nzb: writing failed", "release", id, "err", err)
	}
	return nil
}
