package grouplease

import (
	"context"

	"github.com/edgeindex/edgeindex/lease"
)

// SnapshotFile is a lane's snapshot and the file that holds its bytes.
type SnapshotFile struct {
	Snapshot
	// File names the file of the bytes, unique to one upload.
	File string
}

// SnapshotCheck is what an upload is checked against before a byte of it
// is stored.
type SnapshotCheck struct {
	// Current is the lane's snapshot; nil when it has none.
	Current *SnapshotFile
	// End is the end of the lane's last planned range: a snapshot's next
	// is at most End + 1.
	End int64
}

// SnapshotStore keeps the metadata of a lane's snapshot, whose bytes live
// in a file per upload, written before the metadata. The fenced metadata
// update is the only thing that makes a file current, so a refused upload
// never replaces the current bytes; a snapshot's next never goes back.
type SnapshotStore interface {
	// CheckSnapshot returns the lane's current snapshot and planned end if
	// f holds the lane: edgeindex.ErrLeaseLost if it does not, edgeindex.ErrNotFound
	// if the group has no such lane.
	CheckSnapshot(ctx context.Context, groupID int64, lane lease.Lane, f lease.Fence) (SnapshotCheck, error)
	// PutSnapshot records s as the lane's snapshot if f holds the lane,
	// in one transaction: ErrSnapshotOlder when s.Next is before the stored
	// one, edgeindex.ErrInvalid when it is below 1 or past the lane's End + 1.
	// The stored Token is f's.
	PutSnapshot(ctx context.Context, groupID int64, lane lease.Lane, f lease.Fence, s SnapshotFile) error
	// ResetSnapshot forgets the lane's snapshot, whoever holds the lane, and
	// returns the one it forgot (nil when it had none); edgeindex.ErrNotFound
	// if the group has no such lane. An operator's repair: the next upload
	// may start anywhere again.
	ResetSnapshot(ctx context.Context, groupID int64, lane lease.Lane) (*SnapshotFile, error)
}
