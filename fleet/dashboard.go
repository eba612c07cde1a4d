package fleet

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"time"

	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/fleetcache"
	"github.com/edgeindex/edgeindex/lease"
)

//go:embed dashboard.html
var dashboardHTML string

// dashboardTmpl escapes everything it is given: group and node names are
// user data.
var dashboardTmpl = template.Must(template.New("dashboard").Parse(dashboardHTML))

// The view of the dashboard: everything formatted in Go, so that the
// template only places it.
type (
	dashView struct {
		RefreshSeconds     int
		Kept               bool
		Stale              bool
		Refreshing         bool
		Age                string
		KeptFor            string
		PolledAt, ServedAt string
		PolledAtISO        string
		LastFailed         *dashFailure
		Hosts              []dashHost
		// RateReads is how many kept reads the rates cover; RateWindow
		// the most they may.
		RateReads, RateWindow int
		// MaxLanes is the most lanes shown (and nodes, a host), and
		// DroppedLanes how many lanes of the read the rates do not follow.
		MaxLanes, DroppedLanes int
	}
	dashFailure struct {
		At, Error string
	}
	dashHost struct {
		Host, Status, Detail string
		Anchor               string
		OK                   bool
		At                   string
		Nodes                []dashNode
		NodeCount            int // every node, shown or not
		LeaseCount           int // every node's leases
		Groups               []dashGroup
		Ranges               []stateCount
		SpoolBytes           string
		Rate                 *rateView // nil: no rate for this host
		// HiddenNodes and HiddenLanes count what is past the dashboard's
		// bound (GET /v1/fleet has it all).
		HiddenNodes, HiddenLanes int
	}
	dashNode struct {
		Name, Key, LastSeen string
		Leases              []dashLease
	}
	dashLease struct {
		api.FleetLease
		Done, Total int64
		Percent     string
		Expires     string
	}
	dashGroup struct {
		Name      string
		Ordered   bool
		PlanError *dashPlanError // nil: the planner's last poll did not fail
		Lanes     []dashLane
	}
	dashPlanError struct {
		Error   string
		At, Ago string // "" when the coordinator gave no time
	}
	dashLane struct {
		api.FleetLane
		SnapshotNext string
		Counts       []stateCount
		Rate         *rateView // nil: no rate for this lane
		Lag          *lagView  // nil: not a tail lane with a polled plan
	}
	stateCount struct {
		State lease.State
		N     int64
	}
)

// handleDashboard answers GET /: the fleet read as HTML.
func (c *Coordinators) handleDashboard(r *http.Request) (fleetcache.Reply, error) {
	a, err := c.Fleet(r.Context())
	if err != nil {
		return fleetcache.Reply{}, err
	}
	v := c.dashboardView(a)
	var buf bytes.Buffer
	if err := dashboardTmpl.Execute(&buf, v); err != nil {
		return fleetcache.Reply{}, fmt.Errorf("rendering the dashboard: %w", err)
	}
	// No Meta: the page is sent with Cache-Control: no-store. It shows the
	// read's age as of now, so a browser must not show a kept copy of it.
	return fleetcache.Reply{Body: buf.Bytes(), ContentType: "text/html; charset=utf-8"}, nil
}

// dashboardView formats a fleet answer for the template.
func (c *Coordinators) dashboardView(a Answer) dashView {
	meta := a.Meta
	served := meta.ServedAt
	v := dashView{
		RefreshSeconds: int(min(max(c.cfg.Keep, 2*time.Second), 60*time.Second) / time.Second),
		Kept:           a.Kept,
		Stale:          meta.Stale,
		Refreshing:     meta.Refreshing,
		Age:            humanDuration(time.Duration(meta.CacheAgeSeconds * float64(time.Second))),
		KeptFor:        humanDuration(time.Duration(meta.KeptForSeconds * float64(time.Second))),
		PolledAt:       formatTime(meta.PolledAt),
		PolledAtISO:    meta.PolledAt.UTC().Format(time.RFC3339),
		ServedAt:       formatTime(served),
	}
	if info, ok := c.lastRead(); ok && a.Kept && !info.OK && info.At.After(meta.PolledAt) {
		v.LastFailed = &dashFailure{At: formatTime(info.At), Error: info.Error}
	}
	rates := a.Read.rates
	if rates != nil {
		v.RateReads, v.RateWindow, v.DroppedLanes = rates.Reads, rates.Window, rates.DroppedLanes
	}
	v.MaxLanes = c.cfg.MaxLanes
	lanes := c.cfg.MaxLanes // shown across every host, so that the page is bounded
	for i, h := range a.Read.hosts {
		v.Hosts = append(v.Hosts, hostView(i, h, rates, served, c.cfg.MaxLanes, &lanes))
	}
	return v
}

// hostView formats one host of a fleet read, with its rates (computed when
// the read was kept: only looked up here): at most maxNodes nodes, and as
// many lanes as *lanes has left, which it takes from.
func hostView(i int, h Host, rates *Rates, served time.Time, maxNodes int, lanes *int) dashHost {
	dh := dashHost{Host: h.Host, Status: h.Status, Detail: h.Detail, OK: h.Fleet != nil, Anchor: "host-" + strconv.Itoa(i+1)}
	f := h.Fleet
	if f == nil {
		return dh
	}
	dh.At = formatTime(f.At)
	dh.Ranges = counts(f.Ranges)
	dh.SpoolBytes = humanBytes(f.SpoolBytes)
	if hr := rates.host(h.Host); hr != nil {
		dh.Rate = &hr.view
	}
	dh.NodeCount = len(f.Nodes)
	for _, n := range f.Nodes {
		dh.LeaseCount += len(n.Leases)
		if len(dh.Nodes) == maxNodes {
			dh.HiddenNodes++
			continue
		}
		dn := dashNode{Name: n.Name, Key: h.Host + "/" + n.Name, LastSeen: ago(served, n.LastSeen)}
		for _, l := range n.Leases {
			dn.Leases = append(dn.Leases, leaseView(l, served))
		}
		dh.Nodes = append(dh.Nodes, dn)
	}
	for _, g := range f.Groups {
		if *lanes < max(len(g.Lanes), 1) {
			dh.HiddenLanes += len(g.Lanes)
			continue
		}
		*lanes -= max(len(g.Lanes), 1)
		dh.Groups = append(dh.Groups, groupView(h.Host, g, rates, served))
	}
	return dh
}

// groupView formats one group of a host, with its lanes' rates and the
// planner's last error.
func groupView(host string, g api.FleetGroup, rates *Rates, served time.Time) dashGroup {
	dg := dashGroup{Name: g.Name, Ordered: g.Ordered}
	if p := g.Plan; p != nil && p.Error != "" {
		dg.PlanError = &dashPlanError{Error: p.Error}
		if p.ErrorAt != nil {
			dg.PlanError.At, dg.PlanError.Ago = formatTime(*p.ErrorAt), ago(served, *p.ErrorAt)
		}
	}
	for _, l := range g.Lanes {
		dl := dashLane{FleetLane: l, Counts: counts(l.Ranges)}
		if l.SnapshotNext != nil {
			dl.SnapshotNext = strconv.FormatInt(*l.SnapshotNext, 10)
		}
		if lr := rates.lane(host, g, l); lr != nil {
			dl.Rate = &lr.view
			if lr.lagView.Has {
				dl.Lag = &lr.lagView
			}
		}
		dg.Lanes = append(dg.Lanes, dl)
	}
	return dg
}

// leaseView computes a lease's progress: (next-start) of (end-start+1)
// articles.
func leaseView(l api.FleetLease, now time.Time) dashLease {
	total := max(l.End-l.Start+1, 1)
	done := min(max(l.Next-l.Start, 0), total)
	expires := "in " + humanDuration(l.ExpiresAt.Sub(now))
	if !l.ExpiresAt.After(now) {
		expires = "expired " + ago(now, l.ExpiresAt)
	}
	return dashLease{
		FleetLease: l,
		Done:       done,
		Total:      total,
		Percent:    strconv.FormatFloat(float64(done)*100/float64(total), 'f', 1, 64),
		Expires:    expires,
	}
}

// counts lists range counts in the order of a range's life.
func counts(byState map[lease.State]int64) []stateCount {
	out := make([]stateCount, 0, 4)
	for _, s := range []lease.State{lease.StatePending, lease.StateLeased, lease.StateDone, lease.StateFailed} {
		out = append(out, stateCount{State: s, N: byState[s]})
	}
	return out
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

func ago(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return humanDuration(now.Sub(t)) + " ago"
}

// humanDuration is d rounded for people: 0s, 42s, 3m 12s, 5h 7m, 2d 3h.
func humanDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int64(d / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm %ds", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%dh %dm", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%dd %dh", s/86400, s%86400/3600)
}

// humanBytes is n in B, KiB, MiB...
func humanBytes(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	f, units := float64(n), []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	i := -1
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %s", f, units[i])
}
