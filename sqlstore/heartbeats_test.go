package sqlstore

import (
	"context"
	"database/sql"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/lease"
)

// A round of heartbeats renews, in its one statement, exactly the leases
// whose fence holds, each once: a stale fence first in the round, the same
// call twice and a stale token are answered with no expiry, for
// Heartbeat's own statement to renew or tell apart, and renew nothing.
func TestHeartbeatRound(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := pgRanges(t, 20)
	ls := grantN(t, s, "a", 2)
	a, b := ls[0], ls[1]
	expires := func(id int64) int64 {
		var us int64
		require.NoError(t, s.db.GetContext(ctx, &us, "SELECT expires_us FROM ranges WHERE id = $1", id))
		return us
	}
	bBefore := expires(b.Range.ID)

	beat := func(l lease.Lease, token int64) *call[heartbeatReq, sql.NullInt64] {
		return &call[heartbeatReq, sql.NullInt64]{ctx: ctx, done: make(chan struct{}),
			req: heartbeatReq{rangeFence: rangeFence{rangeID: l.Range.ID, f: lease.Fence{Node: "a", Token: token}}, ttlUS: time.Hour.Microseconds()}}
	}
	round := []*call[heartbeatReq, sql.NullInt64]{beat(a, a.Token+1), beat(a, a.Token), beat(a, a.Token), beat(b, b.Token+1)}
	s.heartbeatRound(context.Background(), round)
	var valid []bool
	for _, c := range round {
		require.NoError(t, c.err)
		valid = append(valid, c.res.Valid)
	}
	require.Equal(t, []bool{false, true, false, false}, valid, "only the fence that holds renews, once")
	require.Equal(t, expires(a.Range.ID), round[1].res.Int64, "the answer is the stored expiry")
	require.Greater(t, round[1].res.Int64, a.ExpiresAt.UnixMicro(), "an hour's TTL renews past the minute's")
	require.Equal(t, bBefore, expires(b.Range.ID), "a stale token renews nothing")

	_, err := s.Heartbeat(ctx, b.Range.ID, lease.Fence{Node: "a", Token: b.Token + 1}, time.Minute)
	require.ErrorIs(t, err, edgeindex.ErrLeaseLost)
	exp, err := s.Heartbeat(ctx, a.Range.ID, lease.Fence{Node: "a", Token: a.Token}, time.Minute)
	require.NoError(t, err)
	require.Equal(t, expires(a.Range.ID), exp.UnixMicro())
}

// Concurrent Heartbeats, some fenced out, are each answered as one alone
// would be.
func TestHeartbeatsConcurrent(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := pgRanges(t, 400)
	ls := grantN(t, s, "a", 40)
	errs := make([]error, len(ls))
	var wg sync.WaitGroup
	for i, l := range ls {
		wg.Go(func() {
			token := l.Token
			if i%3 == 0 {
				token++ // a stale holder
			}
			_, errs[i] = s.Heartbeat(ctx, l.Range.ID, lease.Fence{Node: "a", Token: token}, time.Hour)
		})
	}
	wg.Wait()
	for i, l := range ls {
		var us int64
		require.NoError(t, s.db.GetContext(ctx, &us, "SELECT expires_us FROM ranges WHERE id = $1", l.Range.ID))
		renewed := time.Duration(us-l.ExpiresAt.UnixMicro()) * time.Microsecond
		if i%3 == 0 {
			require.ErrorIs(t, errs[i], edgeindex.ErrLeaseLost, "range %d", i)
			require.Less(t, renewed, time.Minute, "not renewed: range %d", i)
			continue
		}
		require.NoError(t, errs[i], "range %d", i)
		require.Greater(t, renewed, 50*time.Minute, "renewed for the hour: range %d", i)
	}
}
