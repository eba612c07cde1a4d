package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/lease"
)

// Put implements batch.Store. A final batch finishes the range in the same
// transaction (see finishHeld), so a range's last chunk costs one commit
// rather than two.
func (s *Store) Put(ctx context.Context, rangeID int64, f lease.Fence, b batch.Batch) (batch.Result, error) {
	var res batch.Result
	err := s.tx(ctx, func(tx *sqlx.Tx) error {
		r, err := s.heldRange(ctx, tx, "batch", rangeID, f, " {forupdate}")
		if err != nil {
			if b.Final {
				return finalRetry(r, b, &res, err)
			}
			return err
		}
		outcome, err := batch.Classify(r.Next, r.End, b)
		if err != nil {
			return fmt.Errorf("batch: range %d: %w", rangeID, err)
		}
		if outcome == batch.Duplicate {
			res = batch.Result{Next: r.Next, Duplicate: true}
			if b.Final { // next > end: the range can be finished
				res.Done = true
				return s.finishHeld(ctx, tx, "batch", rangeID, false)
			}
			return nil
		}
		var xid int64
		if err := tx.GetContext(ctx, &xid, s.q(`INSERT INTO batches (range_id, node, from_n, to_n, headers, items, at_us)
			VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING {xid}`),
			rangeID, f.Node, b.From, b.To, b.Headers, len(b.Items), s.nowMicros()); err != nil {
			return fmt.Errorf("batch: %w", err)
		}
		if err := s.insertItems(ctx, tx, xid, []storedBatch{{r, b}}); err != nil {
			return fmt.Errorf("batch: items: %w", err)
		}
		if err := s.putMissing(ctx, tx, r, b); err != nil {
			return fmt.Errorf("batch: missing: %w", err)
		}
		res = batch.Result{Next: b.To + 1}
		if b.Final {
			res.Done = true
			if _, err := tx.ExecContext(ctx, s.q(`UPDATE ranges SET next_n = ?, headers = headers + ?,
				state = 'done', node = NULL, expires_us = NULL WHERE id = ?`), b.To+1, b.Headers, rangeID); err != nil {
				return fmt.Errorf("batch: %w", err)
			}
			return s.finishHeld(ctx, tx, "batch", rangeID, true)
		}
		if _, err := tx.ExecContext(ctx, s.q("UPDATE ranges SET next_n = ?, headers = headers + ? WHERE id = ?"),
			b.To+1, b.Headers, rangeID); err != nil {
			return fmt.Errorf("batch: %w", err)
		}
		return nil
	})
	return res, err
}

// finalRetry answers a final batch refused by the fence with lost: when f's
// own grant finished the range (lease.ErrFinished), the batch is the retry
// of the one that finished it, and gets Duplicate and Done; nothing is
// written. Anything else keeps lost.
func finalRetry(r rangeRow, b batch.Batch, res *batch.Result, lost error) error {
	if !errors.Is(lost, lease.ErrFinished) {
		return lost
	}
	if _, err := batch.Classify(r.Next, r.End, b); err != nil {
		return fmt.Errorf("batch: range %d: %w", r.ID, err)
	}
	*res = batch.Result{Next: r.Next, Duplicate: true, Done: true}
	return nil
}

// Results implements batch.Store. On PostgreSQL the feed orders items by
// the transaction that stored them and shows only items below the oldest
// running transaction, so a page never skips an item that commits later;
// on SQLite, whose one writer commits in id order, by id.
func (s *Store) Results(ctx context.Context, q batch.Query) (batch.Page, error) {
	if q.Limit == 0 {
		q.Limit = 100
	}
	if q.Limit < 0 || q.Limit > 10000 {
		return batch.Page{}, lease.Invalidf("results: limit %d must be 1 to 10000", q.Limit)
	}
	afterXID, afterID, err := parseCursor(q.After)
	if err != nil {
		return batch.Page{}, err
	}
	query := "SELECT id, xid, range_id, from_n, to_n, key, value FROM items WHERE (xid, id) > (?, ?) {visible}"
	args := []any{afterXID, afterID}
	if q.Group != "" {
		g, err := s.Group(ctx, q.Group)
		if err != nil {
			return batch.Page{}, fmt.Errorf("results: %w", err)
		}
		query += " AND group_id = ?"
		args = append(args, g.ID)
	}
	query += " ORDER BY xid, id LIMIT ?"
	args = append(args, q.Limit)
	rows, err := s.rdb.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return batch.Page{}, fmt.Errorf("results: %w", err)
	}
	defer rows.Close()
	page := batch.Page{Results: []batch.Stored{}}
	var xid int64
	for rows.Next() {
		var it batch.Stored
		var value string
		if err := rows.Scan(&it.ID, &xid, &it.Range, &it.From, &it.To, &it.Key, &value); err != nil {
			return batch.Page{}, fmt.Errorf("results: %w", err)
		}
		it.Value = []byte(value)
		page.Results = append(page.Results, it)
	}
	if err := rows.Err(); err != nil {
		return batch.Page{}, fmt.Errorf("results: %w", err)
	}
	if n := len(page.Results); n > 0 {
		page.Next = strconv.FormatInt(xid, 10) + "." + strconv.FormatInt(page.Results[n-1].ID, 10)
	} else {
		page.Next = q.After
	}
	return page, nil
}

// parseCursor reads "XID.ID"; the empty cursor is the start of the feed.
func parseCursor(c string) (xid, id int64, err error) {
	if c == "" {
		return -1, 0, nil
	}
	x, i, ok := strings.Cut(c, ".")
	if ok {
		xid, err = strconv.ParseInt(x, 10, 64)
	}
	if ok && err == nil {
		id, err = strconv.ParseInt(i, 10, 64)
	}
	if !ok || err != nil || xid < 0 || id < 0 {
		return 0, 0, fmt.Errorf("results: %w: %q", batch.ErrBadCursor, c)
	}
	return xid, id, nil
}

// Batches implements batch.Store.
func (s *Store) Batches(ctx context.Context, node string, before int64, limit int) ([]batch.Record, error) {
	if limit == 0 {
		limit = 50
	}
	if limit < 0 || limit > 1000 || before < 0 {
		return nil, lease.Invalidf("batches: limit must be 1 to 1000 and before not negative")
	}
	if before == 0 {
		before = math.MaxInt64
	}
	rows, err := s.rdb.QueryContext(ctx, s.q(`SELECT id, range_id, from_n, to_n, headers, items, at_us FROM batches
		WHERE node = ? AND id < ? ORDER BY id DESC LIMIT ?`), node, before, limit)
	if err != nil {
		return nil, fmt.Errorf("batches: %w", err)
	}
	defer rows.Close()
	out := []batch.Record{}
	for rows.Next() {
		var r batch.Record
		var at int64
		if err := rows.Scan(&r.ID, &r.Range, &r.From, &r.To, &r.Headers, &r.Items, &at); err != nil {
			return nil, fmt.Errorf("batches: %w", err)
		}
		r.At = time.UnixMicro(at).UTC()
		out = append(out, r)
	}
	return out, rows.Err()
}
