package lease_test

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/lease"
)

func TestSpans(t *testing.T) {
	t.Parallel()
	span := func(f, to int64) lease.Span { return lease.Span{From: f, To: to} }
	cases := []struct {
		start, end, size int64
		want             []lease.Span
	}{
		{1000, 5999, 2000, []lease.Span{span(1000, 2999), span(3000, 4999), span(5000, 5999)}},
		{1, 10, 10, []lease.Span{span(1, 10)}},
		{1, 10, 100, []lease.Span{span(1, 10)}},
		{5, 5, 1, []lease.Span{span(5, 5)}},
		{7, 6, 1, nil},
		{1, 10, 0, nil},
		{math.MaxInt64 - 4, math.MaxInt64, 2, []lease.Span{span(math.MaxInt64-4, math.MaxInt64-3), span(math.MaxInt64-2, math.MaxInt64-1), span(math.MaxInt64, math.MaxInt64)}},
	}
	for _, c := range cases {
		got := lease.Spans(c.start, c.end, c.size)
		require.Equal(t, c.want, got, "%d..%d by %d", c.start, c.end, c.size)
		for _, s := range got {
			at, ok := lease.SpanAt(c.start, c.end, c.size, s.To)
			require.True(t, ok)
			require.Equal(t, s, at)
			require.True(t, lease.IsChunkStart(c.start, c.end, c.size, s.From))
			if s.Len() > 1 {
				require.False(t, lease.IsChunkStart(c.start, c.end, c.size, s.From+1))
			}
		}
	}
	_, ok := lease.SpanAt(10, 20, 5, 21)
	require.False(t, ok)
	_, ok = lease.SpanAt(10, 20, 5, 9)
	require.False(t, ok)
}

func TestParseLane(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]lease.Lane{"": lease.LaneHistory, "history": lease.LaneHistory, "tail": lease.LaneTail} {
		got, err := lease.ParseLane(in)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	_, err := lease.ParseLane("x")
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
	require.EqualError(t, err, `lane: history or tail, not "x"`)
}

func TestLeaseJSON(t *testing.T) {
	t.Parallel()
	l := lease.Lease{
		Range: lease.Range{ID: 12, Group: "alt.binaries.test", GroupID: 3, Lane: lease.LaneHistory, Start: 1000,
			End: 20999, Next: 1000, State: lease.StateLeased},
		Token: 7, Node: "hidden", ExpiresAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		TTL: lease.Seconds(time.Minute), ChunkSize: 1000,
	}
	b, err := json.Marshal(l)
	require.NoError(t, err)
	require.JSONEq(t, `{"range": {"id": 12, "group": "alt.binaries.test", "groupId": 3, "lane": "history",
		"start": 1000, "end": 20999, "next": 1000, "capture": false, "state": "leased", "attempts": 0, "headers": 0},
		"token": 7, "expiresAt": "2026-01-02T03:04:05Z", "ttlSeconds": 60, "chunkSize": 1000}`, string(b))
	var back lease.Lease
	require.NoError(t, json.Unmarshal(b, &back))
	l.Node = ""
	require.Equal(t, l, back)
	require.Error(t, json.Unmarshal([]byte(`{"ttlSeconds": "x"}`), &back))
}

func ExampleSpans() {
	for _, s := range lease.Spans(1000, 5999, 2000) {
		fmt.Println(s.From, s.To)
	}
	// Output:
	// 1000 2999
	// 3000 4999
	// 5000 5999
}
