package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/edgeindex/edgeindex"
)

// ErrNoWork means there is nothing to grant right now. The errors every
// package shares (ErrInvalid, ErrLeaseLost, ...) are the edgeindex
// package's.
var ErrNoWork = errors.New("no work")

// Lane is an ordering lane of a group: history backfill or tail for new posts.
type Lane string

// The two lanes.
const (
	LaneHistory Lane = "history"
	LaneTail    Lane = "tail"
)

// ParseLane returns the lane named s; the empty string means history.
func ParseLane(s string) (Lane, error) {
	switch Lane(s) {
	case "", LaneHistory:
		return LaneHistory, nil
	case LaneTail:
		return LaneTail, nil
	}
	return "", edgeindex.Invalidf("lane: history or tail, not %q", s)
}

// Valid reports whether l is history or tail.
func (l Lane) Valid() bool { return l == LaneHistory || l == LaneTail }

// State is a range's state.
type State string

// Range states.
const (
	StatePending State = "pending"
	StateLeased  State = "leased"
	StateDone    State = "done"
	StateFailed  State = "failed"
)

// Valid reports whether s is one of the four range states.
func (s State) Valid() bool {
	switch s {
	case StatePending, StateLeased, StateDone, StateFailed:
		return true
	}
	return false
}

// Range is an inclusive span [Start, End] of article numbers in one group's
// lane. Next is the resume point: the first article not yet covered by a
// stored batch.
type Range struct {
	ID       int64  `json:"id"`
	Group    string `json:"group"`
	GroupID  int64  `json:"groupId"`
	Lane     Lane   `json:"lane"`
	Start    int64  `json:"start"`
	End      int64  `json:"end"`
	Next     int64  `json:"next"`
	Capture  bool   `json:"capture"`
	State    State  `json:"state"`
	Attempts int    `json:"attempts"`
	Headers  int64  `json:"headers"`
	// Reason is why the range last failed a chunk; empty when it never did.
	Reason string `json:"reason,omitempty"`
	// Repair marks a range that fetches missing articles again: it holds
	// only article numbers a worker found absent, and is granted like an
	// unordered range even in an ordered group.
	Repair bool `json:"repair,omitempty"`
}

// Lease is a grant of one range to one node, fenced by Token.
type Lease struct {
	Range     Range     `json:"range"`
	Token     int64     `json:"token"`
	Node      string    `json:"-"`
	ExpiresAt time.Time `json:"expiresAt"`
	TTL       Seconds   `json:"ttlSeconds"`
	ChunkSize int64     `json:"chunkSize"`
}

// Seconds is a duration that encodes in JSON as whole seconds.
type Seconds time.Duration

// MarshalJSON writes the duration as a number of seconds.
func (s Seconds) MarshalJSON() ([]byte, error) {
	return fmt.Appendf(nil, "%d", int64(time.Duration(s)/time.Second)), nil
}

// UnmarshalJSON reads a number of seconds.
func (s *Seconds) UnmarshalJSON(b []byte) error {
	var n float64
	if _, err := fmt.Sscan(string(b), &n); err != nil {
		return fmt.Errorf("ttlSeconds: %w", err)
	}
	*s = Seconds(time.Duration(n * float64(time.Second)))
	return nil
}

// Fence names the holder of a lease: who it is and which grant it holds.
type Fence struct {
	Node  string
	Token int64
}

// Held names a held range by its id and the fence it is held under.
type Held struct {
	RangeID int64
	Fence   Fence
}

// Store is the design card's LeaseStore: range leases of unordered groups
// (Grant) and the fenced calls that act on any held range lease. Every call
// that takes a Fence checks the token and the holder in the same statement or
// transaction as its write, and returns ErrLeaseLost when either is stale.
type Store interface {
	// Grant leases one pending or expired range of an unordered group to
	// node: tail before history, then the lowest start. A range reported
	// corrupt may wait a while (a retry delay) before it is eligible again.
	// It returns ErrNoWork when there is none. A re-granted range keeps its
	// Next.
	Grant(ctx context.Context, node string, ttl time.Duration) (Lease, error)
	// GrantMany is Grant made n times at once for node: it returns up to n
	// leases of distinct ranges, in grant order, fewer (or none, with no
	// error) when there is less work.
	GrantMany(ctx context.Context, node string, n int, ttl time.Duration) ([]Lease, error)
	// Heartbeat renews the lease for ttl and returns the new expiry.
	Heartbeat(ctx context.Context, rangeID int64, f Fence, ttl time.Duration) (time.Time, error)
	// Finish marks the range done; ErrConflict unless Next > End.
	Finish(ctx context.Context, rangeID int64, f Fence) error
	// FinishMany is Finish for each of distinct ranges at once: the error
	// Finish would have returned for each, in their order. It fails as a
	// whole only when ctx ends or the store is closed.
	FinishMany(ctx context.Context, ranges []Held) ([]error, error)
	// Release gives the range back as pending, keeping Next, counting no attempt.
	Release(ctx context.Context, rangeID int64, f Fence) error
	// Corrupt reports that the chunk starting at from does not inflate or
	// parse: the range goes back to pending with one more attempt, or to
	// failed (keeping reason) at the store's maximum attempts.
	Corrupt(ctx context.Context, rangeID int64, f Fence, from int64, reason string) (Range, error)
	// Check returns the range if f holds its lease, and ErrLeaseLost if not.
	Check(ctx context.Context, rangeID int64, f Fence) (Lease, error)
	// Held lists the leased ranges, expired or not, by node and start.
	Held(ctx context.Context) ([]Lease, error)
}
