package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
)

// maxRangesPerAdd bounds one AddRanges call, so a typo cannot insert
// billions of rows.
const maxRangesPerAdd = 1_000_000

const groupCols = "id, name, ordered, range_size, chunk_size"

type groupRow struct {
	ID        int64  `db:"id"`
	Name      string `db:"name"`
	Ordered   bool   `db:"ordered"`
	RangeSize int64  `db:"range_size"`
	ChunkSize int64  `db:"chunk_size"`
}

func (g groupRow) group() grouplease.Group {
	return grouplease.Group{ID: g.ID, Name: g.Name, Ordered: g.Ordered, RangeSize: g.RangeSize, ChunkSize: g.ChunkSize}
}

// AddGroup implements grouplease.Catalog.
func (s *Store) AddGroup(ctx context.Context, g grouplease.Group) (grouplease.Group, error) {
	g, err := g.Normalize()
	if err != nil {
		return g, err
	}
	insert := `INSERT INTO groups (name, ordered, range_size, chunk_size) VALUES (?, ?, ?, ?)`
	if s.d.reusesIDs() {
		// Above every id a removed group had (id_floors), not only the
		// groups there are.
		insert = `INSERT INTO groups (name, ordered, range_size, chunk_size, id)
			SELECT ?, ?, ?, ?, MAX(h) + 1 FROM (SELECT COALESCE(MAX(id), 0) AS h FROM groups
				UNION ALL SELECT high FROM id_floors WHERE tbl = 'groups') WHERE true`
	}
	var row groupRow
	err = s.db.GetContext(ctx, &row, s.q(insert+`
		ON CONFLICT (name) DO NOTHING RETURNING `+groupCols), g.Name, g.Ordered, g.RangeSize, g.ChunkSize)
	if errors.Is(err, sql.ErrNoRows) {
		return g, fmt.Errorf("add group: %w: group %q exists", edgeindex.ErrConflict, g.Name)
	}
	if err != nil {
		return g, fmt.Errorf("add group: %w", err)
	}
	return s.cacheGroup(row), nil
}

func (s *Store) cacheGroup(row groupRow) grouplease.Group {
	g := row.group()
	s.groupsMu.Lock()
	s.groups[g.ID] = g
	s.groupsMu.Unlock()
	return g
}

// Group implements grouplease.Catalog.
func (s *Store) Group(ctx context.Context, name string) (grouplease.Group, error) {
	var row groupRow
	err := s.rdb.GetContext(ctx, &row, s.q("SELECT "+groupCols+" FROM groups WHERE name = ?"), name)
	if errors.Is(err, sql.ErrNoRows) {
		return grouplease.Group{}, fmt.Errorf("group %q: %w", name, edgeindex.ErrNotFound)
	}
	if err != nil {
		return grouplease.Group{}, fmt.Errorf("group: %w", err)
	}
	return s.cacheGroup(row), nil
}

// Groups lists every group by id.
func (s *Store) Groups(ctx context.Context) ([]grouplease.Group, error) {
	var rows []groupRow
	if err := s.rdb.SelectContext(ctx, &rows, "SELECT "+groupCols+" FROM groups ORDER BY id"); err != nil {
		return nil, fmt.Errorf("groups: %w", err)
	}
	out := make([]grouplease.Group, len(rows))
	for i, r := range rows {
		out[i] = s.cacheGroup(r)
	}
	return out, nil
}

// groupByID reads a group through the cache: groups never change once added.
func (s *Store) groupByID(ctx context.Context, q sqlx.QueryerContext, id int64) (grouplease.Group, error) {
	s.groupsMu.RLock()
	g, ok := s.groups[id]
	s.groupsMu.RUnlock()
	if ok {
		return g, nil
	}
	var row groupRow
	err := sqlx.GetContext(ctx, q, &row, s.q("SELECT "+groupCols+" FROM groups WHERE id = ?"), id)
	if errors.Is(err, sql.ErrNoRows) {
		return g, fmt.Errorf("group %d: %w", id, edgeindex.ErrNotFound)
	}
	if err != nil {
		return g, fmt.Errorf("group: %w", err)
	}
	return s.cacheGroup(row), nil
}

// lockGroup locks g's row for the transaction (on PostgreSQL; SQLite has
// one writer). A group removed meanwhile is edgeindex.ErrNotFound, not the
// foreign key error the writes after would meet.
func (s *Store) lockGroup(ctx context.Context, tx *sqlx.Tx, g grouplease.Group) error {
	var id int64
	err := tx.GetContext(ctx, &id, s.q("SELECT id FROM groups WHERE id = ? {forupdate}"), g.ID)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("group %q: %w", g.Name, edgeindex.ErrNotFound)
	}
	return err
}

// AddRanges implements grouplease.Catalog.
func (s *Store) AddRanges(ctx context.Context, nr grouplease.NewRanges) ([]lease.Range, error) {
	lane, err := lease.ParseLane(string(nr.Lane))
	if err != nil {
		return nil, err
	}
	g, err := s.Group(ctx, nr.Group)
	if err != nil {
		return nil, fmt.Errorf("add ranges: %w", err)
	}
	if nr.From <= nr.To && g.RangeSize > 0 && (nr.To-nr.From)/g.RangeSize >= maxRangesPerAdd {
		return nil, edgeindex.Invalidf("add ranges: %d..%d would make more than %d ranges of %d", nr.From, nr.To, maxRangesPerAdd, g.RangeSize)
	}
	spans, err := grouplease.Plan(nr.From, nr.To, g.RangeSize)
	if err != nil {
		return nil, fmt.Errorf("add ranges: %w", err)
	}
	var out []lease.Range
	err = s.tx(ctx, func(tx *sqlx.Tx) error {
		// Lock the group, so two adds on PostgreSQL cannot both pass the overlap check.
		if err := s.lockGroup(ctx, tx, g); err != nil {
			return err
		}
		var clash rangeRow
		err := tx.GetContext(ctx, &clash, s.q("SELECT "+rangeCols+` FROM ranges
			WHERE group_id = ? AND start_n <= ? AND end_n >= ? ORDER BY start_n LIMIT 1`), g.ID, nr.To, nr.From)
		if err == nil {
			return fmt.Errorf("add ranges: %w: %d..%d overlaps range %d (%d..%d, %s lane) of %q",
				edgeindex.ErrConflict, nr.From, nr.To, clash.ID, clash.Start, clash.End, clash.Lane, g.Name)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		out, err = s.insertRanges(ctx, tx, g, lane, spans, nr.Capture, false)
		return err
	})
	if err != nil && !errors.Is(err, edgeindex.ErrConflict) {
		err = fmt.Errorf("add ranges: %w", err)
	}
	return out, err
}

// Ranges implements grouplease.Catalog.
func (s *Store) Ranges(ctx context.Context, f grouplease.RangeFilter) ([]lease.Range, error) {
	if f.State != "" && !f.State.Valid() {
		return nil, edgeindex.Invalidf("ranges: state: pending, leased, done or failed, not %q", f.State)
	}
	if f.Limit == 0 {
		f.Limit = 100
	}
	if f.Limit < 0 || f.Limit > 10000 {
		return nil, edgeindex.Invalidf("ranges: limit %d must be 1 to 10000", f.Limit)
	}
	query := "SELECT " + rangeCols + " FROM ranges WHERE id > ?"
	args := []any{f.After}
	if f.Group != "" {
		g, err := s.Group(ctx, f.Group)
		if err != nil {
			return nil, fmt.Errorf("ranges: %w", err)
		}
		query += " AND group_id = ?"
		args = append(args, g.ID)
	}
	if f.State != "" {
		query += " AND state = ?"
		args = append(args, string(f.State))
	}
	query += " ORDER BY id LIMIT ?"
	args = append(args, f.Limit)
	var rows []rangeRow
	if err := s.rdb.SelectContext(ctx, &rows, s.bind(query), args...); err != nil {
		return nil, fmt.Errorf("ranges: %w", err)
	}
	out := make([]lease.Range, 0, len(rows))
	for _, r := range rows {
		rg, _, err := s.toRange(ctx, s.rdb, r)
		if err != nil {
			return nil, err
		}
		out = append(out, rg)
	}
	return out, nil
}

// Retry implements grouplease.Catalog.
func (s *Store) Retry(ctx context.Context, group string, ids ...int64) (int, error) {
	g, err := s.Group(ctx, group)
	if err != nil {
		return 0, fmt.Errorf("retry: %w", err)
	}
	query := "UPDATE ranges SET state = 'pending', attempts = 0, reason = '' WHERE group_id = ? AND state = 'failed'"
	args := []any{g.ID}
	if len(ids) > 0 {
		query += " AND id IN (?" + strings.Repeat(", ?", len(ids)-1) + ")"
		for _, id := range ids {
			args = append(args, id)
		}
	}
	res, err := s.db.ExecContext(ctx, s.bind(query), args...)
	if err != nil {
		return 0, fmt.Errorf("retry: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// insertRanges adds the spans as pending ranges of g's lane, inside tx, and
// makes sure the lane has its row. Repair ranges are granted like
// unordered ones whatever the group.
func (s *Store) insertRanges(ctx context.Context, tx *sqlx.Tx, g grouplease.Group, lane lease.Lane, spans []lease.Span, capture, repair bool) ([]lease.Range, error) {
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO lanes (group_id, lane) VALUES (?, ?)
		ON CONFLICT (group_id, lane) DO NOTHING`), g.ID, string(lane)); err != nil {
		return nil, err
	}
	rank := 1
	if lane == lease.LaneTail {
		rank = 0
	}
	ordered := g.Ordered && !repair
	var out []lease.Range
	const perInsert = 500
	for len(spans) > 0 {
		part := spans[:min(perInsert, len(spans))]
		spans = spans[len(part):]
		var sb strings.Builder
		args := make([]any, 0, len(part)*9)
		sb.WriteString(`INSERT INTO ranges (group_id, lane, lane_rank, ordered, start_n, end_n, next_n, capture, repair, state) VALUES `)
		for i, sp := range part {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending')")
			args = append(args, g.ID, string(lane), rank, ordered, sp.From, sp.To, sp.From, capture, repair)
		}
		sb.WriteString(" RETURNING " + rangeCols)
		var rows []rangeRow
		if err := tx.SelectContext(ctx, &rows, s.bind(sb.String()), args...); err != nil {
			return nil, err
		}
		for _, r := range rows {
			rg, _, err := s.toRange(ctx, tx, r)
			if err != nil {
				return nil, err
			}
			out = append(out, rg)
		}
	}
	return out, nil
}
