package storetest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
)

const ttl = time.Minute

// group adds a group with small sizes: ranges of 100, chunks of 10.
func (e *env) group(t *testing.T, name string, ordered bool) grouplease.Group {
	t.Helper()
	g, err := e.AddGroup(e.ctx, grouplease.Group{Name: name, Ordered: ordered, RangeSize: 100, ChunkSize: 10})
	require.NoError(t, err)
	return g
}

func (e *env) ranges(t *testing.T, group string, from, to int64, lane lease.Lane) []lease.Range {
	t.Helper()
	rs, err := e.AddRanges(e.ctx, grouplease.NewRanges{Group: group, From: from, To: to, Lane: lane})
	require.NoError(t, err)
	return rs
}

func (e *env) grant(t *testing.T, nodeName string) lease.Lease {
	t.Helper()
	l, err := e.Grant(e.ctx, nodeName, ttl)
	require.NoError(t, err)
	return l
}

func (e *env) get(t *testing.T, id int64) lease.Range {
	t.Helper()
	r, err := e.Range(e.ctx, id)
	require.NoError(t, err)
	return r
}

func fence(l lease.Lease) lease.Fence { return lease.Fence{Node: l.Node, Token: l.Token} }

func items(keys ...string) []batch.Item {
	out := make([]batch.Item, len(keys))
	for i, k := range keys {
		out[i] = batch.Item{Key: k, Value: json.RawMessage(fmt.Sprintf(`{"k":%q}`, k))}
	}
	return out
}

// fill stores one batch that covers the rest of the lease's range.
func (e *env) fill(t *testing.T, l lease.Lease, headers int64) {
	t.Helper()
	r := e.get(t, l.Range.ID)
	res, err := e.Put(e.ctx, l.Range.ID, fence(l), batch.Batch{From: r.Next, To: r.End, Headers: headers, Items: items(fmt.Sprintf("k%d", r.ID))})
	require.NoError(t, err)
	require.Equal(t, r.End+1, res.Next)
}
