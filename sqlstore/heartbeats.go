package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
)

// heartbeatReq is one Heartbeat, for the heartbeat rounds (PostgreSQL).
type heartbeatReq struct {
	rangeFence
	ttlUS int64
}

// heartbeatRound renews a round of leases with one statement and one
// commit, each fenced in its WHERE, as finishRound finishes. A call is
// answered with its new expiry, or with no value when its fence did not
// renew the range: it then goes on alone, to be renewed or told apart.
// The statement returns the fence that renewed each range, and only the
// first call of that fence is answered from it. As finishRound, it takes
// only the rows it can lock at once: a heartbeat whose range's row is held
// (by a big batch's transaction, say) goes on alone and waits for that row,
// while the round renews the others' leases.
func (s *Store) heartbeatRound(ctx context.Context, round []*call[heartbeatReq, sql.NullInt64]) {
	commitRound(ctx, round, func(ctx context.Context, round []*call[heartbeatReq, sql.NullInt64]) error {
		ids, nodes, tokens := fenceArrays(round)
		ttls := make([]int64, len(round))
		for i, c := range round {
			ttls[i] = c.req.ttlUS
		}
		st, err := s.prepared(ctx, heartbeatRoundQuery)
		if err != nil {
			return fmt.Errorf("heartbeat: %w", err)
		}
		var renewed []struct {
			fencedRow
			Expires int64 `db:"expires_us"`
		}
		if err := st.SelectContext(ctx, &renewed, ids, nodes, tokens, ttls, s.now()); err != nil {
			return fmt.Errorf("heartbeat: %w", err)
		}
		expires := make(map[rangeFence]sql.NullInt64, len(renewed))
		for _, r := range renewed {
			expires[r.key()] = sql.NullInt64{Int64: r.Expires, Valid: true}
		}
		answerOnce(round, expires)
		return nil
	})
}

// heartbeatRoundQuery renews the leases of arrays of range ids, nodes,
// tokens and TTLs whose fence holds, and returns each range renewed with
// the fence that renewed it and its new expiry.
const heartbeatRoundQuery = `WITH v AS (
		SELECT * FROM unnest(CAST(? AS BIGINT[]), CAST(? AS TEXT[]), CAST(? AS BIGINT[]), CAST(? AS BIGINT[])) AS v(id, node, token, ttl_us)),
	free AS (
		SELECT r.id, v.node, v.token, v.ttl_us FROM ranges r JOIN v ON r.id = v.id
		WHERE r.state = 'leased' AND r.node = v.node AND r.token = v.token
		FOR NO KEY UPDATE OF r SKIP LOCKED)
	UPDATE ranges r SET expires_us = {now} + free.ttl_us FROM free
	WHERE r.id = free.id
	RETURNING r.id, free.node, free.token, r.expires_us`
