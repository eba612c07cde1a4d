package sqlstore

import (
	"context"
	"strings"
	"unsafe"

	"github.com/jmoiron/sqlx"
)

// copyAbove is the fewest items PostgreSQL gets with a COPY: a COPY's
// start costs more than a multi-row insert of a few rows (a round of small
// batches: 0.68 ms a COPY of ~7 rows in the lease-cycle bench).
const copyAbove = 500

// insertItems writes the items of batches stored in one transaction. A
// COPY on PostgreSQL writes many items at once; otherwise it returns
// multi-row inserts for the caller to run (execParts), their xid the
// storing transaction's ({xid}). Never one row per round trip.
func (s *Store) insertItems(ctx context.Context, tx *sqlx.Tx, puts []storedBatch) ([]part, error) {
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
		return nil, copyItems(ctx, tx, xid, puts)
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

// copyItems is insertItems on PostgreSQL: one COPY, one row a call (the
// only way lib/pq takes COPY data through database/sql), each row sent as
// lib/pq encodes it into its buffer. A row's arguments live in one slice:
// the five numbers are boxed once a batch, and the value is passed without
// a copy (valueText).
func copyItems(ctx context.Context, tx *sqlx.Tx, xid int64, puts []storedBatch) error {
	stmt, err := tx.PrepareContext(ctx, "COPY items (xid, group_id, range_id, from_n, to_n, key, value) FROM STDIN")
	if err != nil {
		return err
	}
	defer stmt.Close()
	args := make([]any, 7)
	args[0] = xid
	for _, p := range puts {
		args[1], args[2], args[3], args[4] = p.r.GroupID, p.r.ID, p.b.From, p.b.To
		for _, it := range p.b.Items {
			args[5], args[6] = it.Key, valueText(it.Value)
			if _, err := stmt.ExecContext(ctx, args...); err != nil {
				return err
			}
		}
	}
	_, err = stmt.ExecContext(ctx)
	return err
}

// valueText is jsonValue without copying v: the string shares v's bytes.
// It is for arguments that the driver has encoded before ExecContext
// returns (lib/pq's COPY appends each row to its own buffer, and
// database/sql keeps no argument), of batches whose values nobody changes
// while they are stored (a decoded body's values are slices of the body).
// A value is 500 B to 4 KiB: its copy was a fifth of the Go side of a COPY.
func valueText(v []byte) string {
	if len(v) == 0 {
		return "null"
	}
	return unsafe.String(&v[0], len(v))
}
