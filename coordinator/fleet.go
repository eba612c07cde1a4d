package coordinator

import (
	"context"
	"github.com/edgeindex/edgeindex/batch"
	"net/http"
	"strconv"
	"time"

	"github.com/edgeindex/edgeindex/lease"
)

// FleetSchema names the shape of GET /v1/fleet.
const FleetSchema = "edgeindex.fleet/v1"

// Fleet is the coordinator's status: GET /v1/fleet.
type Fleet struct {
	Schema     string                `json:"schema"`
	At         time.Time             `json:"at"`
	Nodes      []FleetNode           `json:"nodes"`
	Groups     []FleetGroup          `json:"groups"`
	Ranges     map[lease.State]int64 `json:"ranges"` // totals by state
	SpoolBytes int64                 `json:"spoolBytes"`
}

// FleetNode is a node and the leases it holds.
type FleetNode struct {
	Name     string       `json:"name"`
	LastSeen time.Time    `json:"lastSeen"`
	Leases   []FleetLease `json:"leases"`
}

// FleetLease is one range lease a node holds.
type FleetLease struct {
	Range     int64      `json:"range"`
	Group     string     `json:"group"`
	Lane      lease.Lane `json:"lane"`
	Start     int64      `json:"start"`
	Next      int64      `json:"next"`
	End       int64      `json:"end"`
	ExpiresAt time.Time  `json:"expiresAt"`
}

// FleetGroup is a group and its lanes.
type FleetGroup struct {
	ID      int64       `json:"id"`
	Name    string      `json:"name"`
	Ordered bool        `json:"ordered"`
	Lanes   []FleetLane `json:"lanes"`
}

// FleetLane is a lane's holder and progress.
type FleetLane struct {
	Lane         lease.Lane            `json:"lane"`
	Holder       string                `json:"holder,omitempty"`
	Next         int64                 `json:"next"`
	SnapshotNext *int64                `json:"snapshotNext"`
	Headers      int64                 `json:"headers"`
	Ranges       map[lease.State]int64 `json:"ranges"`
}

// NodeDetail is one node's detail: GET /v1/nodes/{name}.
type NodeDetail struct {
	Name      string         `json:"name"`
	CreatedAt time.Time      `json:"createdAt"`
	LastSeen  time.Time      `json:"lastSeen"`
	Leases    []FleetLease   `json:"leases"`
	Batches   []batch.Record `json:"batches"` // newest first
	Next      *string        `json:"next"`    // cursor of the next (older) page, or null
}

func fleetLease(l lease.Lease) FleetLease {
	return FleetLease{Range: l.Range.ID, Group: l.Range.Group, Lane: l.Range.Lane, Start: l.Range.Start,
		Next: l.Range.Next, End: l.Range.End, ExpiresAt: l.ExpiresAt}
}

// Fleet reads the coordinator's status.
func (s *Server) Fleet(ctx context.Context) (Fleet, error) {
	st := s.cfg.Store
	nodes, err := st.Nodes(ctx)
	if err != nil {
		return Fleet{}, err
	}
	held, err := st.Held(ctx)
	if err != nil {
		return Fleet{}, err
	}
	groups, err := st.Groups(ctx)
	if err != nil {
		return Fleet{}, err
	}
	lanes, err := st.Lanes(ctx, "")
	if err != nil {
		return Fleet{}, err
	}
	f := Fleet{Schema: FleetSchema, At: time.Now().UTC(), Nodes: []FleetNode{}, Groups: []FleetGroup{},
		Ranges: map[lease.State]int64{}, SpoolBytes: s.cfg.Spool.Size()}
	byNode := map[string][]FleetLease{}
	for _, l := range held {
		byNode[l.Node] = append(byNode[l.Node], fleetLease(l))
	}
	for _, n := range nodes {
		ls := byNode[n.Name]
		if ls == nil {
			ls = []FleetLease{}
		}
		f.Nodes = append(f.Nodes, FleetNode{Name: n.Name, LastSeen: n.LastSeen, Leases: ls})
	}
	byGroup := map[int64][]FleetLane{}
	for _, l := range lanes {
		fl := FleetLane{Lane: l.Lane, Holder: l.Holder, Next: l.Next, Headers: l.Headers, Ranges: l.Ranges}
		if l.Snapshot != nil {
			fl.SnapshotNext = &l.Snapshot.Next
		}
		byGroup[l.GroupID] = append(byGroup[l.GroupID], fl)
		for state, n := range l.Ranges {
			f.Ranges[state] += n
		}
	}
	for _, g := range groups {
		ls := byGroup[g.ID]
		if ls == nil {
			ls = []FleetLane{}
		}
		f.Groups = append(f.Groups, FleetGroup{ID: g.ID, Name: g.Name, Ordered: g.Ordered, Lanes: ls})
	}
	return f, nil
}

func (s *Server) handleFleet(w http.ResponseWriter, r *http.Request) error {
	f, err := s.Fleet(r.Context())
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, f)
	return nil
}

const nodeBatchPage = 50

func (s *Server) handleNode(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	n, err := s.cfg.Store.Node(r.Context(), name)
	if err != nil {
		return err
	}
	before := int64(0)
	if raw := r.URL.Query().Get("cursor"); raw != "" {
		before, err = strconv.ParseInt(raw, 10, 64)
		if err != nil || before < 1 {
			return lease.Invalidf("cursor: a cursor from a previous page, not %q", raw)
		}
	}
	recs, err := s.cfg.Store.Batches(r.Context(), name, before, nodeBatchPage)
	if err != nil {
		return err
	}
	held, err := s.cfg.Store.Held(r.Context())
	if err != nil {
		return err
	}
	d := NodeDetail{Name: n.Name, CreatedAt: n.CreatedAt, LastSeen: n.LastSeen, Leases: []FleetLease{}, Batches: recs}
	for _, l := range held {
		if l.Node == name {
			d.Leases = append(d.Leases, fleetLease(l))
		}
	}
	if len(recs) == nodeBatchPage {
		c := strconv.FormatInt(recs[len(recs)-1].ID, 10)
		d.Next = &c
	}
	s.writeJSON(w, http.StatusOK, d)
	return nil
}
