package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/spool"
)

var _ spool.Claims = (*Store)(nil)

// ClaimChunk implements spool.Claims. A claim is taken over by its own
// owner at any time (its copy was lost), and by anyone once it expired,
// fetched or not. A coordinator asks only for a chunk its spool lacks
// (spool.Prefetcher), so an expired claim of another owner means the chunk
// is not where this coordinator can serve it: that owner's spool is lost, is
// not shared with this one, or the owner came back under another name.
// Before expiry a claim holds, fetched or not: its chunk is being fetched,
// or was just stored in its owner's spool, which other coordinators may
// share (a bucket), and is not fetched twice. The fetched flag decides
// nothing any more; it only tells which claims were completed.
func (s *Store) ClaimChunk(ctx context.Context, rangeID int64, span lease.Span, owner string, ttl time.Duration) (bool, error) {
	if owner == "" || span.From > span.To {
		return false, lease.Invalidf("claim chunk: an owner and a span with from <= to are required")
	}
	ttlUS, err := ttlMicros(ttl)
	if err != nil {
		return false, err
	}
	now := s.now()
	var got string
	err = s.db.GetContext(ctx, &got, s.q(`
		INSERT INTO chunk_claims (range_id, from_n, to_n, owner, expires_us) VALUES (?, ?, ?, ?, {now} + ?)
		ON CONFLICT (range_id, from_n) DO UPDATE SET owner = excluded.owner, expires_us = excluded.expires_us, fetched = FALSE
		WHERE chunk_claims.owner = excluded.owner OR chunk_claims.expires_us < {now}
		RETURNING owner`), rangeID, span.From, span.To, owner, now, ttlUS, now)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("claim chunk: %w", err)
	}
	return true, nil
}

// ChunkFetched implements spool.Claims. On PostgreSQL it also notifies the
// coordinators sharing the database, in the same transaction, that the
// chunk is stored (see ListenChunks).
func (s *Store) ChunkFetched(ctx context.Context, rangeID int64, span lease.Span, owner string) error {
	n, err := s.markFetched(ctx, rangeID, span, owner)
	if err != nil {
		return fmt.Errorf("chunk fetched: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("chunk fetched: range %d chunk %d: %w: %s holds no claim", rangeID, span.From, lease.ErrLeaseLost, owner)
	}
	return nil
}

// markFetched marks owner's claim fetched and returns how many claims it
// marked. On PostgreSQL the same statement notifies the other coordinators
// when it marked one: one round trip, and the note goes out on commit.
func (s *Store) markFetched(ctx context.Context, rangeID int64, span lease.Span, owner string) (int64, error) {
	const update = `UPDATE chunk_claims SET fetched = TRUE WHERE range_id = ? AND from_n = ? AND owner = ?`
	if s.channel == "" {
		res, err := s.db.ExecContext(ctx, s.q(update), rangeID, span.From, owner)
		if err != nil {
			return 0, err
		}
		return res.RowsAffected()
	}
	rows, err := s.db.QueryContext(ctx, s.bind("WITH u AS ("+update+" RETURNING 1) SELECT pg_notify(?, ?) FROM u"),
		rangeID, span.From, owner, s.channel, chunkNote(rangeID, span))
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var n int64
	for rows.Next() {
		n++
	}
	return n, rows.Err()
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

var _ spool.Targets = (*Store)(nil)

// PrefetchTargets implements spool.Targets: the leased ranges, then up to
// lookahead pending ones, each in grant order.
func (s *Store) PrefetchTargets(ctx context.Context, lookahead int) ([]spool.Target, error) {
	var rows []rangeRow
	if err := s.rdb.SelectContext(ctx, &rows, s.q("SELECT "+rangeCols+
		" FROM ranges WHERE state = 'leased' ORDER BY lane_rank, start_n LIMIT 10000")); err != nil {
		return nil, fmt.Errorf("prefetch targets: %w", err)
	}
	if lookahead > 0 {
		var pending []rangeRow
		if err := s.rdb.SelectContext(ctx, &pending, s.q("SELECT "+rangeCols+
			" FROM ranges WHERE state = 'pending' ORDER BY lane_rank, start_n LIMIT ?"), lookahead); err != nil {
			return nil, fmt.Errorf("prefetch targets: %w", err)
		}
		rows = append(rows, pending...)
	}
	out := make([]spool.Target, 0, len(rows))
	for _, r := range rows {
		rg, g, err := s.toRange(ctx, s.rdb, r)
		if err != nil {
			return nil, err
		}
		out = append(out, spool.Target{Range: rg, ChunkSize: g.ChunkSize})
	}
	return out, nil
}
