package sqlstore

import (
	"context"
	"fmt"

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
		ids, nodes, tokens := fenceArrays(round)
		st, err := s.prepared(ctx, finishRoundQuery)
		if err != nil {
			return fmt.Errorf("finish: %w", err)
		}
		var done []fencedRow
		if err := st.SelectContext(ctx, &done, ids, nodes, tokens); err != nil {
			return fmt.Errorf("finish: %w", err)
		}
		finished := make(map[rangeFence]bool, len(done))
		for _, d := range done {
			finished[d.key()] = true
		}
		answerOnce(round, finished)
		return nil
	})
}

// fenced is the request of a round that writes ranges under their fences.
type fenced interface{ key() rangeFence }

func (k rangeFence) key() rangeFence { return k }

// fencedRow is a range a round wrote, and the fence that matched.
type fencedRow struct {
	ID    int64  `db:"id"`
	Node  string `db:"node"`
	Token int64  `db:"token"`
}

func (r fencedRow) key() rangeFence {
	return rangeFence{rangeID: r.ID, f: lease.Fence{Node: r.Node, Token: r.Token}}
}

// fenceArrays are the range ids, nodes and tokens of a round's calls, for
// its statement's unnest.
func fenceArrays[Req fenced, Res any](round []*call[Req, Res]) (ids []int64, nodes []string, tokens []int64) {
	ids, nodes, tokens = make([]int64, len(round)), make([]string, len(round)), make([]int64, len(round))
	for i, c := range round {
		k := c.req.key()
		ids[i], nodes[i], tokens[i] = k.rangeID, k.f.Node, k.f.Token
	}
	return ids, nodes, tokens
}

// answerOnce answers each call of a round with what its statement wrote
// under the call's fence, got (by fencedRow.key), or with Res's zero when
// it wrote nothing under it. A fence is answered from got once: the same
// call twice gets the zero for its second, as if it came after the round.
func answerOnce[Req fenced, Res any](round []*call[Req, Res], got map[rangeFence]Res) {
	for _, c := range round {
		k := c.req.key()
		c.res, c.err = got[k], nil
		delete(got, k)
	}
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
