package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"unsafe"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/jmoiron/sqlx"
)

// copyAbove is the fewest items PostgreSQL gets with a COPY: a COPY's
// start costs more than a multi-row insert of a few rows (a round of small
// batches: 0.68 ms a COPY of ~7 rows in the lease-cycle bench).
const copyAbove = 500

// insertItems writes the items of batches stored in one transaction. A
// COPY on PostgreSQL writes many items at once; otherwise it returns
// multi-row inserts for the caller to run (execParts), their xid the
// storing transaction's ({xid}). Never one row per round trip. conn is
// tx's connection.
func (s *Store) insertItems(ctx context.Context, conn *sql.Conn, tx *sqlx.Tx, puts []storedBatch) ([]part, error) {
	n := 0
	for _, p := range puts {
		n += len(p.b.Items)
	}
	if n == 0 {
		return nil, nil
	}
	if s.d.copies() && n >= copyAbove {
		var xid int64
		if err := tx.GetContext(ctx, &xid, s.q("SELECT {xid}")); err != nil {
			return nil, err
		}
		return nil, copyItems(ctx, conn, xid, puts)
	}
	const perInsert = 1000 // 6 parameters each, well under SQLite's and PostgreSQL's limits
	var parts []part
	var sb strings.Builder
	var args []any
	for _, p := range puts {
		for _, it := range p.b.Items {
			if len(args) == 0 {
				sb.WriteString("INSERT INTO items (xid, group_id, range_id, from_n, to_n, key, value) VALUES ")
			} else {
				sb.WriteByte(',')
			}
			sb.WriteString("({xid},?,?,?,?,?,?)")
			args = append(args, p.r.GroupID, p.r.ID, p.b.From, p.b.To, it.Key, jsonValue(it.Value))
			if len(args) == perInsert*6 {
				parts = append(parts, part{sb.String(), args})
				sb.Reset()
				args = nil
			}
		}
	}
	if len(args) > 0 {
		parts = append(parts, part{sb.String(), args})
	}
	return parts, nil
}

// jsonValue stores an absent value as JSON null.
func jsonValue(v []byte) string {
	if len(v) == 0 {
		return "null"
	}
	return string(v)
}

// copyItems is insertItems on PostgreSQL: one binary COPY (pgx's
// CopyFrom) on conn, in the transaction that conn runs, the rows read from
// puts as pgx encodes them.
func copyItems(ctx context.Context, conn *sql.Conn, xid int64, puts []storedBatch) error {
	rows := &itemRows{xid: xid, puts: puts}
	return conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("sqlstore: COPY on a %T, not pgx's connection", dc)
		}
		n, err := c.Conn().CopyFrom(ctx, pgx.Identifier{"items"}, []string{"xid", "group_id", "range_id", "from_n", "to_n", "key", "value"}, rows)
		if err == nil && n != rows.n {
			err = fmt.Errorf("sqlstore: COPY wrote %d items of %d", n, rows.n)
		}
		return err
	})
}

// itemRows is a pgx.CopyFromSource of the items of puts, one row each. A
// row's arguments live in one array: the five numbers are boxed once a
// batch, and the value is passed without a copy (valueText).
type itemRows struct {
	xid  int64
	puts []storedBatch
	p, i int // the row is puts[p].b.Items[i-1]
	n    int64
	row  [7]any
}

func (r *itemRows) Next() bool {
	for ; r.p < len(r.puts); r.p, r.i = r.p+1, 0 {
		if r.i < len(r.puts[r.p].b.Items) {
			if r.i == 0 {
				p := r.puts[r.p]
				r.row = [7]any{r.xid, p.r.GroupID, p.r.ID, p.b.From, p.b.To}
			}
			r.i++
			r.n++
			return true
		}
	}
	return false
}

func (r *itemRows) Values() ([]any, error) {
	it := r.puts[r.p].b.Items[r.i-1]
	r.row[5], r.row[6] = it.Key, valueText(it.Value)
	return r.row[:], nil
}

func (r *itemRows) Err() error { return nil }

// valueText is jsonValue without copying v: the string shares v's bytes.
// It is for arguments that the driver has encoded before it returns
// (pgx's COPY encodes each row into its buffer as it reads it), of batches
// whose values nobody changes while they are stored (a decoded body's values are slices of the body).
// A value is 500 B to 4 KiB: its copy was a fifth of the Go side of a COPY.
func valueText(v []byte) string {
	if len(v) == 0 {
		return "null"
	}
	return unsafe.String(&v[0], len(v))
}
