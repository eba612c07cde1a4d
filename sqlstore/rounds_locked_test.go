package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/lease"
)

// heldRow locks range id's row in a transaction of its own, as a big
// batch's COPY does, until release is called; waiting returns once a
// session waits for that transaction.
func heldRow(t *testing.T, s *Store, id int64) (waiting, release func()) {
	t.Helper()
	tx, err := s.db.BeginTxx(t.Context(), nil)
	require.NoError(t, err)
	var pid int
	require.NoError(t, tx.GetContext(t.Context(), &pid, "SELECT pg_backend_pid()"))
	_, err = tx.ExecContext(t.Context(), "SELECT id FROM ranges WHERE id = $1 FOR NO KEY UPDATE", id)
	require.NoError(t, err)
	waiting = func() {
		require.Eventually(t, func() bool {
			var n int
			err := s.db.GetContext(t.Context(), &n, "SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))", pid)
			return err == nil && n > 0
		}, 10*time.Second, 5*time.Millisecond)
	}
	return waiting, func() { tx.Rollback() }
}

// A heartbeat whose range's row another transaction holds waits for that
// row alone: the heartbeats of other ranges, in the rounds after it, are
// renewed meanwhile (the reviewer's find: a round that waited on one row
// held up every heartbeat of the fleet, and a lease could expire for it).
func TestHeartbeatRoundSkipsAHeldRow(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := pgRanges(t, 30)
	a, err := s.Grant(ctx, "a", time.Minute)
	require.NoError(t, err)
	b, err := s.Grant(ctx, "b", time.Minute)
	require.NoError(t, err)
	waiting, release := heldRow(t, s, a.Range.ID)
	aDone := make(chan error, 1)
	go func() {
		_, err := s.Heartbeat(ctx, a.Range.ID, lease.Fence{Node: "a", Token: a.Token}, time.Minute)
		aDone <- err
	}()
	waiting()

	bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = s.Heartbeat(bctx, b.Range.ID, lease.Fence{Node: "b", Token: b.Token}, time.Minute)
	require.NoError(t, err, "b's row is free: its heartbeat does not wait for a's")
	select {
	case err := <-aDone:
		t.Fatalf("a's heartbeat returned (%v) while its row was held", err)
	default:
	}
	release()
	require.NoError(t, <-aDone, "a's heartbeat renews once its row is free")
}

// The same for finishes: one whose row is held waits alone.
func TestFinishRoundSkipsAHeldRow(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := pgRanges(t, 30)
	var ls []lease.Lease
	for _, node := range []string{"a", "b"} {
		l, err := s.Grant(ctx, node, time.Minute)
		require.NoError(t, err)
		_, err = s.Put(ctx, l.Range.ID, lease.Fence{Node: node, Token: l.Token}, batch.Batch{From: l.Range.Start, To: l.Range.End, Headers: 10})
		require.NoError(t, err)
		ls = append(ls, l)
	}
	a, b := ls[0], ls[1]
	waiting, release := heldRow(t, s, a.Range.ID)
	aDone := make(chan error, 1)
	go func() { aDone <- s.Finish(ctx, a.Range.ID, lease.Fence{Node: "a", Token: a.Token}) }()
	waiting()

	bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, s.Finish(bctx, b.Range.ID, lease.Fence{Node: "b", Token: b.Token}), "b's row is free: its finish does not wait for a's")
	select {
	case err := <-aDone:
		t.Fatalf("a's finish returned (%v) while its row was held", err)
	default:
	}
	release()
	require.NoError(t, <-aDone)
	for _, l := range ls {
		r, err := s.Range(ctx, l.Range.ID)
		require.NoError(t, err)
		require.Equal(t, lease.StateDone, r.State)
	}
}

// A round of Puts takes its ranges' rows in the order the Puts came, a
// heartbeat round in its own order: before the rounds skipped held rows, a
// put round [b, a] and a heartbeat round [a, b] deadlocked (the reviewer's
// find), and the database broke it after deadlock_timeout. A trigger that
// sleeps while the put holds b's row widens the window the two rounds need
// to overlap in; it changes no lock order. Not parallel: it reads the
// database's deadlock count.
func TestPutAndHeartbeatRoundsDoNotDeadlock(t *testing.T) {
	ctx := t.Context()
	s := pgRanges(t, 30)
	a, err := s.Grant(ctx, "a", time.Minute)
	require.NoError(t, err)
	b, err := s.Grant(ctx, "b", time.Minute)
	require.NoError(t, err)
	_, err = s.db.ExecContext(ctx, fmt.Sprintf(`CREATE FUNCTION slow_b() RETURNS trigger AS $$ BEGIN
		IF NEW.id = %d AND NEW.next_n <> OLD.next_n THEN PERFORM pg_sleep(0.5); END IF; RETURN NEW; END $$ LANGUAGE plpgsql`, b.Range.ID))
	require.NoError(t, err)
	_, err = s.db.ExecContext(ctx, "CREATE TRIGGER slow_b BEFORE UPDATE ON ranges FOR EACH ROW EXECUTE FUNCTION slow_b()")
	require.NoError(t, err)
	deadlocks := func() int64 {
		var n int64
		require.NoError(t, s.db.GetContext(ctx, &n, "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()"))
		return n
	}
	before := deadlocks()

	put := func(l lease.Lease, node string) *call[putReq, batch.Result] {
		return &call[putReq, batch.Result]{ctx: ctx, done: make(chan struct{}), req: putReq{rangeID: l.Range.ID,
			f: lease.Fence{Node: node, Token: l.Token}, b: batch.Batch{From: l.Range.Start, To: l.Range.Start + 4, Headers: 5}}}
	}
	puts := []*call[putReq, batch.Result]{put(b, "b"), put(a, "a")} // b's Put came first
	putDone := make(chan struct{})
	go func() {
		defer close(putDone)
		s.putRound(context.Background(), puts)
	}()
	waitingOn := func() bool { // the put round sleeps in b's trigger, b's row held
		var n int
		err := s.db.GetContext(ctx, &n, "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'")
		return err == nil && n > 0
	}
	require.Eventually(t, waitingOn, 10*time.Second, 5*time.Millisecond)
	beat := func(l lease.Lease, node string) *call[heartbeatReq, sql.NullInt64] {
		return &call[heartbeatReq, sql.NullInt64]{ctx: ctx, done: make(chan struct{}),
			req: heartbeatReq{rangeFence: rangeFence{rangeID: l.Range.ID, f: lease.Fence{Node: node, Token: l.Token}}, ttlUS: time.Minute.Microseconds()}}
	}
	beats := []*call[heartbeatReq, sql.NullInt64]{beat(a, "a"), beat(b, "b")}
	s.heartbeatRound(context.Background(), beats)
	<-putDone
	for _, c := range puts {
		require.NoError(t, c.err)
	}
	require.NoError(t, beats[0].err)
	require.True(t, beats[0].res.Valid, "a's row was free: the round renewed it")
	require.False(t, beats[1].res.Valid, "b's row was held: left to Heartbeat's own statement")
	require.Zero(t, deadlocks()-before, "the two rounds deadlocked")
}
