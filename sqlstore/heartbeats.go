package sqlstore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/lib/pq"

	"github.com/edgeindex/edgeindex/lease"
)

// heartbeatReq is one Heartbeat, for the heartbeat rounds (PostgreSQL).
type heartbeatReq struct {
	rangeID int64
	f       lease.Fence
	ttlUS   int64
}

// heartbeatRound renews a round of leases with one statement and one
// commit, each fenced in its WHERE, as finishRound finishes. A call is
// answered with its new expiry, or with no value when its fence did not
// renew the range: it then goes on alone, to be renewed or told apart.
// The statement returns the fence that renewed each range, and only the
// first call of that fence is answered from it. The rows go in range id
// order, as finishRound's do.
func (s *Store) heartbeatRound(ctx context.Context, round []*call[heartbeatReq, sql.NullInt64]) {
	commitRound(ctx, round, func(ctx context.Context, round []*call[heartbeatReq, sql.NullInt64]) error {
		n := len(round)
		ids, nodes, tokens, ttls := make([]int64, n), make([]string, n), make([]int64, n), make([]int64, n)
		for i, c := range byRange(round, func(r heartbeatReq) int64 { return r.rangeID }) {
			ids[i], nodes[i], tokens[i], ttls[i] = c.req.rangeID, c.req.f.Node, c.req.f.Token, c.req.ttlUS
		}
		st, err := s.prepared(ctx, heartbeatRoundQuery)
		if err != nil {
			return fmt.Errorf("heartbeat: %w", err)
		}
		var renewed []struct {
			finishedRow
			Expires int64 `db:"expires_us"`
		}
		if err := st.SelectContext(ctx, &renewed, pq.Array(ids), pq.Array(nodes), pq.Array(tokens), pq.Array(ttls), s.now()); err != nil {
			return fmt.Errorf("heartbeat: %w", err)
		}
		expires := make(map[finishReq]int64, len(renewed))
		for _, r := range renewed {
			expires[finishReq{rangeID: r.ID, f: lease.Fence{Node: r.Node, Token: r.Token}}] = r.Expires
		}
		for _, c := range round {
			k := finishReq{rangeID: c.req.rangeID, f: c.req.f}
			exp, ok := expires[k]
			c.res, c.err = sql.NullInt64{Int64: exp, Valid: ok}, nil
			delete(expires, k)
		}
		return nil
	})
}

// heartbeatRoundQuery renews the leases of arrays of range ids, nodes,
// tokens and TTLs whose fence holds, and returns each range renewed with
// the fence that renewed it and its new expiry.
const heartbeatRoundQuery = `WITH v AS (
		SELECT * FROM unnest(CAST(? AS BIGINT[]), CAST(? AS TEXT[]), CAST(? AS BIGINT[]), CAST(? AS BIGINT[])) AS v(id, node, token, ttl_us))
	UPDATE ranges r SET expires_us = {now} + v.ttl_us FROM v
	WHERE r.id = v.id AND r.state = 'leased' AND r.node = v.node AND r.token = v.token
	RETURNING r.id, v.node, v.token, r.expires_us`
