package sqlstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
)

// PlanRepairs implements grouplease.PlanStore. Each group is planned in a
// transaction of its own that locks the group.
func (s *Store) PlanRepairs(ctx context.Context) ([]lease.Range, error) {
	var groups []int64
	if err := s.rdb.SelectContext(ctx, &groups,
		"SELECT DISTINCT group_id FROM missing WHERE state IN ('waiting', 'repairing') ORDER BY group_id"); err != nil {
		return nil, fmt.Errorf("plan repairs: %w", err)
	}
	var out []lease.Range
	for _, id := range groups {
		added, err := s.planRepairs(ctx, id)
		if err != nil {
			return out, fmt.Errorf("plan repairs: %w", err)
		}
		out = append(out, added...)
	}
	return out, nil
}

func (s *Store) planRepairs(ctx context.Context, groupID int64) ([]lease.Range, error) {
	g, err := s.groupByID(ctx, s.rdb, groupID)
	if err != nil {
		return nil, err
	}
	var out []lease.Range
	err = s.tx(ctx, func(tx *sqlx.Tx) error {
		out = nil
		if err := s.lockGroup(ctx, tx, g); err != nil {
			return err
		}
		now, err := s.clock(ctx, tx)
		if err != nil {
			return err
		}
		if err := s.settleMissing(ctx, tx, g.ID, now); err != nil {
			return err
		}
		var open int
		if err := tx.GetContext(ctx, &open, s.q(`SELECT COUNT(*) FROM ranges
			WHERE group_id = ? AND repair AND state IN ('pending', 'leased')`), g.ID); err != nil {
			return err
		}
		budget := s.cfg.PlanAhead - open
		if budget <= 0 {
			return nil
		}
		var due []dueArticle
		// Enough numbers for budget runs of a chunk, at most maxDue a pass.
		limit := int64(maxDue)
		if g.ChunkSize < limit/int64(budget) {
			limit = int64(budget) * g.ChunkSize
		}
		if err := tx.SelectContext(ctx, &due, s.q(`SELECT number, lane FROM missing
			WHERE group_id = ? AND state = 'waiting' AND due_us <= ? ORDER BY number LIMIT ?`),
			g.ID, now, limit); err != nil {
			return err
		}
		out, err = s.addRepairs(ctx, tx, g, repairRuns(due, g.ChunkSize, budget))
		return err
	})
	return out, err
}

// settleMissing marks lost the missing articles of a group that fell below
// its trusted low watermark, and counts a try of those whose repair range
// failed.
func (s *Store) settleMissing(ctx context.Context, tx *sqlx.Tx, groupID int64, now int64) error {
	// Below the low watermark an article has expired: it never comes.
	if _, err := tx.ExecContext(ctx, s.q(`UPDATE missing SET state = 'lost'
		WHERE group_id = ? AND state = 'waiting' AND number < (SELECT COALESCE(low, 0) FROM plans WHERE group_id = ?)`),
		groupID, groupID); err != nil {
		return err
	}
	// A repair range that failed counts as one try of its articles, due
	// at once: the range's own attempts took their time.
	_, err := tx.ExecContext(ctx, s.q(`UPDATE missing SET `+retrySet+`
		WHERE group_id = ? AND state = 'repairing'
		  AND range_id IN (SELECT id FROM ranges WHERE group_id = ? AND repair AND state = 'failed')`),
		s.cfg.RepairTries, now, groupID, groupID)
	return err
}

// dueArticle is a missing article due for a repair.
type dueArticle struct {
	Number int64  `db:"number"`
	Lane   string `db:"lane"`
}

// repairRuns groups due articles, in ascending order, into runs of
// consecutive numbers of one lane, a chunk at most each, budget runs at most.
func repairRuns(due []dueArticle, chunkSize int64, budget int) map[lease.Lane][]lease.Span {
	runs := map[lease.Lane][]lease.Span{}
	var last *lease.Span
	lastLane := lease.Lane("")
	n := 0
	for _, d := range due {
		lane := lease.Lane(d.Lane)
		if last != nil && lane == lastLane && d.Number == last.To+1 && d.Number-last.From < chunkSize {
			last.To = d.Number
			continue
		}
		if n == budget {
			break
		}
		runs[lane] = append(runs[lane], lease.Span{From: d.Number, To: d.Number})
		last, lastLane = &runs[lane][len(runs[lane])-1], lane
		n++
	}
	return runs
}

// addRepairs adds a repair range for each run, tail lane first, and marks
// its articles repairing under it.
func (s *Store) addRepairs(ctx context.Context, tx *sqlx.Tx, g grouplease.Group, runs map[lease.Lane][]lease.Span) ([]lease.Range, error) {
	var out []lease.Range
	for _, lane := range []lease.Lane{lease.LaneTail, lease.LaneHistory} {
		if len(runs[lane]) == 0 {
			continue
		}
		added, err := s.insertRanges(ctx, tx, g, lane, runs[lane], false, true)
		if err != nil {
			return nil, err
		}
		for _, r := range added {
			if _, err := tx.ExecContext(ctx, s.q(`UPDATE missing SET state = 'repairing', range_id = ?
				WHERE group_id = ? AND state = 'waiting' AND number BETWEEN ? AND ?`), r.ID, g.ID, r.Start, r.End); err != nil {
				return nil, err
			}
		}
		out = append(out, added...)
	}
	return out, nil
}

// maxDue bounds the missing articles one repair pass of a group reads.
const maxDue = 100_000

// retrySet counts one more try of a missing article: it waits for the next,
// or is lost after the last. Its arguments are the tries and the due time.
const retrySet = `state = CASE WHEN tries + 1 >= ? THEN 'lost' ELSE 'waiting' END, tries = tries + 1, range_id = NULL, due_us = ?`

// putMissing records a stored batch's missing articles, inside its
// transaction. On a plain range they wait for repair; on a repair range the
// ones named again count a try, and the rest of the span arrived.
func (s *Store) putMissing(ctx context.Context, tx *sqlx.Tx, r rangeRow, b batch.Batch) error {
	if len(b.Missing) == 0 && !r.Repair {
		return nil
	}
	now, err := s.clock(ctx, tx)
	if err != nil {
		return err
	}
	due := now + s.cfg.RepairDelay.Microseconds()
	const perStatement = 500
	for rest := b.Missing; len(rest) > 0; {
		part := rest[:min(perStatement, len(rest))]
		rest = rest[len(part):]
		var sb strings.Builder
		var args []any
		if r.Repair {
			sb.WriteString("UPDATE missing SET " + retrySet + " WHERE group_id = ? AND range_id = ? AND number IN (")
			args = append(args, s.cfg.RepairTries, due, r.GroupID, r.ID)
			for i, n := range part {
				if i > 0 {
					sb.WriteString(", ")
				}
				sb.WriteString("?")
				args = append(args, n)
			}
			sb.WriteString(")")
		} else {
			sb.WriteString("INSERT INTO missing (group_id, number, lane, state, due_us) VALUES ")
			for i, n := range part {
				if i > 0 {
					sb.WriteString(", ")
				}
				sb.WriteString("(?, ?, ?, 'waiting', ?)")
				args = append(args, r.GroupID, n, r.Lane, due)
			}
			sb.WriteString(" ON CONFLICT (group_id, number) DO NOTHING")
		}
		if _, err := tx.ExecContext(ctx, s.bind(sb.String()), args...); err != nil {
			return err
		}
	}
	if r.Repair {
		_, err = tx.ExecContext(ctx, s.q(`UPDATE missing SET state = 'repaired', range_id = NULL
			WHERE range_id = ? AND state = 'repairing' AND number BETWEEN ? AND ?`), r.ID, b.From, b.To)
	}
	return err
}
