package storetest

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
)

func testSnapshots(t *testing.T, e *env) {
	g := e.group(t, "o", true)
	e.ranges(t, "o", 1, 100, lease.LaneHistory)
	gl := e.grantLane(t, "a", lease.LaneHistory)
	f := laneFence(gl)
	chk, err := e.CheckSnapshot(e.ctx, g.ID, lease.LaneHistory, f)
	require.NoError(t, err)
	require.Equal(t, grouplease.SnapshotCheck{End: 100}, chk, "no snapshot yet; the lane's planned end")
	put := func(f lease.Fence, next, size int64, file string) error {
		return e.PutSnapshot(e.ctx, g.ID, lease.LaneHistory, f, grouplease.SnapshotFile{Snapshot: grouplease.Snapshot{Next: next, Size: size}, File: file})
	}

	require.NoError(t, put(f, 51, 100, "a"))
	require.NoError(t, put(f, 51, 120, "b"), "the same point again")
	err = put(f, 50, 1, "c")
	require.ErrorIs(t, err, grouplease.ErrSnapshotOlder)
	require.ErrorIs(t, err, edgeindex.ErrConflict)
	require.ErrorIs(t, put(lease.Fence{Node: "b", Token: gl.Token}, 90, 1, "d"), edgeindex.ErrLeaseLost)
	for _, bad := range []struct {
		next int64
		file string
	}{{0, "e"}, {-1, "e"}, {102, "e"}, {math.MaxInt64, "e"}, {60, ""}} {
		require.ErrorIs(t, put(f, bad.next, 1, bad.file), edgeindex.ErrInvalid, "%+v", bad)
	}
	require.NoError(t, put(f, 101, 7, "end"), "up to the lane's planned end + 1")
	chk, err = e.CheckSnapshot(e.ctx, g.ID, lease.LaneHistory, f)
	require.NoError(t, err)
	want := &grouplease.SnapshotFile{Snapshot: grouplease.Snapshot{Next: 101, Size: 7, Token: gl.Token}, File: "end"}
	require.Equal(t, want, chk.Current)

	require.NoError(t, e.ReleaseLane(e.ctx, g.ID, lease.LaneHistory, f))
	_, err = e.CheckSnapshot(e.ctx, g.ID, lease.LaneHistory, f)
	require.ErrorIs(t, err, edgeindex.ErrLeaseLost)
	gb := e.grantLane(t, "b", lease.LaneHistory)
	require.Equal(t, &want.Snapshot, gb.Snapshot, "the next holder gets the snapshot")

	// An operator's reset forgets it, whoever holds the lane.
	old, err := e.ResetSnapshot(e.ctx, g.ID, lease.LaneHistory)
	require.NoError(t, err)
	require.Equal(t, want, old)
	old, err = e.ResetSnapshot(e.ctx, g.ID, lease.LaneHistory)
	require.NoError(t, err)
	require.Nil(t, old, "nothing left to reset")
	chk, err = e.CheckSnapshot(e.ctx, g.ID, lease.LaneHistory, laneFence(gb))
	require.NoError(t, err)
	require.Nil(t, chk.Current)
	require.NoError(t, e.PutSnapshot(e.ctx, g.ID, lease.LaneHistory, laneFence(gb),
		grouplease.SnapshotFile{Snapshot: grouplease.Snapshot{Next: 1}, File: "f"}), "after a reset any next goes")
	_, err = e.ResetSnapshot(e.ctx, g.ID, lease.LaneTail)
	require.ErrorIs(t, err, edgeindex.ErrNotFound)
	_, err = e.ResetSnapshot(e.ctx, g.ID, "sideways")
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
}
