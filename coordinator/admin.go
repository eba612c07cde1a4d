package coordinator

import (
	"net/http"
	"strconv"

	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
)

func limit(r *http.Request) (int, error) {
	n, ok, err := queryInt(r, "limit")
	if err != nil || !ok {
		return 0, err
	}
	if n < 1 || n > 10000 {
		return 0, lease.Invalidf("limit: 1 to 10000, not %d", n)
	}
	return int(n), nil
}

func (s *Server) handleRanges(w http.ResponseWriter, r *http.Request) error {
	after, _, err := queryInt(r, "after")
	if err != nil {
		return err
	}
	if after < 0 {
		return lease.Invalidf("after: a range id from a previous page, not %d", after)
	}
	lim, err := limit(r)
	if err != nil {
		return err
	}
	f := grouplease.RangeFilter{Group: r.URL.Query().Get("group"), State: lease.State(r.URL.Query().Get("state")), After: after, Limit: lim}
	rs, err := s.cfg.Store.Ranges(r.Context(), f)
	if err != nil {
		return err
	}
	var next *string
	if lim == 0 {
		lim = 100
	}
	if len(rs) == lim {
		c := strconv.FormatInt(rs[len(rs)-1].ID, 10)
		next = &c
	}
	if rs == nil {
		rs = []lease.Range{}
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"ranges": rs, "next": next})
	return nil
}

func (s *Server) handleResults(w http.ResponseWriter, r *http.Request) error {
	lim, err := limit(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	page, err := s.cfg.Store.Results(r.Context(), batch.Query{Group: q.Get("group"), After: q.Get("after"), Limit: lim})
	if err != nil {
		return err
	}
	var next *string
	if page.Next != "" {
		next = &page.Next
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"results": page.Results, "next": next})
	return nil
}
