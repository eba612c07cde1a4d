package storetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
)

func testGroupAdd(t *testing.T, e *env) {
	g, err := e.AddGroup(e.ctx, grouplease.Group{Name: "alt.binaries.test"})
	require.NoError(t, err)
	require.Equal(t, grouplease.DefaultRangeSize, g.RangeSize)
	require.Equal(t, grouplease.DefaultChunkSize, g.ChunkSize)
	require.False(t, g.Ordered)
	require.NotZero(t, g.ID)

	_, err = e.AddGroup(e.ctx, grouplease.Group{Name: "alt.binaries.test", Ordered: true})
	require.ErrorIs(t, err, edgeindex.ErrConflict)

	got, err := e.Group(e.ctx, "alt.binaries.test")
	require.NoError(t, err)
	require.Equal(t, g, got)
	_, err = e.Group(e.ctx, "no.such.group")
	require.ErrorIs(t, err, edgeindex.ErrNotFound)

	for _, bad := range []grouplease.Group{
		{Name: ""},
		{Name: "has space"},
		{Name: "@x"},    // no newsgroup before the provider
		{Name: "x@y@z"}, // a newsgroup never holds "@"
		{Name: "x@"},    // an "@" names a provider
		{Name: "x@Bad.Provider"},
		{Name: "x", RangeSize: -1},
		{Name: "x", ChunkSize: -5},
	} {
		_, err := e.AddGroup(e.ctx, bad)
		require.ErrorIs(t, err, edgeindex.ErrInvalid, "%+v", bad)
	}
	_, err = e.Group(e.ctx, "x")
	require.ErrorIs(t, err, edgeindex.ErrNotFound, "a refused group is not half-added")
}

func testRangeAdd(t *testing.T, e *env) {
	_, err := e.AddGroup(e.ctx, grouplease.Group{Name: "a.b.c"})
	require.NoError(t, err)
	big := int64(3_000_000_000) // past 2^31: article numbers are int64
	rs, err := e.AddRanges(e.ctx, grouplease.NewRanges{Group: "a.b.c", From: big, To: big + 49_999, Capture: true})
	require.NoError(t, err)
	require.Len(t, rs, 3)
	require.Equal(t, lease.Span{From: big, To: big + 19_999}, lease.Span{From: rs[0].Start, To: rs[0].End})
	require.Equal(t, lease.Span{From: big + 40_000, To: big + 49_999}, lease.Span{From: rs[2].Start, To: rs[2].End})
	for _, r := range rs {
		require.Equal(t, lease.LaneHistory, r.Lane)
		require.Equal(t, lease.StatePending, r.State)
		require.Equal(t, r.Start, r.Next)
		require.True(t, r.Capture)
		require.Equal(t, "a.b.c", r.Group)
		require.Equal(t, r, e.get(t, r.ID))
	}
	tail, err := e.AddRanges(e.ctx, grouplease.NewRanges{Group: "a.b.c", From: big + 50_000, To: big + 50_000, Lane: lease.LaneTail})
	require.NoError(t, err)
	require.Len(t, tail, 1)
	require.Equal(t, lease.LaneTail, tail[0].Lane)
	require.Equal(t, tail[0].Start, tail[0].End, "a one-article range")

	// Overlaps are refused whole, in any lane, and add nothing.
	for _, span := range []lease.Span{{From: big - 10, To: big}, {From: big + 49_999, To: big + 60_000}, {From: big + 100, To: big + 200}, {From: big - 5, To: big + 60_000}} {
		_, err := e.AddRanges(e.ctx, grouplease.NewRanges{Group: "a.b.c", From: span.From, To: span.To, Lane: lease.LaneTail})
		require.ErrorIs(t, err, edgeindex.ErrConflict, "%v", span)
	}
	all, err := e.Ranges(e.ctx, grouplease.RangeFilter{Group: "a.b.c"})
	require.NoError(t, err)
	require.Len(t, all, 4)
}

func testRangeAddBadInput(t *testing.T, e *env) {
	e.group(t, "g", false)
	for name, nr := range map[string]grouplease.NewRanges{
		"from after to": {Group: "g", From: 10, To: 9},
		"negative":      {Group: "g", From: -5, To: 9},
		"unknown lane":  {Group: "g", From: 1, To: 9, Lane: "sideways"},
		"too many":      {Group: "g", From: 0, To: 1 << 62},
	} {
		_, err := e.AddRanges(e.ctx, nr)
		require.ErrorIs(t, err, edgeindex.ErrInvalid, name)
	}
	_, err := e.AddRanges(e.ctx, grouplease.NewRanges{Group: "nope", From: 1, To: 9})
	require.ErrorIs(t, err, edgeindex.ErrNotFound)
	all, err := e.Ranges(e.ctx, grouplease.RangeFilter{})
	require.NoError(t, err)
	require.Empty(t, all, "bad input writes nothing")

	_, err = e.Grant(e.ctx, "n", 0)
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
	_, err = e.Grant(e.ctx, "", ttl)
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
	_, err = e.Ranges(e.ctx, grouplease.RangeFilter{State: "sleeping"})
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
}

func testRangesList(t *testing.T, e *env) {
	e.group(t, "g", false)
	e.group(t, "h", false)
	e.ranges(t, "g", 1, 500, lease.LaneHistory)
	e.ranges(t, "h", 1, 200, lease.LaneHistory)
	l := e.grant(t, "a")
	var ids []int64
	after := int64(0)
	for {
		rs, err := e.Ranges(e.ctx, grouplease.RangeFilter{Group: "g", After: after, Limit: 2})
		require.NoError(t, err)
		if len(rs) == 0 {
			break
		}
		for _, r := range rs {
			require.Equal(t, "g", r.Group)
			ids = append(ids, r.ID)
		}
		after = rs[len(rs)-1].ID
	}
	require.Len(t, ids, 5)
	leased, err := e.Ranges(e.ctx, grouplease.RangeFilter{State: lease.StateLeased})
	require.NoError(t, err)
	require.Len(t, leased, 1)
	require.Equal(t, l.Range.ID, leased[0].ID)
	_, err = e.Range(e.ctx, 123456)
	require.ErrorIs(t, err, edgeindex.ErrNotFound)
}
