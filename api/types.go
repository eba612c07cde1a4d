package api

import (
	"time"

	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/edgeframe"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
)

// The objects of docs/api.md that are also the stores' domain types. They are
// aliases, not copies: lease.Store, batch.Store and grouplease.Store return
// them, both backends and the conformance suite are written against them,
// and their JSON tags are the wire form already, so the server encodes what
// the store returned and a client decodes into the same type.
type (
	// Range is {"id", "group", "groupId", "lane", "start", "end", "next",
	// "capture", "state", "attempts", "headers", "reason"?, "repair"?}.
	Range = lease.Range
	// Lease is {"range", "token", "expiresAt", "ttlSeconds", "chunkSize"}:
	// the answer of POST /v1/lease and POST /v1/groups/{id}/next.
	Lease = lease.Lease
	// Lane is "history" or "tail".
	Lane = lease.Lane
	// State is "pending", "leased", "done" or "failed".
	State = lease.State
	// GroupLease is {"group": {"id", "name"}, "lane", "token", "expiresAt",
	// "ttlSeconds", "next", "snapshot"}: the answer of POST /v1/groups/lease.
	GroupLease = grouplease.GroupLease
	// GroupRef is a GroupLease's {"id", "name"}.
	GroupRef = grouplease.GroupRef
	// Snapshot is {"next", "size"}: a GroupLease's snapshot, and the answer
	// of PUT /v1/groups/{id}/snapshot.
	Snapshot = grouplease.Snapshot
	// Batch is the body of POST /v1/ranges/{id}/batch: {"from", "to",
	// "headers", "items", "missing"?}. edgeframe.DecodeBatch reads it
	// strictly; edgeframe.MarshalBatch writes it.
	Batch = batch.Batch
	// Item is one of a Batch's {"key", "value"}.
	Item = batch.Item
	// StoredItem is one item of the results feed: {"id", "range", "from",
	// "to", "key", "value"}.
	StoredItem = batch.Stored
	// BatchRecord is one stored batch in a node's detail: {"id", "range",
	// "from", "to", "headers", "items", "at"}.
	BatchRecord = batch.Record
)

// Headers and media types of the node API.
const (
	// HeaderLeaseToken carries a held lease's token on every fenced call.
	HeaderLeaseToken = "Lease-Token"
	// HeaderSnapshotNext carries the next of the snapshot GET answers.
	HeaderSnapshotNext = "X-Snapshot-Next"
	// FramesType is the media type of a range's stream.
	FramesType = edgeframe.ContentType
	// BatchType is the media type of a batch body in the binary layout,
	// which POST /v1/ranges/{id}/batch takes beside JSON.
	BatchType = edgeframe.BatchType
	// SnapshotType is the media type of a snapshot's body (gzip bytes).
	SnapshotType = "application/octet-stream"
)

// OK is {"ok": true}: the answer of finish, release, a lane's release,
// /healthz and a ready /readyz.
type OK struct {
	OK bool `json:"ok"`
}

// Expiry is {"expiresAt"}: the answer of a range's and a lane's heartbeat.
type Expiry struct {
	ExpiresAt time.Time `json:"expiresAt"`
}

// CorruptRequest is the body of POST /v1/ranges/{id}/corrupt: the first
// article of the chunk that does not inflate or parse. From is required.
type CorruptRequest struct {
	From *int64 `json:"from"`
}

// CorruptReply is {"state", "attempts"}: the range's state after a corrupt
// report, pending or (at the coordinator's maximum attempts) failed.
type CorruptReply struct {
	State    State `json:"state"`
	Attempts int   `json:"attempts"`
}

// SnapshotReset is {"reset", "next"}: the answer of the admin's
// DELETE /v1/groups/{id}/snapshot. Next is the forgotten snapshot's next,
// null when the lane had none.
type SnapshotReset struct {
	Reset bool   `json:"reset"`
	Next  *int64 `json:"next"`
}

// RangesPage is {"ranges", "next"}: a page of GET /v1/ranges. Next is the
// cursor (?after=) of the next page, null on the last.
type RangesPage struct {
	Ranges []Range `json:"ranges"`
	Next   *string `json:"next"`
}

// BatchReply is the answer of a batch: {"next", "duplicate", "done"?,
// "lease"?}.
type BatchReply struct {
	batch.Result
	// Lease is the range granted to the sender after its batch finished its
	// range, when the batch was posted with ThenLease (?then=lease): its next
	// lease, without a call of its own. Absent when it did not ask, the range
	// is not done, or there is no work.
	Lease *Lease `json:"lease,omitempty"`
}

// ThenLease is the query of a batch that asks for the sender's next lease
// in the answer (BatchReply.Lease): POST /v1/ranges/{id}/batch?then=lease.
const ThenLease = "lease"

// ResultsPage is {"results", "next"}: a page of GET /v1/results, the feed
// of stored items in storage order. Next is the cursor to poll with; null
// when the store has none yet.
type ResultsPage struct {
	Results []StoredItem `json:"results"`
	Next    *string      `json:"next"`
}

// FleetSchema names the shape of GET /v1/fleet.
const FleetSchema = "edgeindex.fleet/v1"

// Fleet is the coordinator's status: GET /v1/fleet.
type Fleet struct {
	Schema     string          `json:"schema"`
	At         time.Time       `json:"at"`
	Nodes      []FleetNode     `json:"nodes"`
	Groups     []FleetGroup    `json:"groups"`
	Ranges     map[State]int64 `json:"ranges"` // totals by state
	SpoolBytes int64           `json:"spoolBytes"`
}

// FleetNode is a node and the leases it holds.
type FleetNode struct {
	Name     string       `json:"name"`
	LastSeen time.Time    `json:"lastSeen"`
	Leases   []FleetLease `json:"leases"`
}

// FleetLease is one range lease a node holds.
type FleetLease struct {
	Range     int64     `json:"range"`
	Group     string    `json:"group"`
	Lane      Lane      `json:"lane"`
	Start     int64     `json:"start"`
	Next      int64     `json:"next"`
	End       int64     `json:"end"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// FleetGroup is a group and its lanes.
type FleetGroup struct {
	ID      int64       `json:"id"`
	Name    string      `json:"name"`
	Ordered bool        `json:"ordered"`
	Lanes   []FleetLane `json:"lanes"`
	// Plan is the group's plan and the provider's watermarks at the last
	// poll; nil when the group has no plan.
	Plan *FleetPlan `json:"plan,omitempty"`
}

// FleetPlan is a planned group's view from the provider: its watermarks at
// the last poll, how far the tail has planned, how many articles up to the
// high watermark the tail has not stored (Lag), and its missing articles.
type FleetPlan struct {
	Polled   bool               `json:"polled"`
	PolledAt time.Time          `json:"polledAt"`
	Low      int64              `json:"low"`
	High     int64              `json:"high"`
	TailNext int64              `json:"tailNext"`
	Lag      int64              `json:"lag"`
	Missing  grouplease.Missing `json:"missing"`
	// Error is the planner's last failure for the group (a 411 No such
	// group, a provider that refused the login, a date search that failed),
	// and ErrorAt when it happened; both absent once a poll succeeds.
	Error   string     `json:"error,omitempty"`
	ErrorAt *time.Time `json:"errorAt,omitempty"`
}

// FleetLane is a lane's holder and progress.
type FleetLane struct {
	Lane         Lane            `json:"lane"`
	Holder       string          `json:"holder,omitempty"`
	Next         int64           `json:"next"`
	SnapshotNext *int64          `json:"snapshotNext"`
	Headers      int64           `json:"headers"`
	Ranges       map[State]int64 `json:"ranges"`
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

// FleetLeaseOf is the fleet's view of a held lease.
func FleetLeaseOf(l Lease) FleetLease {
	return FleetLease{Range: l.Range.ID, Group: l.Range.Group, Lane: l.Range.Lane, Start: l.Range.Start,
		Next: l.Range.Next, End: l.Range.End, ExpiresAt: l.ExpiresAt}
}

// RangeBatch is one entry of POST /v1/batches: {"range", "token",
// "batch"}, a batch for a range held under the grant token.
// edgeframe.DecodeBatches reads a body of them strictly;
// edgeframe.MarshalBatches writes one.
type RangeBatch = edgeframe.RangeBatch

// MaxBatches is the most entries POST /v1/batches takes in one call, and
// MaxLeases the most leases POST /v1/leases grants in one.
const (
	MaxBatches = edgeframe.DefaultMaxBatches
	MaxLeases  = 256
)

// BatchesRequest is the body of POST /v1/batches: {"batches": [...]}.
type BatchesRequest struct {
	Batches []RangeBatch `json:"batches"`
}

// BatchesReply is the answer of POST /v1/batches: {"results": [...]}, one
// a batch, in the order they were posted.
type BatchesReply struct {
	Results []RangeBatchReply `json:"results"`
}

// RangeBatchReply is one entry's answer: {"range", "next", "duplicate",
// "done"?, "lease"?} as POST /v1/ranges/{id}/batch would have answered
// it, or {"range", "error", "code"} with the error body that call would
// have had (a lost lease, a conflict, a batch past its range's end).
type RangeBatchReply struct {
	Range int64 `json:"range"`
	*BatchReply
	Error string `json:"error,omitempty"`
	Code  string `json:"code,omitempty"`
}

// LeasesReply is the answer of POST /v1/leases: {"leases": [...]}, empty
// when there is nothing to do.
type LeasesReply struct {
	Leases []Lease `json:"leases"`
}

// RangeToken names a held range by its id and grant token: an entry of
// POST /v1/finishes and POST /v1/heartbeats.
type RangeToken struct {
	Range int64 `json:"range"`
	Token int64 `json:"token"`
}

// FinishesRequest is the body of POST /v1/finishes and POST
// /v1/heartbeats: {"ranges": [...]}.
type FinishesRequest struct {
	Ranges []RangeToken `json:"ranges"`
}

// FinishesReply is the answer of POST /v1/finishes: {"results": [...]},
// one a range, in the order they were named.
type FinishesReply struct {
	Results []RangeReply `json:"results"`
}

// HeartbeatsReply is the answer of POST /v1/heartbeats (whose body is a
// FinishesRequest's): {"results": [...]}, one a range, in the order they
// were named.
type HeartbeatsReply struct {
	Results []HeartbeatReply `json:"results"`
}

// HeartbeatReply is one range's answer in POST /v1/heartbeats: {"range",
// "expiresAt"} when its lease was renewed, or {"range", "error", "code"}
// with the error body POST /v1/ranges/{id}/heartbeat would have had.
type HeartbeatReply struct {
	Range     int64      `json:"range"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	Error     string     `json:"error,omitempty"`
	Code      string     `json:"code,omitempty"`
}

// RangeReply is one range's answer in a call of many: {"range", "ok":
// true}, or {"range", "error", "code"} with the error body the call of
// that range alone would have had.
type RangeReply struct {
	Range int64  `json:"range"`
	OK    bool   `json:"ok,omitempty"`
	Error string `json:"error,omitempty"`
	Code  string `json:"code,omitempty"`
}
