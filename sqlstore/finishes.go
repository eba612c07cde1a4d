package sqlstore

import (
	"context"
	"fmt"

	"github.com/lib/pq"

	"github.com/edgeindex/edgeindex/lease"
)

// rangeFence is a range and the fence a call names it under: a Finish of
// the finish rounds (PostgreSQL), and the key both rounds answer by.
type rangeFence struct {
	rangeID int64
	f       lease.Fence
}

// finishRound finishes a round of ranges with one statement and one
// commit, the way putOptimistic stores batches: each finish is fenced in
// the statement's WHERE (leased, by its node, under its token, its batches
// past its end), and the claims of the ranges it finished are deleted in
// it. A call is answered true when its range was finished; false sends it
// to Finish's transaction, which tells the refusals apart. The statement
// returns the fence that finished each range, and only the first call of
// that fence is answered true: a call under another fence of the range,
// or the same call twice, goes to the transaction, as if it came after.
//
// The round takes only the rows it can lock at once (SKIP LOCKED): a range
// whose row another transaction holds (a big batch's COPY, a grant) goes
// to the transaction, which waits for that row alone. A round that waited
// would hold up every finish behind it, and could deadlock with a round of
// another kind that locks the same rows in another order.
func (s *Store) finishRound(ctx context.Context, round []*call[rangeFence, bool]) {
	commitRound(ctx, round, func(ctx context.Context, round []*call[rangeFence, bool]) error {
		ids, nodes, tokens := make([]int64, len(round)), make([]string, len(round)), make([]int64, len(round))
		for i, c := range round {
			ids[i], nodes[i], tokens[i] = c.req.rangeID, c.req.f.Node, c.req.f.Token
		}
		st, err := s.prepared(ctx, finishRoundQuery)
		if err != nil {
			return fmt.Errorf("finish: %w", err)
		}
		var done []fencedRow
		if err := st.SelectContext(ctx, &done, pq.Array(ids), pq.Array(nodes), pq.Array(tokens)); err != nil {
			return fmt.Errorf("finish: %w", err)
		}
		finished := make(map[rangeFence]bool, len(done))
		for _, d := range done {
			finished[rangeFence{rangeID: d.ID, f: lease.Fence{Node: d.Node, Token: d.Token}}] = true
		}
		for _, c := range round {
			c.res, c.err = finished[c.req], nil
			delete(finished, c.req) // a second call of the fence goes to the transaction
		}
		return nil
	})
}

// fencedRow is a range a round wrote, and the fence that matched.
type fencedRow struct {
	ID    int64  `db:"id"`
	Node  string `db:"node"`
	Token int64  `db:"token"`
}

// finishRoundQuery finishes the ranges of arrays of range ids, nodes and
// tokens whose fence holds, and returns each with the fence that matched.
const finishRoundQuery = `WITH v AS (
		SELECT * FROM unnest(CAST(? AS BIGINT[]), CAST(? AS TEXT[]), CAST(? AS BIGINT[])) AS v(id, node, token)),
	free AS (
		SELECT r.id, v.node, v.token FROM ranges r JOIN v ON r.id = v.id
		WHERE r.state = 'leased' AND r.node = v.node AND r.token = v.token AND r.next_n > r.end_n
		FOR NO KEY UPDATE OF r SKIP LOCKED),
	done AS (
		UPDATE ranges r SET state = 'done', node = NULL, expires_us = NULL FROM free
		WHERE r.id = free.id
		RETURNING r.id, free.node, free.token),
	gone AS (DELETE FROM chunk_claims WHERE range_id IN (SELECT id FROM done))
	SELECT id, node, token FROM done`
