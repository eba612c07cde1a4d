package coordinator

import (
	"context"
	"strconv"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/lease"
)

// Fleet reads the coordinator's status: its nodes and the leases they
// hold, its groups and their lanes, range totals by state, spool bytes.
func (s *Service) Fleet(ctx context.Context) (api.Fleet, error) {
	st := s.cfg.Store
	nodes, err := st.Nodes(ctx)
	if err != nil {
		return api.Fleet{}, err
	}
	held, err := st.Held(ctx)
	if err != nil {
		return api.Fleet{}, err
	}
	groups, err := st.Groups(ctx)
	if err != nil {
		return api.Fleet{}, err
	}
	lanes, err := st.Lanes(ctx, "")
	if err != nil {
		return api.Fleet{}, err
	}
	f := api.Fleet{Schema: api.FleetSchema, At: s.cfg.Clock.Now().UTC(), Nodes: []api.FleetNode{}, Groups: []api.FleetGroup{},
		Ranges: map[lease.State]int64{}, SpoolBytes: s.cfg.Spool.Size()}
	byNode := map[string][]api.FleetLease{}
	for _, l := range held {
		byNode[l.Node] = append(byNode[l.Node], api.FleetLeaseOf(l))
	}
	for _, n := range nodes {
		ls := byNode[n.Name]
		if ls == nil {
			ls = []api.FleetLease{}
		}
		f.Nodes = append(f.Nodes, api.FleetNode{Name: n.Name, LastSeen: n.LastSeen, Leases: ls})
	}
	byGroup := map[int64][]api.FleetLane{}
	for _, l := range lanes {
		fl := api.FleetLane{Lane: l.Lane, Holder: l.Holder, Next: l.Next, Headers: l.Headers, Ranges: l.Ranges}
		if l.Snapshot != nil {
			fl.SnapshotNext = &l.Snapshot.Next
		}
		byGroup[l.GroupID] = append(byGroup[l.GroupID], fl)
		for state, n := range l.Ranges {
			f.Ranges[state] += n
		}
	}
	plans, err := s.plans(ctx)
	if err != nil {
		return api.Fleet{}, err
	}
	for _, g := range groups {
		ls := byGroup[g.ID]
		if ls == nil {
			ls = []api.FleetLane{}
		}
		f.Groups = append(f.Groups, api.FleetGroup{ID: g.ID, Name: g.Name, Ordered: g.Ordered, Lanes: ls, Plan: plans[g.ID]})
	}
	return f, nil
}

// plans reads the groups' plans and the planner's last failures
// (Store.Plans, Store.PlanErrors), by group id.
func (s *Service) plans(ctx context.Context) (map[int64]*api.FleetPlan, error) {
	plans, err := s.cfg.Store.Plans(ctx)
	if err != nil {
		return nil, err
	}
	failed, err := s.cfg.Store.PlanErrors(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]*api.FleetPlan, len(plans))
	for _, p := range plans {
		fp := &api.FleetPlan{Polled: p.Polled, PolledAt: p.PolledAt, Low: p.Low, High: p.High,
			TailNext: p.TailNext, Lag: p.Lag, Missing: p.Missing}
		if e, ok := failed[p.GroupID]; ok {
			fp.Error, fp.ErrorAt = e.Message, &e.At
		}
		out[p.GroupID] = fp
	}
	return out, nil
}

// NodeBatchPage is how many batches a page of a node's detail lists.
const NodeBatchPage = 50

// Node reads one node's detail, with a page of its batches, newest first,
// below the batch id before (0: from the newest). An unknown node is
// edgeindex.ErrNotFound.
func (s *Service) Node(ctx context.Context, name string, before int64) (api.NodeDetail, error) {
	if before < 0 {
		return api.NodeDetail{}, edgeindex.Invalidf("cursor: a cursor from a previous page, not %d", before)
	}
	n, err := s.cfg.Store.Node(ctx, name)
	if err != nil {
		return api.NodeDetail{}, err
	}
	recs, err := s.cfg.Store.Batches(ctx, name, before, NodeBatchPage)
	if err != nil {
		return api.NodeDetail{}, err
	}
	held, err := s.cfg.Store.Held(ctx)
	if err != nil {
		return api.NodeDetail{}, err
	}
	d := api.NodeDetail{Name: n.Name, CreatedAt: n.CreatedAt, LastSeen: n.LastSeen, Leases: []api.FleetLease{}, Batches: recs}
	for _, l := range held {
		if l.Node == name {
			d.Leases = append(d.Leases, api.FleetLeaseOf(l))
		}
	}
	if len(recs) == NodeBatchPage {
		c := strconv.FormatInt(recs[len(recs)-1].ID, 10)
		d.Next = &c
	}
	return d, nil
}

// MaxPage is the most a page of ranges or results may hold.
const MaxPage = 10000

// Ranges lists a page of ranges by id, after the range id q.After, at most
// q.Limit (0: 100) of them.
func (s *Service) Ranges(ctx context.Context, q api.RangesQuery) (api.RangesPage, error) {
	if q.After < 0 {
		return api.RangesPage{}, edgeindex.Invalidf("after: a range id from a previous page, not %d", q.After)
	}
	if q.Limit < 0 || q.Limit > MaxPage {
		return api.RangesPage{}, edgeindex.Invalidf("limit: 1 to %d, not %d", MaxPage, q.Limit)
	}
	rs, err := s.cfg.Store.Ranges(ctx, q)
	if err != nil {
		return api.RangesPage{}, err
	}
	p := api.RangesPage{Ranges: rs}
	lim := q.Limit
	if lim == 0 {
		lim = 100
	}
	if len(rs) == lim {
		c := strconv.FormatInt(rs[len(rs)-1].ID, 10)
		p.Next = &c
	}
	if p.Ranges == nil {
		p.Ranges = []api.Range{}
	}
	return p, nil
}

// Results reads a page of the results feed, in storage order.
func (s *Service) Results(ctx context.Context, q api.ResultsQuery) (api.ResultsPage, error) {
	if q.Limit < 0 || q.Limit > MaxPage {
		return api.ResultsPage{}, edgeindex.Invalidf("limit: 1 to %d, not %d", MaxPage, q.Limit)
	}
	page, err := s.cfg.Store.Results(ctx, q)
	if err != nil {
		return api.ResultsPage{}, err
	}
	p := api.ResultsPage{Results: page.Results}
	if page.Next != "" {
		p.Next = &page.Next
	}
	return p, nil
}
