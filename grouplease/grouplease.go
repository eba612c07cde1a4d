package grouplease

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/lease"
)

// Default sizes of a group's ranges and chunks, in articles.
const (
	DefaultRangeSize int64 = 20000
	DefaultChunkSize int64 = 2000
)

// ErrSnapshotOlder means a snapshot's next is older than the stored one's.
var ErrSnapshotOlder = fmt.Errorf("snapshot is older than the stored one: %w", edgeindex.ErrConflict)

// Group is a newsgroup the coordinator indexes. An ordered group's ranges are
// handed out only through its lanes, in article order.
type Group struct {
	ID        int64  `json:"id"`
	Name      string `json:"name"`
	Ordered   bool   `json:"ordered"`
	RangeSize int64  `json:"rangeSize"`
	ChunkSize int64  `json:"chunkSize"`
}

// Normalize fills zero sizes with the defaults and checks the rest.
func (g Group) Normalize() (Group, error) {
	if g.Name == "" || len(g.Name) > 255 {
		return g, edgeindex.Invalidf("group: a name of 1 to 255 bytes is required")
	}
	for _, c := range g.Name {
		if c <= ' ' || c == 0x7f || c == utf8.RuneError {
			return g, edgeindex.Invalidf("group %q: a name has no spaces, control characters or invalid UTF-8", g.Name)
		}
	}
	if err := CheckGroupName(g.Name); err != nil {
		return g, err
	}
	if g.RangeSize == 0 {
		g.RangeSize = DefaultRangeSize
	}
	if g.ChunkSize == 0 {
		g.ChunkSize = DefaultChunkSize
	}
	if g.RangeSize < 1 {
		return g, edgeindex.Invalidf("group %q: range size %d must be at least 1", g.Name, g.RangeSize)
	}
	if g.ChunkSize < 1 {
		return g, edgeindex.Invalidf("group %q: chunk size %d must be at least 1", g.Name, g.ChunkSize)
	}
	return g, nil
}

// Plan splits [from, to] into spans of size articles; the last may be
// shorter. It returns an error wrapping edgeindex.ErrInvalid when from > to,
// from < 0 or size < 1.
func Plan(from, to, size int64) ([]lease.Span, error) {
	if from > to {
		return nil, edgeindex.Invalidf("range: from %d is after to %d", from, to)
	}
	if from < 0 {
		return nil, edgeindex.Invalidf("range: from %d is negative", from)
	}
	if size < 1 {
		return nil, edgeindex.Invalidf("range: size %d must be at least 1", size)
	}
	return lease.Spans(from, to, size), nil
}

// NewRanges asks for the ranges [From, To] of a group's lane, split by the
// group's range size.
type NewRanges struct {
	Group   string
	From    int64
	To      int64
	Lane    lease.Lane // empty: history
	Capture bool
}

// RangeFilter selects ranges to list. Zero fields select everything.
type RangeFilter struct {
	Group string
	State lease.State
	After int64 // range id cursor
	Limit int   // 0: 100
}

// Catalog holds groups and their ranges.
type Catalog interface {
	// AddGroup creates a group; zero sizes take the defaults. An existing
	// name is ErrConflict.
	AddGroup(ctx context.Context, g Group) (Group, error)
	// Group returns the group named name, or edgeindex.ErrNotFound.
	Group(ctx context.Context, name string) (Group, error)
	// Groups lists every group by id.
	Groups(ctx context.Context) ([]Group, error)
	// AddRanges plans and adds ranges; it refuses (edgeindex.ErrConflict) a range
	// that overlaps one the group already has, in any lane, and adds none.
	AddRanges(ctx context.Context, nr NewRanges) ([]lease.Range, error)
	// Range returns one range by id, or edgeindex.ErrNotFound.
	Range(ctx context.Context, id int64) (lease.Range, error)
	// Ranges lists ranges by id.
	Ranges(ctx context.Context, f RangeFilter) ([]lease.Range, error)
	// Retry puts failed ranges of the group back to pending with attempts
	// reset: the ones named, or every failed one when ids is empty. It
	// returns how many it changed.
	Retry(ctx context.Context, group string, ids ...int64) (int, error)
}

// Snapshot describes the stored window state of a lane.
type Snapshot struct {
	Next int64 `json:"next"`
	Size int64 `json:"size"`
	// Token is the lane grant that stored it; the bytes' store names its
	// file after it, so a fenced-out holder never overwrites the current one.
	Token int64 `json:"-"`
}

// GroupRef names a group in a GroupLease.
type GroupRef struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// GroupLease is a grant of one group's lane to one node, fenced by Token.
type GroupLease struct {
	Group     GroupRef      `json:"group"`
	Lane      lease.Lane    `json:"lane"`
	Token     int64         `json:"token"`
	Node      string        `json:"-"`
	ExpiresAt time.Time     `json:"expiresAt"`
	TTL       lease.Seconds `json:"ttlSeconds"`
	Next      int64         `json:"next"`
	Snapshot  *Snapshot     `json:"snapshot"`
}

// LaneStatus is a lane's holder and progress.
type LaneStatus struct {
	GroupID    int64      `json:"groupId"`
	Group      string     `json:"group"`
	Lane       lease.Lane `json:"lane"`
	Holder     string     `json:"holder,omitempty"`
	Token      int64      `json:"token"`
	ExpiresAt  *time.Time `json:"expiresAt,omitempty"`
	Next       int64      `json:"next"` // the first article of the lane not yet stored
	Headers    int64      `json:"headers"`
	RangesDone int64      `json:"rangesDone"`
	Snapshot   *Snapshot  `json:"snapshot"`
	// Ranges counts the lane's ranges by state.
	Ranges map[lease.State]int64 `json:"ranges"`
}

// Store grants the lanes of ordered groups and hands their ranges out in
// article order. Every call with a Fence checks the lane's token and holder.
type Store interface {
	// GrantLane leases a lane that is free or expired and has work;
	// lease.ErrNoWork when none. In the same transaction it fences every
	// range still leased under an older grant of the lane: the old holder's
	// writes to it fail with edgeindex.ErrLeaseLost, and Next grants it again.
	GrantLane(ctx context.Context, node string, lane lease.Lane, ttl time.Duration) (GroupLease, error)
	// Next returns the lane's next range in article order as a range lease.
	// A range already leased under this lane grant is handed back with its
	// token; one left by an earlier grant is granted again from its next with
	// a new token. lease.ErrNoWork when no range is ready.
	Next(ctx context.Context, groupID int64, lane lease.Lane, f lease.Fence, ttl time.Duration) (lease.Lease, error)
	// HeartbeatLane renews the lane grant.
	HeartbeatLane(ctx context.Context, groupID int64, lane lease.Lane, f lease.Fence, ttl time.Duration) (time.Time, error)
	// ReleaseLane frees the lane and gives back the range it was working on.
	ReleaseLane(ctx context.Context, groupID int64, lane lease.Lane, f lease.Fence) error
	// Lanes reports every lane's status (group empty: all groups).
	Lanes(ctx context.Context, group string) ([]LaneStatus, error)
}
