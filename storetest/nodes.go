package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/node"
)

func testNodes(t *testing.T, e *env) {
	tok, err := node.NewToken()
	require.NoError(t, err)
	n, err := e.AddNode(e.ctx, "edge-1", node.HashToken(tok))
	require.NoError(t, err)
	require.Equal(t, "edge-1", n.Name)
	require.Equal(t, e.clock.Now(), n.CreatedAt)
	_, err = e.AddNode(e.ctx, "edge-1", node.HashToken("other"))
	require.ErrorIs(t, err, edgeindex.ErrConflict)
	for _, bad := range []string{"", "has space", "a/b", string(make([]byte, 65))} {
		_, err = e.AddNode(e.ctx, bad, node.HashToken("x"))
		require.ErrorIs(t, err, edgeindex.ErrInvalid, "%q", bad)
	}

	e.clock.Advance(time.Minute)
	got, err := e.Authenticate(e.ctx, node.HashToken(tok))
	require.NoError(t, err)
	require.Equal(t, "edge-1", got.Name)
	require.Equal(t, e.clock.Now(), got.LastSeen)
	_, err = e.Authenticate(e.ctx, node.HashToken("wrong"))
	require.ErrorIs(t, err, edgeindex.ErrNotFound)
	list, err := e.Nodes(e.ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, e.clock.Now(), list[0].LastSeen)

	// Removing a node gives its leases back.
	g := e.group(t, "o", true)
	e.ranges(t, "o", 1, 100, lease.LaneHistory)
	e.group(t, "u", false)
	e.ranges(t, "u", 1, 100, lease.LaneHistory)
	l := e.grant(t, "edge-1")
	gl := e.grantLane(t, "edge-1", lease.LaneHistory)
	ol, err := e.Next(e.ctx, g.ID, lease.LaneHistory, laneFence(gl), ttl)
	require.NoError(t, err)
	require.NoError(t, e.RemoveNode(e.ctx, "edge-1"))
	require.ErrorIs(t, e.RemoveNode(e.ctx, "edge-1"), edgeindex.ErrNotFound)
	_, err = e.Authenticate(e.ctx, node.HashToken(tok))
	require.ErrorIs(t, err, edgeindex.ErrNotFound)
	require.Equal(t, lease.StatePending, e.get(t, l.Range.ID).State)
	require.Equal(t, lease.StatePending, e.get(t, ol.Range.ID).State)
	_, err = e.Heartbeat(e.ctx, l.Range.ID, fence(l), ttl)
	require.ErrorIs(t, err, edgeindex.ErrLeaseLost)
	other := e.grantLane(t, "edge-2", lease.LaneHistory)
	require.Greater(t, other.Token, gl.Token)
}
