package sqlstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/lib/pq"

	"github.com/edgeindex/edgeindex/lease"
)

// finishReq is one Finish, for the finish rounds (PostgreSQL).
type finishReq struct {
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
// The rows go in range id order, the order the locked batch path locks
// ranges in, so that two rounds never wait for each other's rows.
func (s *Store) finishRound(ctx context.Context, round []*call[finishReq, bool]) {
	commitRound(ctx, round, func(ctx context.Context, round []*call[finishReq, bool]) error {
		ids, nodes, tokens := make([]int64, len(round)), make([]string, len(round)), make([]int64, len(round))
		for i, c := range byRange(round, func(r finishReq) int64 { return r.rangeID }) {
			ids[i], nodes[i], tokens[i] = c.req.rangeID, c.req.f.Node, c.req.f.Token
		}
		st, err := s.prepared(ctx, finishRoundQuery)
		if err != nil {
			return fmt.Errorf("finish: %w", err)
		}
		var done []finishedRow
		if err := st.SelectContext(ctx, &done, pq.Array(ids), pq.Array(nodes), pq.Array(tokens)); err != nil {
			return fmt.Errorf("finish: %w", err)
		}
		finished := make(map[finishReq]bool, len(done))
		for _, d := range done {
			finished[finishReq{rangeID: d.ID, f: lease.Fence{Node: d.Node, Token: d.Token}}] = true
		}
		for _, c := range round {
			c.res, c.err = finished[c.req], nil
			delete(finished, c.req) // a second call of the fence goes to the transaction
		}
		return nil
	})
}

// finishedRow is a range finishRoundQuery finished, and the fence that did.
type finishedRow struct {
	ID    int64  `db:"id"`
	Node  string `db:"node"`
	Token int64  `db:"token"`
}

// finishRoundQuery finishes the ranges of arrays of range ids, nodes and
// tokens whose fence holds, and returns each with the fence that matched.
const finishRoundQuery = `WITH v AS (
		SELECT * FROM unnest(CAST(? AS BIGINT[]), CAST(? AS TEXT[]), CAST(? AS BIGINT[])) AS v(id, node, token)),
	done AS (
		UPDATE ranges r SET state = 'done', node = NULL, expires_us = NULL FROM v
		WHERE r.id = v.id AND r.state = 'leased' AND r.node = v.node AND r.token = v.token AND r.next_n > r.end_n
		RETURNING r.id, v.node, v.token),
	gone AS (DELETE FROM chunk_claims WHERE range_id IN (SELECT id FROM done))
	SELECT id, node, token FROM done`

// byRange returns a copy of round in the order of its range ids (id), the
// order a round's statement takes its rows in.
func byRange[Req, Res any](round []*call[Req, Res], id func(Req) int64) []*call[Req, Res] {
	sorted := slices.Clone(round)
	slices.SortStableFunc(sorted, func(a, b *call[Req, Res]) int { return cmp.Compare(id(a.req), id(b.req)) })
	return sorted
}
