package coordinator

import (
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
	Name      string        `json:"name"`
	CreatedAt time.Time     `json:"createdAt"`
	LastSeen  time.Time     `json:"lastSeen"`
	Leases    []FleetLease  `json:"leases"`
	Batches   []BatchRecord `json:"batches"` // newest first
	Next      *string       `json:"next"`    // cursor of the next (older) page, or null
}

// BatchRecord is one stored batch, as the node detail lists it.
type BatchRecord struct {
	ID      int64     `json:"id"`
	Range   int64     `json:"range"`
	From    int64     `json:"from"`
	To      int64     `json:"to"`
	Headers int64     `json:"headers"`
	Items   int64     `json:"items"`
	At      time.Time `json:"at"`
}
