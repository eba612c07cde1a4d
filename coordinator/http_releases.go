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

// handleNZB answers a release's NZB 1.1 file, named after the release,
// streamed from the store (Service.WriteNZB). A failure once it began
// cuts the connection: the client sees a broken download, never a whole,
// shorter NZB.
func (s *Server) handleNZB(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	rc := http.NewResponseController(w)
	rc.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	began, err := s.svc.WriteNZB(r.Context(), id, w, func(rel release.Release) {
		w.Header().Set("Content-Type", nzb.ContentType)
		w.Header().Set("Content-Disposition", nzb.ContentDisposition(rel.Name))
		w.WriteHeader(http.StatusOK)
		// The answer begins now: a client whose download is then cut has
		// had a response, and does not send the request again by itself.
		rc.Flush()
	})
	if err != nil && began {
		s.cfg.Logger.Warn("nzb: writing failed; the answer is cut", "release", id, "err", err)
		panic(http.ErrAbortHandler)
	}
	return err
}
