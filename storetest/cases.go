package storetest

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/node"
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

func testGroupAdd(t *testing.T, e *env) {
	g, err := e.AddGroup(e.ctx, grouplease.Group{Name: "alt.binaries.test"})
	require.NoError(t, err)
	require.Equal(t, grouplease.DefaultRangeSize, g.RangeSize)
	require.Equal(t, grouplease.DefaultChunkSize, g.ChunkSize)
	require.False(t, g.Ordered)
	require.NotZero(t, g.ID)

	_, err = e.AddGroup(e.ctx, grouplease.Group{Name: "alt.binaries.test", Ordered: true})
	require.ErrorIs(t, err, lease.ErrConflict)

	got, err := e.Group(e.ctx, "alt.binaries.test")
	require.NoError(t, err)
	require.Equal(t, g, got)
	_, err = e.Group(e.ctx, "no.such.group")
	require.ErrorIs(t, err, lease.ErrNotFound)

	for _, bad := range []grouplease.Group{
		{Name: ""},
		{Name: "has space"},
		{Name: "x", RangeSize: -1},
		{Name: "x", ChunkSize: -5},
	} {
		_, err := e.AddGroup(e.ctx, bad)
		require.ErrorIs(t, err, lease.ErrInvalid, "%+v", bad)
	}
	_, err = e.Group(e.ctx, "x")
	require.ErrorIs(t, err, lease.ErrNotFound, "a refused group is not half-added")
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
		require.ErrorIs(t, err, lease.ErrConflict, "%v", span)
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
		require.ErrorIs(t, err, lease.ErrInvalid, name)
	}
	_, err := e.AddRanges(e.ctx, grouplease.NewRanges{Group: "nope", From: 1, To: 9})
	require.ErrorIs(t, err, lease.ErrNotFound)
	all, err := e.Ranges(e.ctx, grouplease.RangeFilter{})
	require.NoError(t, err)
	require.Empty(t, all, "bad input writes nothing")

	_, err = e.Grant(e.ctx, "n", 0)
	require.ErrorIs(t, err, lease.ErrInvalid)
	_, err = e.Grant(e.ctx, "", ttl)
	require.ErrorIs(t, err, lease.ErrInvalid)
	_, err = e.Ranges(e.ctx, grouplease.RangeFilter{State: "sleeping"})
	require.ErrorIs(t, err, lease.ErrInvalid)
}

func testGrantOrder(t *testing.T, e *env) {
	e.group(t, "g1", false)
	e.group(t, "g2", false)
	e.ranges(t, "g1", 1000, 1199, lease.LaneHistory)
	e.ranges(t, "g2", 500, 599, lease.LaneHistory)
	e.ranges(t, "g1", 5000, 5099, lease.LaneTail)
	e.ranges(t, "g2", 4000, 4099, lease.LaneTail)

	var got []int64
	for range 5 {
		l := e.grant(t, "n1")
		require.Equal(t, lease.StateLeased, l.Range.State)
		require.Equal(t, int64(10), l.ChunkSize)
		require.Equal(t, "n1", l.Node)
		require.Equal(t, e.clock.Now().Add(ttl), l.ExpiresAt)
		require.EqualValues(t, ttl, l.TTL)
		got = append(got, l.Range.Start)
	}
	require.Equal(t, []int64{4000, 5000, 500, 1000, 1100}, got, "tail first, then the lowest start")
	_, err := e.Grant(e.ctx, "n1", ttl)
	require.ErrorIs(t, err, lease.ErrNoWork)
}

func testGrantSkipsOrdered(t *testing.T, e *env) {
	e.group(t, "ordered", true)
	e.ranges(t, "ordered", 1, 100, lease.LaneTail)
	_, err := e.Grant(e.ctx, "n1", ttl)
	require.ErrorIs(t, err, lease.ErrNoWork, "an ordered group's ranges go only through its lanes")

	e.group(t, "plain", false)
	e.ranges(t, "plain", 1, 10, lease.LaneHistory)
	l := e.grant(t, "n1")
	e.fill(t, l, 10)
	require.NoError(t, e.Finish(e.ctx, l.Range.ID, fence(l)))
	_, err = e.Grant(e.ctx, "n1", ttl)
	require.ErrorIs(t, err, lease.ErrNoWork, "a done range is never granted again")
}

func testExpiryAndRegrant(t *testing.T, e *env) {
	e.group(t, "g", false)
	e.ranges(t, "g", 1, 100, lease.LaneHistory)
	a := e.grant(t, "a")
	_, err := e.Put(e.ctx, a.Range.ID, fence(a), batch.Batch{From: 1, To: 30, Headers: 30, Items: items("x")})
	require.NoError(t, err)

	// Not expired: nobody else gets it.
	e.clock.Advance(ttl - time.Second)
	_, err = e.Grant(e.ctx, "b", ttl)
	require.ErrorIs(t, err, lease.ErrNoWork)

	// Expired but not granted again: the holder's heartbeat renews it.
	e.clock.Advance(2 * time.Second)
	exp, err := e.Heartbeat(e.ctx, a.Range.ID, fence(a), ttl)
	require.NoError(t, err)
	require.Equal(t, e.clock.Now().Add(ttl), exp)
	_, err = e.Grant(e.ctx, "b", ttl)
	require.ErrorIs(t, err, lease.ErrNoWork)

	// Expired and granted to b: b resumes from next with a greater token.
	e.clock.Advance(ttl + time.Second)
	b := e.grant(t, "b")
	require.Equal(t, a.Range.ID, b.Range.ID)
	require.Equal(t, int64(31), b.Range.Next, "a re-grant keeps next")
	require.Greater(t, b.Token, a.Token)
	require.Equal(t, int64(30), b.Range.Headers)

	// a woke up: every write is refused and changes nothing.
	_, err = e.Heartbeat(e.ctx, a.Range.ID, fence(a), ttl)
	require.ErrorIs(t, err, lease.ErrLeaseLost)
	_, err = e.Put(e.ctx, a.Range.ID, fence(a), batch.Batch{From: 31, To: 40, Items: items("late")})
	require.ErrorIs(t, err, lease.ErrLeaseLost)
	require.Equal(t, int64(31), e.get(t, a.Range.ID).Next)

	// A's token even with b's name is refused: the token fences too.
	_, err = e.Heartbeat(e.ctx, a.Range.ID, lease.Fence{Node: "b", Token: a.Token}, ttl)
	require.ErrorIs(t, err, lease.ErrLeaseLost)
}

func testFencing(t *testing.T, e *env) {
	e.group(t, "g", false)
	e.ranges(t, "g", 1, 100, lease.LaneHistory)
	l := e.grant(t, "a")
	id := l.Range.ID
	stale := []lease.Fence{
		{Node: "a", Token: l.Token - 1},
		{Node: "a", Token: l.Token + 1},
		{Node: "b", Token: l.Token},
	}
	for _, f := range stale {
		_, err := e.Heartbeat(e.ctx, id, f, ttl)
		require.ErrorIs(t, err, lease.ErrLeaseLost)
		_, err = e.Check(e.ctx, id, f)
		require.ErrorIs(t, err, lease.ErrLeaseLost)
		_, err = e.Put(e.ctx, id, f, batch.Batch{From: 1, To: 100, Headers: 1, Items: items("x")})
		require.ErrorIs(t, err, lease.ErrLeaseLost)
		require.ErrorIs(t, e.Finish(e.ctx, id, f), lease.ErrLeaseLost)
		require.ErrorIs(t, e.Release(e.ctx, id, f), lease.ErrLeaseLost)
		_, err = e.Corrupt(e.ctx, id, f, 1, "bad")
		require.ErrorIs(t, err, lease.ErrLeaseLost)
	}
	r := e.get(t, id)
	require.Equal(t, lease.StateLeased, r.State)
	require.Equal(t, int64(1), r.Next)
	require.Zero(t, r.Attempts)

	got, err := e.Check(e.ctx, id, fence(l))
	require.NoError(t, err)
	require.Equal(t, l.Token, got.Token)
	require.Equal(t, l.Range.ID, got.Range.ID)

	for _, missing := range []error{
		func() error { _, err := e.Heartbeat(e.ctx, 999999, fence(l), ttl); return err }(),
		func() error { _, err := e.Check(e.ctx, 999999, fence(l)); return err }(),
		func() error { _, err := e.Put(e.ctx, 999999, fence(l), batch.Batch{From: 1, To: 1}); return err }(),
		e.Finish(e.ctx, 999999, fence(l)),
		e.Release(e.ctx, 999999, fence(l)),
	} {
		require.ErrorIs(t, missing, lease.ErrNotFound)
	}
	_, err = e.Heartbeat(e.ctx, id, fence(l), -time.Second)
	require.ErrorIs(t, err, lease.ErrInvalid)
}

func testFinish(t *testing.T, e *env) {
	e.group(t, "g", false)
	e.ranges(t, "g", 1, 100, lease.LaneHistory)
	l := e.grant(t, "a")
	_, err := e.Put(e.ctx, l.Range.ID, fence(l), batch.Batch{From: 1, To: 50, Headers: 40, Items: items("x")})
	require.NoError(t, err)
	err = e.Finish(e.ctx, l.Range.ID, fence(l))
	require.ErrorIs(t, err, lease.ErrConflict)
	require.ErrorContains(t, err, "reach 50")
	require.ErrorContains(t, err, "ends at 100")
	require.Equal(t, lease.StateLeased, e.get(t, l.Range.ID).State)

	_, err = e.Put(e.ctx, l.Range.ID, fence(l), batch.Batch{From: 51, To: 100, Headers: 45})
	require.NoError(t, err)
	require.NoError(t, e.Finish(e.ctx, l.Range.ID, fence(l)))
	r := e.get(t, l.Range.ID)
	require.Equal(t, lease.StateDone, r.State)
	require.Equal(t, int64(101), r.Next)
	require.Equal(t, int64(85), r.Headers)
	require.ErrorIs(t, e.Finish(e.ctx, l.Range.ID, fence(l)), lease.ErrLeaseLost, "finishing twice")

	lanes, err := e.Lanes(e.ctx, "g")
	require.NoError(t, err)
	require.Len(t, lanes, 1)
	require.Equal(t, int64(85), lanes[0].Headers, "the lane counts the finished range's headers")
	require.Equal(t, int64(1), lanes[0].RangesDone)
	require.Equal(t, int64(101), lanes[0].Next)
	require.Equal(t, map[lease.State]int64{lease.StateDone: 1}, lanes[0].Ranges)
}

func testRelease(t *testing.T, e *env) {
	e.group(t, "g", false)
	e.ranges(t, "g", 1, 100, lease.LaneHistory)
	a := e.grant(t, "a")
	_, err := e.Put(e.ctx, a.Range.ID, fence(a), batch.Batch{From: 1, To: 20, Headers: 20})
	require.NoError(t, err)
	require.NoError(t, e.Release(e.ctx, a.Range.ID, fence(a)))
	r := e.get(t, a.Range.ID)
	require.Equal(t, lease.StatePending, r.State)
	require.Zero(t, r.Attempts)
	require.Equal(t, int64(21), r.Next)
	require.ErrorIs(t, e.Release(e.ctx, a.Range.ID, fence(a)), lease.ErrLeaseLost)

	b := e.grant(t, "b") // at once: a released range needs no expiry
	require.Equal(t, a.Range.ID, b.Range.ID)
	require.Equal(t, int64(21), b.Range.Next)
	require.Greater(t, b.Token, a.Token)
}

func testCorrupt(t *testing.T, e *env) {
	e.group(t, "g", false)
	e.ranges(t, "g", 1, 100, lease.LaneHistory) // chunks 1-10, 11-20, ...
	l := e.grant(t, "a")
	for _, from := range []int64{0, 2, 15, 101} {
		_, err := e.Corrupt(e.ctx, l.Range.ID, fence(l), from, "bad gzip")
		require.ErrorIs(t, err, lease.ErrInvalid, "from %d", from)
	}
	require.Equal(t, lease.StateLeased, e.get(t, l.Range.ID).State, "a refused report changes nothing")
	_, err := e.Put(e.ctx, l.Range.ID, fence(l), batch.Batch{From: 1, To: 20, Headers: 20})
	require.NoError(t, err)

	for attempt := 1; attempt <= 5; attempt++ {
		r, err := e.Corrupt(e.ctx, l.Range.ID, fence(l), 21, "bad gzip")
		require.NoError(t, err)
		require.Equal(t, attempt, r.Attempts)
		require.Equal(t, int64(21), r.Next, "next is kept")
		if attempt < 5 {
			require.Equal(t, lease.StatePending, r.State)
			l = e.grant(t, "a")
			continue
		}
		require.Equal(t, lease.StateFailed, r.State, "failed at the fifth attempt")
		require.Contains(t, r.Reason, "bad gzip")
		require.Contains(t, r.Reason, "21")
	}
	_, err = e.Grant(e.ctx, "a", ttl)
	require.ErrorIs(t, err, lease.ErrNoWork, "a failed range is not granted")

	n, err := e.Retry(e.ctx, "g")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	r := e.get(t, l.Range.ID)
	require.Equal(t, lease.StatePending, r.State)
	require.Zero(t, r.Attempts)
	require.Equal(t, int64(21), r.Next)
	n, err = e.Retry(e.ctx, "g", r.ID)
	require.NoError(t, err)
	require.Zero(t, n, "retry touches only failed ranges")
	_, err = e.Retry(e.ctx, "nope")
	require.ErrorIs(t, err, lease.ErrNotFound)
}

func testBatchRules(t *testing.T, e *env) {
	e.group(t, "g", false)
	e.ranges(t, "g", 1000, 1099, lease.LaneHistory)
	l := e.grant(t, "a")
	id, f := l.Range.ID, fence(l)
	put := func(b batch.Batch) (batch.Result, error) { return e.Put(e.ctx, id, f, b) }

	res, err := put(batch.Batch{From: 1000, To: 1009, Headers: 9, Items: items("a", "b")})
	require.NoError(t, err)
	require.Equal(t, batch.Result{Next: 1010}, res)

	res, err = put(batch.Batch{From: 1000, To: 1009, Headers: 9, Items: items("a", "b")})
	require.NoError(t, err)
	require.Equal(t, batch.Result{Next: 1010, Duplicate: true}, res, "a retry is a duplicate, not an error")

	for name, c := range map[string]struct {
		b    batch.Batch
		want error
	}{
		"gap":           {batch.Batch{From: 1011, To: 1020}, batch.ErrGap},
		"overlap":       {batch.Batch{From: 1005, To: 1020}, batch.ErrOverlap},
		"from after to": {batch.Batch{From: 1010, To: 1009}, batch.ErrMalformed},
		"past the end":  {batch.Batch{From: 1010, To: 1100}, batch.ErrMalformed},
		"empty key":     {batch.Batch{From: 1010, To: 1019, Items: []batch.Item{{Key: "k"}, {Key: ""}}}, batch.ErrMalformed},
		"neg headers":   {batch.Batch{From: 1010, To: 1019, Headers: -1}, batch.ErrMalformed},
	} {
		_, err := put(c.b)
		require.ErrorIs(t, err, c.want, name)
	}
	_, err = put(batch.Batch{From: 1011, To: 1020})
	require.ErrorIs(t, err, lease.ErrConflict, "a gap is a conflict")
	_, err = put(batch.Batch{From: 1010, To: 1100})
	require.ErrorIs(t, err, lease.ErrInvalid, "a malformed batch is invalid")

	r := e.get(t, id)
	require.Equal(t, int64(1010), r.Next, "refused batches change nothing")
	require.Equal(t, int64(9), r.Headers)
	require.Len(t, e.feed(t, "g", 100, 2), 2, "only the first batch's items are stored")

	// An empty batch (no items) advances next too: articles without results.
	res, err = put(batch.Batch{From: 1010, To: 1099, Headers: 90})
	require.NoError(t, err)
	require.Equal(t, int64(1100), res.Next)
}

func testResultsFeed(t *testing.T, e *env) {
	e.group(t, "g1", false)
	e.group(t, "g2", false)
	e.ranges(t, "g1", 1, 100, lease.LaneHistory)
	e.ranges(t, "g2", 1, 100, lease.LaneHistory)
	want := map[string][]string{}
	for range 2 {
		l := e.grant(t, "a")
		for from := int64(1); from <= 100; from += 25 {
			var keys []string
			for i := range 7 {
				keys = append(keys, fmt.Sprintf("%s-%d-%d", l.Range.Group, from, i))
			}
			_, err := e.Put(e.ctx, l.Range.ID, fence(l), batch.Batch{From: from, To: from + 24, Headers: 25, Items: items(keys...)})
			require.NoError(t, err)
			want[l.Range.Group] = append(want[l.Range.Group], keys...)
		}
	}
	read := func(group string, limit int) []batch.Stored {
		return e.feed(t, group, limit, len(want[group]))
	}
	keysOf := func(s []batch.Stored) []string {
		var out []string
		for _, it := range s {
			out = append(out, it.Key)
		}
		return out
	}
	g1 := read("g1", 5)
	require.Equal(t, want["g1"], keysOf(g1), "every item once, in storage order")
	require.Equal(t, want["g2"], keysOf(read("g2", 3)))
	all := e.feed(t, "", 4, 56)
	require.Len(t, all, 56)
	require.Equal(t, `{"k":"g1-1-0"}`, string(g1[0].Value))
	require.Equal(t, int64(1), g1[0].From)
	require.Equal(t, int64(25), g1[0].To)
	require.NotZero(t, g1[0].Range)

	for _, bad := range []string{"x", "1.", ".1", "-1.2", "1.2.3"} {
		_, err := e.Results(e.ctx, batch.Query{After: bad})
		require.ErrorIs(t, err, lease.ErrInvalid, bad)
	}
	_, err := e.Results(e.ctx, batch.Query{Limit: -1})
	require.ErrorIs(t, err, lease.ErrInvalid)
	_, err = e.Results(e.ctx, batch.Query{Group: "nope"})
	require.ErrorIs(t, err, lease.ErrNotFound)
}

func (e *env) grantLane(t *testing.T, nodeName string, lane lease.Lane) grouplease.GroupLease {
	t.Helper()
	gl, err := e.GrantLane(e.ctx, nodeName, lane, ttl)
	require.NoError(t, err)
	return gl
}

func laneFence(gl grouplease.GroupLease) lease.Fence {
	return lease.Fence{Node: gl.Node, Token: gl.Token}
}

func testLaneGrant(t *testing.T, e *env) {
	e.group(t, "plain", false)
	e.ranges(t, "plain", 1, 100, lease.LaneHistory)
	_, err := e.GrantLane(e.ctx, "a", lease.LaneHistory, ttl)
	require.ErrorIs(t, err, lease.ErrNoWork, "unordered groups have no lanes to grant")

	g := e.group(t, "ordered", true)
	e.ranges(t, "ordered", 500, 699, lease.LaneHistory)
	_, err = e.GrantLane(e.ctx, "a", lease.LaneTail, ttl)
	require.ErrorIs(t, err, lease.ErrNoWork, "the tail lane has no ranges")
	_, err = e.GrantLane(e.ctx, "a", "sideways", ttl)
	require.ErrorIs(t, err, lease.ErrInvalid)

	gl := e.grantLane(t, "a", lease.LaneHistory)
	require.Equal(t, grouplease.GroupRef{ID: g.ID, Name: "ordered"}, gl.Group)
	require.Equal(t, lease.LaneHistory, gl.Lane)
	require.Equal(t, int64(500), gl.Next)
	require.Nil(t, gl.Snapshot)
	require.Equal(t, e.clock.Now().Add(ttl), gl.ExpiresAt)
	_, err = e.GrantLane(e.ctx, "b", lease.LaneHistory, ttl)
	require.ErrorIs(t, err, lease.ErrNoWork, "a held lane is not granted")

	e.clock.Advance(ttl / 2)
	exp, err := e.HeartbeatLane(e.ctx, g.ID, lease.LaneHistory, laneFence(gl), ttl)
	require.NoError(t, err)
	require.Equal(t, e.clock.Now().Add(ttl), exp)
	_, err = e.HeartbeatLane(e.ctx, g.ID, lease.LaneHistory, lease.Fence{Node: "b", Token: gl.Token}, ttl)
	require.ErrorIs(t, err, lease.ErrLeaseLost)
	_, err = e.HeartbeatLane(e.ctx, g.ID, lease.LaneTail, laneFence(gl), ttl)
	require.ErrorIs(t, err, lease.ErrNotFound)

	e.clock.Advance(ttl + time.Second)
	gb := e.grantLane(t, "b", lease.LaneHistory)
	require.Greater(t, gb.Token, gl.Token, "an expired lane goes to the next asker, with a greater token")
	_, err = e.HeartbeatLane(e.ctx, g.ID, lease.LaneHistory, laneFence(gl), ttl)
	require.ErrorIs(t, err, lease.ErrLeaseLost)

	lanes, err := e.Lanes(e.ctx, "ordered")
	require.NoError(t, err)
	require.Len(t, lanes, 1)
	require.Equal(t, "b", lanes[0].Holder)
	require.Equal(t, gb.Token, lanes[0].Token)
	require.Equal(t, int64(500), lanes[0].Next)
	require.Equal(t, map[lease.State]int64{lease.StatePending: 2}, lanes[0].Ranges)
}

func testLaneNext(t *testing.T, e *env) {
	g := e.group(t, "o", true)
	e.ranges(t, "o", 200, 399, lease.LaneHistory)
	e.ranges(t, "o", 1, 199, lease.LaneHistory) // added later, but earlier in article order
	gl := e.grantLane(t, "a", lease.LaneHistory)
	require.Equal(t, int64(1), gl.Next)
	f := laneFence(gl)

	var starts []int64
	for {
		l, err := e.Next(e.ctx, g.ID, lease.LaneHistory, f, ttl)
		if err != nil {
			require.ErrorIs(t, err, lease.ErrNoWork)
			break
		}
		again, err := e.Next(e.ctx, g.ID, lease.LaneHistory, f, ttl)
		require.NoError(t, err)
		require.Equal(t, l.Range.ID, again.Range.ID, "the holder's own range is handed back")
		require.Equal(t, l.Token, again.Token, "with the same token")
		starts = append(starts, l.Range.Start)
		e.fill(t, l, 100)
		require.NoError(t, e.Finish(e.ctx, l.Range.ID, fence(l)))
	}
	require.Equal(t, []int64{1, 101, 200, 300}, starts, "ranges in article order")
	_, err := e.Next(e.ctx, g.ID, lease.LaneHistory, lease.Fence{Node: "b", Token: gl.Token}, ttl)
	require.ErrorIs(t, err, lease.ErrLeaseLost)
	_, err = e.Next(e.ctx, g.ID+1000, lease.LaneHistory, f, ttl)
	require.ErrorIs(t, err, lease.ErrNotFound)

	lanes, err := e.Lanes(e.ctx, "o")
	require.NoError(t, err)
	require.Equal(t, int64(400), lanes[0].Headers)
	require.Equal(t, int64(4), lanes[0].RangesDone)
	require.Equal(t, int64(400), lanes[0].Next)
	_, err = e.GrantLane(e.ctx, "b", lease.LaneHistory, ttl)
	require.ErrorIs(t, err, lease.ErrNoWork, "a lane whose ranges are done has no work")
}

func testLaneChangesHands(t *testing.T, e *env) {
	g := e.group(t, "o", true)
	e.ranges(t, "o", 1, 200, lease.LaneTail)
	ga := e.grantLane(t, "a", lease.LaneTail)
	la, err := e.Next(e.ctx, g.ID, lease.LaneTail, laneFence(ga), ttl)
	require.NoError(t, err)
	_, err = e.Put(e.ctx, la.Range.ID, fence(la), batch.Batch{From: 1, To: 40, Headers: 40})
	require.NoError(t, err)

	// Release: the range in progress goes back; the next holder resumes it.
	require.NoError(t, e.ReleaseLane(e.ctx, g.ID, lease.LaneTail, laneFence(ga)))
	require.Equal(t, lease.StatePending, e.get(t, la.Range.ID).State)
	require.ErrorIs(t, e.ReleaseLane(e.ctx, g.ID, lease.LaneTail, laneFence(ga)), lease.ErrLeaseLost)

	gb := e.grantLane(t, "a", lease.LaneTail) // even the same node gets a new grant
	require.Equal(t, int64(41), gb.Next)
	lb, err := e.Next(e.ctx, g.ID, lease.LaneTail, laneFence(gb), ttl)
	require.NoError(t, err)
	require.Equal(t, la.Range.ID, lb.Range.ID)
	require.Equal(t, int64(41), lb.Range.Next)
	require.Greater(t, lb.Token, la.Token, "a new token")
	_, err = e.Put(e.ctx, la.Range.ID, fence(la), batch.Batch{From: 41, To: 50})
	require.ErrorIs(t, err, lease.ErrLeaseLost, "the old grant is fenced")

	// Expiry: c takes the lane while b's range lease is still unexpired;
	// c's next grants that range again and b is fenced.
	e.clock.Advance(ttl / 2)
	_, err = e.Heartbeat(e.ctx, lb.Range.ID, fence(lb), ttl) // the range lease lives on
	require.NoError(t, err)
	e.clock.Advance(ttl/2 + time.Second)
	gc := e.grantLane(t, "c", lease.LaneTail)
	lc, err := e.Next(e.ctx, g.ID, lease.LaneTail, laneFence(gc), ttl)
	require.NoError(t, err)
	require.Equal(t, lb.Range.ID, lc.Range.ID)
	require.Greater(t, lc.Token, lb.Token)
	_, err = e.Heartbeat(e.ctx, lb.Range.ID, fence(lb), ttl)
	require.ErrorIs(t, err, lease.ErrLeaseLost)
	_, err = e.Next(e.ctx, g.ID, lease.LaneTail, laneFence(gb), ttl)
	require.ErrorIs(t, err, lease.ErrLeaseLost)
}

func testLaneFailedHead(t *testing.T, e *env) {
	g, err := e.AddGroup(e.ctx, grouplease.Group{Name: "o", Ordered: true, RangeSize: 100, ChunkSize: 100})
	require.NoError(t, err)
	e.ranges(t, "o", 1, 200, lease.LaneHistory)
	gl := e.grantLane(t, "a", lease.LaneHistory)
	for range 5 {
		l, err := e.Next(e.ctx, g.ID, lease.LaneHistory, laneFence(gl), ttl)
		require.NoError(t, err)
		require.Equal(t, int64(1), l.Range.Start)
		_, err = e.Corrupt(e.ctx, l.Range.ID, fence(l), 1, "truncated")
		require.NoError(t, err)
	}
	_, err = e.Next(e.ctx, g.ID, lease.LaneHistory, laneFence(gl), ttl)
	require.ErrorIs(t, err, lease.ErrNoWork, "a failed range blocks its lane: order is never broken")
	require.NoError(t, e.ReleaseLane(e.ctx, g.ID, lease.LaneHistory, laneFence(gl)))
	_, err = e.GrantLane(e.ctx, "a", lease.LaneHistory, ttl)
	require.ErrorIs(t, err, lease.ErrNoWork)
	n, err := e.Retry(e.ctx, "o")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	gl = e.grantLane(t, "a", lease.LaneHistory)
	l, err := e.Next(e.ctx, g.ID, lease.LaneHistory, laneFence(gl), ttl)
	require.NoError(t, err)
	require.Equal(t, int64(1), l.Range.Start)
}

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
	require.ErrorIs(t, err, lease.ErrConflict)
	require.ErrorIs(t, put(lease.Fence{Node: "b", Token: gl.Token}, 90, 1, "d"), lease.ErrLeaseLost)
	for _, bad := range []struct {
		next int64
		file string
	}{{0, "e"}, {-1, "e"}, {102, "e"}, {math.MaxInt64, "e"}, {60, ""}} {
		require.ErrorIs(t, put(f, bad.next, 1, bad.file), lease.ErrInvalid, "%+v", bad)
	}
	require.NoError(t, put(f, 101, 7, "end"), "up to the lane's planned end + 1")
	chk, err = e.CheckSnapshot(e.ctx, g.ID, lease.LaneHistory, f)
	require.NoError(t, err)
	want := &grouplease.SnapshotFile{Snapshot: grouplease.Snapshot{Next: 101, Size: 7, Token: gl.Token}, File: "end"}
	require.Equal(t, want, chk.Current)

	require.NoError(t, e.ReleaseLane(e.ctx, g.ID, lease.LaneHistory, f))
	_, err = e.CheckSnapshot(e.ctx, g.ID, lease.LaneHistory, f)
	require.ErrorIs(t, err, lease.ErrLeaseLost)
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
	require.ErrorIs(t, err, lease.ErrNotFound)
	_, err = e.ResetSnapshot(e.ctx, g.ID, "sideways")
	require.ErrorIs(t, err, lease.ErrInvalid)
}

func testNodes(t *testing.T, e *env) {
	tok, err := node.NewToken()
	require.NoError(t, err)
	n, err := e.AddNode(e.ctx, "edge-1", node.HashToken(tok))
	require.NoError(t, err)
	require.Equal(t, "edge-1", n.Name)
	require.Equal(t, e.clock.Now(), n.CreatedAt)
	_, err = e.AddNode(e.ctx, "edge-1", node.HashToken("other"))
	require.ErrorIs(t, err, lease.ErrConflict)
	for _, bad := range []string{"", "has space", "a/b", string(make([]byte, 65))} {
		_, err = e.AddNode(e.ctx, bad, node.HashToken("x"))
		require.ErrorIs(t, err, lease.ErrInvalid, "%q", bad)
	}

	e.clock.Advance(time.Minute)
	got, err := e.Authenticate(e.ctx, node.HashToken(tok))
	require.NoError(t, err)
	require.Equal(t, "edge-1", got.Name)
	require.Equal(t, e.clock.Now(), got.LastSeen)
	_, err = e.Authenticate(e.ctx, node.HashToken("wrong"))
	require.ErrorIs(t, err, lease.ErrNotFound)
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
	require.ErrorIs(t, e.RemoveNode(e.ctx, "edge-1"), lease.ErrNotFound)
	_, err = e.Authenticate(e.ctx, node.HashToken(tok))
	require.ErrorIs(t, err, lease.ErrNotFound)
	require.Equal(t, lease.StatePending, e.get(t, l.Range.ID).State)
	require.Equal(t, lease.StatePending, e.get(t, ol.Range.ID).State)
	_, err = e.Heartbeat(e.ctx, l.Range.ID, fence(l), ttl)
	require.ErrorIs(t, err, lease.ErrLeaseLost)
	other := e.grantLane(t, "edge-2", lease.LaneHistory)
	require.Greater(t, other.Token, gl.Token)
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
	require.ErrorIs(t, err, lease.ErrNotFound)
}

func (e *env) feed(t *testing.T, group string, limit, want int) []batch.Stored {
	t.Helper()
	return ReadFeed(t, e.Backend, group, limit, want)
}

// ReadFeed reads a store's results feed page by page until it has want
// items, then checks that nothing more comes. A backend may show an item
// only once no transaction that could precede it is running (PostgreSQL's
// feed does), so an empty page before want is polled again, within a bound.
func ReadFeed(t *testing.T, s batch.Store, group string, limit, want int) []batch.Stored {
	t.Helper()
	var all []batch.Stored
	cursor := ""
	deadline := time.Now().Add(30 * time.Second)
	for len(all) < want {
		p, err := s.Results(t.Context(), batch.Query{Group: group, After: cursor, Limit: limit})
		require.NoError(t, err)
		require.LessOrEqual(t, len(p.Results), limit)
		if len(p.Results) == 0 {
			require.Equal(t, cursor, p.Next, "an empty page keeps the cursor")
			require.True(t, time.Now().Before(deadline), "the feed showed %d of %d items", len(all), want)
			time.Sleep(5 * time.Millisecond)
			continue
		}
		all = append(all, p.Results...)
		cursor = p.Next
	}
	p, err := s.Results(t.Context(), batch.Query{Group: group, After: cursor, Limit: limit})
	require.NoError(t, err)
	require.Empty(t, p.Results, "the feed has no more than was stored")
	return all
}

func testChunkClaims(t *testing.T, e *env) {
	e.group(t, "g", false)
	e.ranges(t, "g", 1, 100, lease.LaneHistory)
	l := e.grant(t, "a")
	id := l.Range.ID
	c1, c2 := lease.Span{From: 1, To: 10}, lease.Span{From: 11, To: 20}
	claim := func(span lease.Span, owner string) bool {
		t.Helper()
		ok, err := e.ClaimChunk(e.ctx, id, span, owner, time.Minute)
		require.NoError(t, err)
		return ok
	}
	require.True(t, claim(c1, "coord-a"))
	require.True(t, claim(c1, "coord-a"), "the owner may claim again")
	require.False(t, claim(c1, "coord-b"), "two coordinators never fetch the same chunk")
	require.True(t, claim(c2, "coord-b"))

	e.clock.Advance(2 * time.Minute)
	require.True(t, claim(c1, "coord-b"), "an expired claim goes to the next asker")
	require.ErrorIs(t, e.ChunkFetched(e.ctx, id, c1, "coord-a"), lease.ErrLeaseLost)
	require.NoError(t, e.ChunkFetched(e.ctx, id, c1, "coord-b"))
	e.clock.Advance(30 * time.Second)
	require.False(t, claim(c1, "coord-a"), "a fetched chunk is not fetched again while its claim holds")

	// A chunk reported corrupt is fetched again.
	_, err := e.Corrupt(e.ctx, id, fence(l), 1, "bad gzip")
	require.NoError(t, err)
	require.True(t, claim(c1, "coord-a"))
	require.NoError(t, e.ChunkFetched(e.ctx, id, c1, "coord-a"))
	require.NoError(t, e.ForgetChunk(e.ctx, id, c1, "coord-a"))
	require.True(t, claim(c1, "coord-b"))

	_, err = e.ClaimChunk(e.ctx, id, lease.Span{From: 5, To: 4}, "x", time.Minute)
	require.ErrorIs(t, err, lease.ErrInvalid)
	_, err = e.ClaimChunk(e.ctx, id, c1, "", time.Minute)
	require.ErrorIs(t, err, lease.ErrInvalid)
}

func testFleetReads(t *testing.T, e *env) {
	_, err := e.AddNode(e.ctx, "edge-1", node.HashToken("t1"))
	require.NoError(t, err)
	got, err := e.Node(e.ctx, "edge-1")
	require.NoError(t, err)
	require.Equal(t, "edge-1", got.Name)
	_, err = e.Node(e.ctx, "nope")
	require.ErrorIs(t, err, lease.ErrNotFound)

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
	require.ErrorIs(t, err, lease.ErrInvalid)
}
