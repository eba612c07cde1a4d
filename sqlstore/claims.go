package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/prefetch"
	"github.com/edgeindex/edgeindex/spool"
	"github.com/jmoiron/sqlx"
)

var _ spool.Claims = (*Store)(nil)

// ClaimChunk implements spool.Claims. A claim is taken over by its own
// owner at any time (its copy was lost), and by anyone once it expired,
// fetched or not. A coordinator asks only for a chunk its spool lacks
// (prefetch.Prefetcher), so an expired claim of another owner means the chunk
// is not where this coordinator can serve it: that owner's spool is lost, is
// not shared with this one, or the owner came back under another name.
// Before expiry a claim holds, fetched or not: its chunk is being fetched,
// or was just stored in its owner's spool, which other coordinators may
// share (a bucket), and is not fetched twice. The fetched flag decides
// nothing any more; it only tells which claims were completed.
//
// Concurrent claims are written in rounds (see committer).
func (s *Store) ClaimChunk(ctx context.Context, rangeID int64, span lease.Span, owner string, ttl time.Duration) (bool, error) {
	if owner == "" || span.From > span.To {
		return false, edgeindex.Invalidf("claim chunk: an owner and a span with from <= to are required")
	}
	ttlUS, err := ttlMicros(ttl)
	if err != nil {
		return false, err
	}
	return s.claims.do(ctx, chunkReq{rangeID: rangeID, span: span, owner: owner, ttlUS: ttlUS})
}

// chunkReq is one ClaimChunk or ChunkFetched.
type chunkReq struct {
	rangeID int64
	span    lease.Span
	owner   string
	ttlUS   int64
}

// chunkKey identifies a claim.
type chunkKey struct{ rangeID, from int64 }

// claimSet is ClaimChunk's upsert without its VALUES.
// A renewal by the owner of a chunk it has not fetched keeps since_us.
const claimSet = `ON CONFLICT (range_id, from_n) DO UPDATE SET owner = excluded.owner, expires_us = excluded.expires_us, fetched = FALSE,
		since_us = CASE WHEN chunk_claims.owner = excluded.owner AND NOT chunk_claims.fetched THEN chunk_claims.since_us ELSE excluded.since_us END
	WHERE chunk_claims.owner = excluded.owner OR chunk_claims.expires_us < {now}`

// claimRound writes a round of claims: on PostgreSQL with one statement,
// unless two claim one chunk (then one by one, in order); on SQLite in one
// transaction.
func (s *Store) claimRound(ctx context.Context, round []*call[chunkReq, bool]) {
	commitRound(ctx, round, func(ctx context.Context, round []*call[chunkReq, bool]) error {
		if s.d.takesArrays() && !repeatsChunk(round) {
			return s.claimPostgres(ctx, round)
		}
		return s.tx(ctx, func(tx *sqlx.Tx) error {
			now := s.now()
			for _, c := range round {
				q := c.req
				var got string
				err := tx.GetContext(ctx, &got, s.q(`INSERT INTO chunk_claims (range_id, from_n, to_n, owner, expires_us, since_us)
					VALUES (?, ?, ?, ?, {now} + ?, {now}) `+claimSet+` RETURNING owner`), q.rangeID, q.span.From, q.span.To, q.owner, now, q.ttlUS, now, now)
				if err != nil && !errors.Is(err, sql.ErrNoRows) {
					return fmt.Errorf("claim chunk: %w", err)
				}
				c.res, c.err = err == nil, nil
			}
			return nil
		})
	})
}

// repeatsChunk reports whether two calls of round name one chunk.
func repeatsChunk(round []*call[chunkReq, bool]) bool {
	seen := make(map[chunkKey]bool, len(round))
	for _, c := range round {
		k := chunkKey{c.req.rangeID, c.req.span.From}
		if seen[k] {
			return true
		}
		seen[k] = true
	}
	return false
}

// claimPostgres writes a round of claims of distinct chunks with one
// statement.
func (s *Store) claimPostgres(ctx context.Context, round []*call[chunkReq, bool]) error {
	n := len(round)
	ids, froms, tos, ttls, owners := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]string, n)
	for i, c := range round {
		ids[i], froms[i], tos[i], ttls[i], owners[i] = c.req.rangeID, c.req.span.From, c.req.span.To, c.req.ttlUS, c.req.owner
	}
	now := s.now()
	var got []struct {
		RangeID int64 `db:"range_id"`
		From    int64 `db:"from_n"`
	}
	if err := s.db.SelectContext(ctx, &got, s.q(`INSERT INTO chunk_claims (range_id, from_n, to_n, owner, expires_us, since_us)
		SELECT c.range_id, c.from_n, c.to_n, c.owner, {now} + c.ttl_us, {now}
		FROM unnest(CAST(? AS BIGINT[]), CAST(? AS BIGINT[]), CAST(? AS BIGINT[]), CAST(? AS TEXT[]), CAST(? AS BIGINT[]))
			AS c(range_id, from_n, to_n, owner, ttl_us)
		`+claimSet+` RETURNING range_id, from_n`),
		now, now, ids, froms, tos, owners, ttls, now); err != nil {
		return fmt.Errorf("claim chunk: %w", err)
	}
	claimed := make(map[chunkKey]bool, len(got))
	for _, g := range got {
		claimed[chunkKey{g.RangeID, g.From}] = true
	}
	for _, c := range round {
		c.res, c.err = claimed[chunkKey{c.req.rangeID, c.req.span.From}], nil
	}
	return nil
}

// ChunkFetched implements spool.Claims. On PostgreSQL it also notifies the
// coordinators sharing the database, in the same statement, that the chunk
// is stored (see ListenChunks). Concurrent calls are written in rounds (see
// committer).
func (s *Store) ChunkFetched(ctx context.Context, rangeID int64, span lease.Span, owner string) error {
	_, err := s.fetched.do(ctx, chunkReq{rangeID: rangeID, span: span, owner: owner})
	return err
}

// fetchedRound marks a round of claims fetched with one statement; on
// PostgreSQL the same statement notifies the other coordinators of each
// claim it marked, and the notes go out on commit.
func (s *Store) fetchedRound(ctx context.Context, round []*call[chunkReq, struct{}]) {
	commitRound(ctx, round, func(ctx context.Context, round []*call[chunkReq, struct{}]) error {
		var sb strings.Builder
		var args []any
		if s.channel != "" {
			sb.WriteString("WITH u AS (")
		}
		sb.WriteString("UPDATE chunk_claims SET fetched = TRUE WHERE ")
		for i, c := range round {
			if i > 0 {
				sb.WriteString(" OR ")
			}
			sb.WriteString("(range_id = ? AND from_n = ? AND owner = ?)")
			args = append(args, c.req.rangeID, c.req.span.From, c.req.owner)
		}
		sb.WriteString(" RETURNING range_id, from_n, to_n")
		if s.channel != "" {
			sb.WriteString(") SELECT range_id, from_n, to_n, CAST(pg_notify(?, range_id || ' ' || from_n || ' ' || to_n) AS TEXT) FROM u")
			args = append(args, s.channel)
		}
		rows, err := s.db.QueryContext(ctx, s.bind(sb.String()), args...)
		if err != nil {
			return fmt.Errorf("chunk fetched: %w", err)
		}
		defer rows.Close()
		marked := make(map[chunkKey]bool, len(round))
		for rows.Next() {
			var id, from, to int64
			dest := []any{&id, &from, &to}
			if s.channel != "" {
				dest = append(dest, new(string))
			}
			if err := rows.Scan(dest...); err != nil {
				return fmt.Errorf("chunk fetched: %w", err)
			}
			marked[chunkKey{id, from}] = true
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("chunk fetched: %w", err)
		}
		for _, c := range round {
			q := c.req
			c.err = nil
			if !marked[chunkKey{q.rangeID, q.span.From}] {
				c.err = fmt.Errorf("chunk fetched: range %d chunk %d: %w: %s holds no claim", q.rangeID, q.span.From, edgeindex.ErrLeaseLost, q.owner)
			}
		}
		return nil
	})
}

// ForgetChunk implements spool.Claims. Only owner's claim is dropped: a
// coordinator whose fetch failed after its claim expired and went to
// another must not free the chunk for a third.
func (s *Store) ForgetChunk(ctx context.Context, rangeID int64, span lease.Span, owner string) error {
	if _, err := s.db.ExecContext(ctx, s.q("DELETE FROM chunk_claims WHERE range_id = ? AND from_n = ? AND owner = ?"),
		rangeID, span.From, owner); err != nil {
		return fmt.Errorf("forget chunk: %w", err)
	}
	return nil
}

var _ prefetch.Targets = (*Store)(nil)

// PrefetchTargets implements prefetch.Targets: the leased ranges, then up to
// lookahead pending ones in grant order, leaving out those that wait out a
// retry delay (they are not granted either, and fetching one would count
// another attempt before its time).
func (s *Store) PrefetchTargets(ctx context.Context, lookahead int) ([]prefetch.Target, error) {
	var rows []rangeRow
	if err := s.rdb.SelectContext(ctx, &rows, s.q("SELECT "+rangeCols+
		" FROM ranges WHERE state = 'leased' ORDER BY lane_rank, start_n LIMIT 10000")); err != nil {
		return nil, fmt.Errorf("prefetch targets: %w", err)
	}
	if lookahead > 0 {
		var pending []rangeRow
		if err := s.rdb.SelectContext(ctx, &pending, s.q("SELECT "+rangeCols+
			" FROM ranges WHERE state = 'pending' AND (expires_us IS NULL OR expires_us < {now}) ORDER BY "+grantOrder+" LIMIT ?"), s.now(), lookahead); err != nil {
			return nil, fmt.Errorf("prefetch targets: %w", err)
		}
		rows = append(rows, pending...)
	}
	out := make([]prefetch.Target, 0, len(rows))
	for _, r := range rows {
		rg, g, err := s.toRange(ctx, s.rdb, r)
		if err != nil {
			return nil, err
		}
		out = append(out, prefetch.Target{Range: rg, ChunkSize: g.ChunkSize})
	}
	return out, nil
}

var _ spool.CorruptClaims = (*Store)(nil)

// ChunkCorrupt implements spool.CorruptClaims: the source cannot make the
// chunk (it passes the frame limit, say), which counts an attempt of its
// range as a worker's corrupt report does. The range keeps its state
// (pending, or leased to the worker waiting for the chunk) and is fetched
// again at the next pass, until MaxAttempts: then it is failed, with
// reason, and leased to no one. Owner's claim of the chunk is dropped; an
// attempt is counted only when owner still owned it (unexpired), so a
// fetch that outlived its claim counts nothing. A range that is neither
// pending nor leased is returned as it is.
func (s *Store) ChunkCorrupt(ctx context.Context, rangeID int64, span lease.Span, owner, reason string) (lease.Range, error) {
	defer s.known.forget(rangeID) // a failed range is no longer its holder's
	var out lease.Range
	err := s.tx(ctx, func(tx *sqlx.Tx) error {
		var r rangeRow
		err := tx.GetContext(ctx, &r, s.q("SELECT "+rangeCols+" FROM ranges WHERE id = ? {forupdate}"), rangeID)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("chunk corrupt: range %d: %w", rangeID, edgeindex.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("chunk corrupt: %w", err)
		}
		// Only the holder of the chunk's claim counts: a fetch that outlived
		// its claim, which another coordinator took since, counts nothing.
		res, err := tx.ExecContext(ctx, s.q("DELETE FROM chunk_claims WHERE range_id = ? AND from_n = ? AND owner = ? AND expires_us >= {now}"),
			rangeID, span.From, owner, s.now())
		if err != nil {
			return fmt.Errorf("chunk corrupt: %w", err)
		}
		owned, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("chunk corrupt: %w", err)
		}
		if owned == 1 && (r.State == string(lease.StatePending) || r.State == string(lease.StateLeased)) {
			if reason == "" {
				reason = "the source refused the chunk"
			}
			if err := s.countAttempt(ctx, tx, &r, true, fmt.Sprintf("chunk %d: %s", span.From, reason)); err != nil {
				return fmt.Errorf("chunk corrupt: %w", err)
			}
		}
		out, _, err = s.toRange(ctx, tx, r)
		return err
	})
	return out, err
}

// FetchingClaim is a chunk claim whose fetch has not ended: a chunk being
// fetched now, or one whose fetch was given up without its claim being
// dropped (the coordinator died).
type FetchingClaim struct {
	RangeID int64      `json:"rangeId"`
	Group   string     `json:"group"`
	Span    lease.Span `json:"span"`
	Owner   string     `json:"owner"`
	// ExpiresIn is how long the claim still holds, by the database's
	// clock; below zero, it ran out that long ago (its owner stopped
	// renewing it), and the next coordinator to ask takes it.
	ExpiresIn time.Duration `json:"expiresIn"`
	// RunningFor is how long ago its owner first claimed it, by the same
	// clock: how long the fetch has run, its retries included. It is -1
	// for a claim taken before the store kept that (migration 0007).
	RunningFor time.Duration `json:"runningFor"`
}

// FetchingClaims lists up to limit claims whose chunk is not fetched,
// the soonest to expire first: unexpired ones, and those that ran out
// in ranges still pending or leased (their owner is gone: another takes
// them at its next claim). A stuck fetch shows here for as long as its
// coordinator keeps trying.
func (s *Store) FetchingClaims(ctx context.Context, limit int) ([]FetchingClaim, error) {
	var rows []struct {
		RangeID int64  `db:"range_id"`
		Group   string `db:"name"`
		From    int64  `db:"from_n"`
		To      int64  `db:"to_n"`
		Owner   string `db:"owner"`
		Left    int64  `db:"left_us"`
		Ran     int64  `db:"ran_us"`
	}
	now := s.now()
	if err := s.rdb.SelectContext(ctx, &rows, s.q(`SELECT c.range_id, g.name, c.from_n, c.to_n, c.owner, c.expires_us - {now} AS left_us,
			COALESCE({now} - c.since_us, -1) AS ran_us
		FROM chunk_claims c JOIN ranges r ON r.id = c.range_id JOIN groups g ON g.id = r.group_id
		WHERE NOT c.fetched AND (c.expires_us >= {now} OR r.state IN ('pending', 'leased'))
		ORDER BY c.expires_us, c.range_id, c.from_n LIMIT ?`), now, now, now, limit); err != nil {
		return nil, fmt.Errorf("fetching claims: %w", err)
	}
	out := make([]FetchingClaim, len(rows))
	for i, r := range rows {
		out[i] = FetchingClaim{RangeID: r.RangeID, Group: r.Group, Span: lease.Span{From: r.From, To: r.To}, Owner: r.Owner,
			ExpiresIn: time.Duration(r.Left) * time.Microsecond, RunningFor: time.Duration(r.Ran) * time.Microsecond}
		if r.Ran < 0 {
			out[i].RunningFor = -1
		}
	}
	return out, nil
}
