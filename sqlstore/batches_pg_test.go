package sqlstore

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/internal/pgtest"
	"github.com/edgeindex/edgeindex/lease"
)

// pgRanges opens a store on a new PostgreSQL schema with group "g" and its
// ranges of 10 articles from 1 to to.
func pgRanges(t *testing.T, to int64) *Store {
	t.Helper()
	s, err := Open(t.Context(), pgtest.URL(t), Config{})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	_, err = s.AddGroup(t.Context(), grouplease.Group{Name: "g", RangeSize: 10, ChunkSize: 10})
	require.NoError(t, err)
	_, err = s.AddRanges(t.Context(), grouplease.NewRanges{Group: "g", From: 1, To: to})
	require.NoError(t, err)
	return s
}

// grantN grants n leases of a minute to node, in grant order.
func grantN(t *testing.T, s *Store, node string, n int) []lease.Lease {
	t.Helper()
	ls := make([]lease.Lease, n)
	for i := range ls {
		var err error
		ls[i], err = s.Grant(t.Context(), node, time.Minute)
		require.NoError(t, err)
	}
	return ls
}

// A range that changes between putOptimistic's read and its write (here
// released and granted to another node) has nothing of its Put written:
// the Put is decided again under the range's lock and refused, while the
// other Put of the round is stored.
func TestOptimisticPutStaleRange(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := pgRanges(t, 20)
	ls := grantN(t, s, "a", 2)
	a, b := ls[0], ls[1]

	var stolen lease.Lease
	var err error
	s.testHookWrite = func() {
		s.testHookWrite = nil
		require.NoError(t, s.Release(ctx, b.Range.ID, lease.Fence{Node: "a", Token: b.Token}))
		stolen, err = s.Grant(ctx, "b", time.Minute)
		require.NoError(t, err)
		require.Equal(t, b.Range.ID, stolen.Range.ID)
	}
	put := func(l lease.Lease) *call[putReq, batch.Result] {
		return &call[putReq, batch.Result]{ctx: ctx, done: make(chan struct{}), req: putReq{rangeID: l.Range.ID,
			f: lease.Fence{Node: "a", Token: l.Token}, b: batch.Batch{From: l.Range.Start, To: l.Range.End, Headers: 10,
				Items: []batch.Item{{Key: "k", Value: []byte(`1`)}}, Final: true}}}
	}
	round := []*call[putReq, batch.Result]{put(a), put(b)}
	require.True(t, s.optimistic(round))
	s.putRound(context.Background(), round)

	require.NoError(t, round[0].err)
	require.True(t, round[0].res.Done)
	require.ErrorIs(t, round[1].err, edgeindex.ErrLeaseLost, "decided again under the lock")
	ra, err := s.Range(ctx, a.Range.ID)
	require.NoError(t, err)
	require.Equal(t, lease.StateDone, ra.State)
	rb, err := s.Range(ctx, b.Range.ID)
	require.NoError(t, err)
	require.Equal(t, lease.StateLeased, rb.State)
	require.Equal(t, rb.Start, rb.Next, "nothing of the stale Put was written")
	_, err = s.Check(ctx, b.Range.ID, lease.Fence{Node: "b", Token: stolen.Token})
	require.NoError(t, err, "the new holder keeps it")
	var stored []int64 // in the table: the feed hides items while another test's transaction runs
	require.NoError(t, s.db.SelectContext(ctx, &stored, "SELECT range_id FROM items"))
	require.Equal(t, []int64{a.Range.ID}, stored)
}

// PutThenGrant grants the sender its next range in the statement that
// stores its final batch: never a range of the round, never one another
// node holds; a batch that does not finish its range, or whose range
// changed since it was read, gets no lease there; with no work left it is
// tried and there is none.
func TestPutThenGrant(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := pgRanges(t, 30)
	a, err := s.Grant(ctx, "a", time.Minute)
	require.NoError(t, err)
	other, err := s.Grant(ctx, "b", time.Minute)
	require.NoError(t, err)
	fa := lease.Fence{Node: "a", Token: a.Token}
	one := []batch.Item{{Key: "k", Value: []byte(`1`)}}

	res, l, tried, err := s.PutThenGrant(ctx, a.Range.ID, fa, batch.Batch{From: 1, To: 5, Headers: 5, Items: one}, time.Minute)
	require.NoError(t, err)
	require.False(t, res.Done)
	require.Nil(t, l, "not final: no lease")
	require.False(t, tried)

	res, l, tried, err = s.PutThenGrant(ctx, a.Range.ID, fa, batch.Batch{From: 6, To: 10, Headers: 5, Items: one, Final: true}, time.Minute)
	require.NoError(t, err)
	require.True(t, res.Done)
	require.True(t, tried)
	require.NotNil(t, l)
	require.NotEqual(t, other.Range.ID, l.Range.ID, "not the range b holds")
	require.NotEqual(t, a.Range.ID, l.Range.ID)
	_, err = s.Check(ctx, l.Range.ID, lease.Fence{Node: "a", Token: l.Token})
	require.NoError(t, err, "a holds it")

	res, l2, tried, err := s.PutThenGrant(ctx, l.Range.ID, lease.Fence{Node: "a", Token: l.Token},
		batch.Batch{From: l.Range.Start, To: l.Range.End, Headers: 10, Items: one, Final: true}, time.Minute)
	require.NoError(t, err)
	require.True(t, res.Done)
	require.True(t, tried)
	require.Nil(t, l2, "no work left")
}

// A final batch and its retry in one round (a worker that timed out and
// posted again while the first was queued): the first stores and finishes
// the range, the retry is its duplicate, one batch is stored, and only the
// first is handed the next range.
func TestOptimisticPutRetryInRound(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := pgRanges(t, 30) // two ranges left to hand over
	l, err := s.Grant(ctx, "a", time.Minute)
	require.NoError(t, err)
	put := func() *call[putReq, batch.Result] {
		return &call[putReq, batch.Result]{ctx: ctx, done: make(chan struct{}), req: putReq{rangeID: l.Range.ID,
			f: lease.Fence{Node: "a", Token: l.Token}, b: batch.Batch{From: 1, To: 10, Headers: 10,
				Items: []batch.Item{{Key: "k", Value: []byte(`1`)}}, Final: true},
			then: &thenGrant{ttl: time.Minute, ttlUS: time.Minute.Microseconds()}}}
	}
	round := []*call[putReq, batch.Result]{put(), put()}
	require.True(t, s.optimistic(round))
	s.putRound(context.Background(), round)

	require.NoError(t, round[0].err)
	require.Equal(t, batch.Result{Next: 11, Done: true}, round[0].res)
	require.NoError(t, round[1].err)
	require.Equal(t, batch.Result{Next: 11, Duplicate: true, Done: true}, round[1].res)
	var batches, items int
	require.NoError(t, s.db.GetContext(ctx, &batches, "SELECT COUNT(*) FROM batches"))
	require.NoError(t, s.db.GetContext(ctx, &items, "SELECT COUNT(*) FROM items"))
	require.Equal(t, 1, batches)
	require.Equal(t, 1, items)
	r, err := s.Range(ctx, l.Range.ID)
	require.NoError(t, err)
	require.Equal(t, lease.StateDone, r.State)
	require.NotNil(t, round[0].req.then.lease, "the next range, to the first")
	require.Nil(t, round[1].req.then.lease, "one lease per range: none to its retry")
}

// A feed item's value over PostgreSQL's 2 kB threshold is compressed with
// lz4 where the server has it (migration 16), and reads back as sent.
func TestItemValuesLZ4(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := pgRanges(t, 10)
	l := grantN(t, s, "a", 1)[0]
	value := []byte(`{"parts":[` + strings.Repeat(`{"n":1,"messageId":"<part@example.invalid>","bytes":739000},`, 200) + `{}]}`)
	_, err := s.Put(ctx, l.Range.ID, lease.Fence{Node: "a", Token: l.Token},
		batch.Batch{From: l.Range.Start, To: l.Range.End, Headers: 10, Items: []batch.Item{{Key: "k", Value: value}}, Final: true})
	require.NoError(t, err)

	var lz4 bool
	require.NoError(t, s.db.GetContext(ctx, &lz4,
		"SELECT EXISTS (SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals))"))
	want := "pglz"
	if lz4 {
		want = "lz4"
	}
	var got struct {
		Method string `db:"method"`
		Value  string `db:"value"`
	}
	require.NoError(t, s.db.GetContext(ctx, &got, "SELECT pg_column_compression(value) AS method, value FROM items"))
	require.Equal(t, want, got.Method)
	require.Equal(t, string(value), got.Value)
}

// A value PostgreSQL cannot hold as text (bytes that are not UTF-8, a NUL)
// fails the Put whole on the optimistic way: nothing of it is written, and
// the same batch with good values is then stored. The coordinator refuses
// such values before the store; this is a program calling Put itself.
func TestOptimisticPutRefusesBadText(t *testing.T) {
	s := pgRanges(t, 10)
	l := grantN(t, s, "a", 1)[0]
	f := lease.Fence{Node: "a", Token: l.Token}
	good := batch.Item{Key: "good", Value: json.RawMessage(`"ok"`)}
	for _, bad := range []string{"\"\xff\"", "\"a\x00b\""} {
		b := batch.Batch{From: 1, To: 5, Headers: 5, Items: []batch.Item{good, {Key: "bad", Value: json.RawMessage(bad)}}}
		_, err := s.Put(t.Context(), l.Range.ID, f, b)
		require.Error(t, err, "%q", bad)
		r, err := s.Range(t.Context(), l.Range.ID)
		require.NoError(t, err)
		require.Equal(t, int64(1), r.Next, "%q: the range moved", bad)
	}
	res, err := s.Put(t.Context(), l.Range.ID, f, batch.Batch{From: 1, To: 5, Headers: 5, Items: []batch.Item{good}})
	require.NoError(t, err)
	require.Equal(t, int64(6), res.Next)
	var n int
	require.NoError(t, s.DB().GetContext(t.Context(), &n, "SELECT count(*) FROM items"))
	require.Equal(t, 1, n, "only the good batch's item")
}
