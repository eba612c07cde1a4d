package sqlstore

import (
	"context"
	"strings"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/edgeindex/edgeindex/batch"
)

// storedBatch is a batch being stored for range r.
type storedBatch struct {
	r rangeRow
	b batch.Batch
}

// insertItems writes the items of batches stored in one transaction: COPY on PostgreSQL, multi-row
// inserts on SQLite. Never one row per round trip.
func (s *Store) insertItems(ctx context.Context, tx *sqlx.Tx, xid int64, puts []storedBatch) error {
	n := 0
	for _, p := range puts {
		n += len(p.b.Items)
	}
	if n == 0 {
		return nil
	}
	if s.d.name == "postgres" {
		stmt, err := tx.PrepareContext(ctx, pq.CopyIn("items", "xid", "group_id", "range_id", "from_n", "to_n", "key", "value"))
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, p := range puts {
			for _, it := range p.b.Items {
				if _, err := stmt.ExecContext(ctx, xid, p.r.GroupID, p.r.ID, p.b.From, p.b.To, it.Key, jsonValue(it.Value)); err != nil {
					return err
				}
			}
		}
		_, err = stmt.ExecContext(ctx)
		return err
	}
	const perInsert = 1000 // 7 parameters each, well under SQLite's limit
	var sb strings.Builder
	args := make([]any, 0, min(n, perInsert)*7)
	flush := func() error {
		if len(args) == 0 {
			return nil
		}
		_, err := tx.ExecContext(ctx, sb.String(), args...)
		sb.Reset()
		args = args[:0]
		return err
	}
	for _, p := range puts {
		for _, it := range p.b.Items {
			if len(args) == 0 {
				sb.WriteString("INSERT INTO items (xid, group_id, range_id, from_n, to_n, key, value) VALUES ")
			} else {
				sb.WriteByte(',')
			}
			sb.WriteString("(?,?,?,?,?,?,?)")
			args = append(args, xid, p.r.GroupID, p.r.ID, p.b.From, p.b.To, it.Key, jsonValue(it.Value))
			if len(args) == perInsert*7 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	return flush()
}

// jsonValue stores an absent value as JSON null.
func jsonValue(v []byte) string {
	if len(v) == 0 {
		return "null"
	}
	return string(v)
}
