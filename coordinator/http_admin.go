package coordinator

import (
	"net/http"
	"strconv"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/lease"
)

// limit reads ?limit=, 1 to MaxPage when given.
func limit(r *http.Request) (int, error) {
	n, ok, err := queryInt(r, "limit")
	if err != nil || !ok {
		return 0, err
	}
	if n < 1 || n > MaxPage {
		return 0, edgeindex.Invalidf("limit: 1 to %d, not %d", MaxPage, n)
	}
	return int(n), nil
}

func (s *Server) handleFleet(w http.ResponseWriter, r *http.Request) error {
	f, err := s.svc.Fleet(r.Context())
	return s.reply(w, f, err)
}

func (s *Server) handleNode(w http.ResponseWriter, r *http.Request) error {
	before := int64(0)
	if raw := r.URL.Query().Get("cursor"); raw != "" {
		var err error
		before, err = strconv.ParseInt(raw, 10, 64)
		if err != nil || before < 1 {
			return edgeindex.Invalidf("cursor: a cursor from a previous page, not %q", raw)
		}
	}
	d, err := s.svc.Node(r.Context(), r.PathValue("name"), before)
	return s.reply(w, d, err)
}

func (s *Server) handleRanges(w http.ResponseWriter, r *http.Request) error {
	after, _, err := queryInt(r, "after")
	if err != nil {
		return err
	}
	lim, err := limit(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	page, err := s.svc.Ranges(r.Context(), api.RangesQuery{Group: q.Get("group"), State: lease.State(q.Get("state")), After: after, Limit: lim})
	return s.reply(w, page, err)
}

func (s *Server) handleResults(w http.ResponseWriter, r *http.Request) error {
	lim, err := limit(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	page, err := s.svc.Results(r.Context(), api.ResultsQuery{Group: q.Get("group"), After: q.Get("after"), Limit: lim})
	return s.reply(w, page, err)
}
