package storetest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/node"
)

func testFleetReads(t *testing.T, e *env) {
	_, err := e.AddNode(e.ctx, "edge-1", node.HashToken("t1"))
	require.NoError(t, err)
	got, err := e.Node(e.ctx, "edge-1")
	require.NoError(t, err)
	require.Equal(t, "edge-1", got.Name)
	_, err = e.Node(e.ctx, "nope")
	require.ErrorIs(t, err, edgeindex.ErrNotFound)

	e.group(t, "g", false)
	e.ranges(t, "g", 1, 300, lease.LaneHistory)
	a := e.grant(t, "edge-1")
	b := e.grant(t, "edge-0")
	held, err := e.Held(e.ctx)
	require.NoError(t, err)
	require.Len(t, held, 2)
	require.Equal(t, "edge-0", held[0].Node, "by node")
	require.Equal(t, b.Token, held[0].Token)
	require.Equal(t, a.ExpiresAt, held[1].ExpiresAt)

	for from := int64(1); from <= 100; from += 20 {
		_, err := e.Put(e.ctx, a.Range.ID, fence(a), batch.Batch{From: from, To: from + 19, Headers: 19, Items: items(fmt.Sprint(from))})
		require.NoError(t, err)
	}
	recs, err := e.Batches(e.ctx, "edge-1", 0, 2)
	require.NoError(t, err)
	require.Len(t, recs, 2)
	require.Equal(t, int64(81), recs[0].From, "newest first")
	require.Equal(t, int64(61), recs[1].From)
	require.Equal(t, int64(19), recs[0].Headers)
	require.Equal(t, int64(1), recs[0].Items)
	require.Equal(t, a.Range.ID, recs[0].Range)
	require.Equal(t, e.clock.Now(), recs[0].At)
	older, err := e.Batches(e.ctx, "edge-1", recs[1].ID, 10)
	require.NoError(t, err)
	require.Len(t, older, 3)
	require.Equal(t, int64(1), older[2].From)
	none, err := e.Batches(e.ctx, "edge-0", 0, 0)
	require.NoError(t, err)
	require.Empty(t, none)
	_, err = e.Batches(e.ctx, "edge-1", -1, 0)
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
}
