package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/grouplease"
)

// ErrRangesKept is RemoveGroup's answer on SQLite for a group that has
// ranges, forced or not. It is an edgeindex.ErrConflict.
var ErrRangesKept = fmt.Errorf("%w: SQLite gives a removed range's id to the next range added, which a running "+
	"coordinator's spool and a paused worker's lease may still name, so only a group without ranges is removed on "+
	"SQLite (stop planning it with --plan none)", edgeindex.ErrConflict)

// removal is what RemoveGroup finds of a group.
type removal struct {
	group grouplease.Group
	// ranges are the ids of the group's ranges, repair ranges too; busy
	// counts its ranges and lanes leased now and its chunks being fetched
	// now.
	ranges []int64
	busy   int64
	// results are the items of the results feed its workers stored.
	results int64
}

// RemoveGroup removes a group, so that one added by mistake (a typo, the
// wrong provider or range size) can be added again as meant: its ranges,
// batches, chunk claims, results, missing articles, plan and lanes (their
// snapshots' metadata) go with it, in one transaction. While any of its
// ranges or lanes is leased, or a chunk of it is being fetched, or it has
// results, it fails with an error wrapping edgeindex.ErrConflict that says
// how many, unless force is set. A group that is not there fails with
// edgeindex.ErrNotFound. Releases built from its results, and the files
// its snapshots and chunks were kept in, are not touched. It returns the
// ids of the ranges that went, so that their spooled chunks can be
// dropped, and how many results went. It reads one snapshot: a worker
// granted a range, or storing a batch, after the removal counted makes it
// count again (on PostgreSQL, whose commit refuses it otherwise), so an
// unforced removal never deletes what it did not count.
//
// On SQLite, which gives the largest id removed to the next row added, a
// group that has ranges is not removed, forced or not (ErrRangesKept): a
// running coordinator's spool index and a paused worker's lease may still
// name the ids of its ranges. A removed group's own id is never given to
// another group (AddGroup starts above it).
func (s *Store) RemoveGroup(ctx context.Context, name string, force bool) (ranges []int64, results int64, err error) {
	var out removal
	err = s.txSnapshot(ctx, func(tx *sqlx.Tx) error {
		var row groupRow
		err := tx.GetContext(ctx, &row, s.q("SELECT "+groupCols+" FROM groups WHERE name = ? {forupdate}"), name)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("group %q: %w", name, edgeindex.ErrNotFound)
		}
		if err != nil {
			return err
		}
		out.group = row.group()
		if err := s.countRemoval(ctx, tx, &out); err != nil {
			return err
		}
		if s.d.reusesIDs() && len(out.ranges) > 0 {
			return fmt.Errorf("group %q has %d ranges: %w", name, len(out.ranges), ErrRangesKept)
		}
		if !force && (out.busy > 0 || out.results > 0) {
			return fmt.Errorf("%w: group %q has %d leases or fetches under way and %d stored results: "+
				"wait until no range of it is leased and remove it then, or force the removal (its results go too)",
				edgeindex.ErrConflict, name, out.busy, out.results)
		}
		if err := s.deleteGroup(ctx, tx, row.ID); err != nil {
			return err
		}
		return s.raiseIDFloor(ctx, tx, "groups", row.ID)
	})
	if err != nil {
		return nil, 0, fmt.Errorf("remove group: %w", err)
	}
	s.groupsMu.Lock()
	delete(s.groups, out.group.ID)
	s.groupsMu.Unlock()
	return out.ranges, out.results, nil
}

// countRemoval counts the group's ranges, what of it is under way now, and its
// results.
func (s *Store) countRemoval(ctx context.Context, tx *sqlx.Tx, out *removal) error {
	now, err := s.clock(ctx, tx)
	if err != nil {
		return err
	}
	id := out.group.ID
	var leased, lanes, claims int64
	for _, c := range []struct {
		n     *int64
		query string
		args  []any
	}{
		{&leased, "SELECT COUNT(*) FROM ranges WHERE group_id = ? AND state = 'leased' AND expires_us >= ?", []any{id, now}},
		{&lanes, "SELECT COUNT(*) FROM lanes WHERE group_id = ? AND node IS NOT NULL AND expires_us >= ?", []any{id, now}},
		{&claims, "SELECT COUNT(*) FROM chunk_claims WHERE expires_us >= ? AND range_id IN (SELECT id FROM ranges WHERE group_id = ?)", []any{now, id}},
		{&out.results, "SELECT COUNT(*) FROM items WHERE group_id = ?", []any{id}},
	} {
		if err := tx.GetContext(ctx, c.n, s.q(c.query), c.args...); err != nil {
			return err
		}
	}
	out.busy = leased + lanes + claims
	return tx.SelectContext(ctx, &out.ranges, s.q("SELECT id FROM ranges WHERE group_id = ? ORDER BY id"), id)
}

// raiseIDFloor records, where ids are reused, that id was table's, so that
// no new row gets it (AddGroup reads the floor).
func (s *Store) raiseIDFloor(ctx context.Context, tx *sqlx.Tx, table string, id int64) error {
	if !s.d.reusesIDs() {
		return nil
	}
	_, err := tx.ExecContext(ctx, s.q(`INSERT INTO id_floors (tbl, high) VALUES (?, ?)
		ON CONFLICT (tbl) DO UPDATE SET high = MAX(id_floors.high, excluded.high)`), table, id)
	return err
}

// deleteGroup deletes the group's rows, those that refer to others first.
func (s *Store) deleteGroup(ctx context.Context, tx *sqlx.Tx, id int64) error {
	for _, q := range []string{
		"DELETE FROM chunk_claims WHERE range_id IN (SELECT id FROM ranges WHERE group_id = ?)",
		"DELETE FROM batches WHERE range_id IN (SELECT id FROM ranges WHERE group_id = ?)",
		"DELETE FROM items WHERE group_id = ?",
		"DELETE FROM missing WHERE group_id = ?",
		"DELETE FROM plans WHERE group_id = ?",
		"DELETE FROM lanes WHERE group_id = ?",
		"DELETE FROM ranges WHERE group_id = ?",
		"DELETE FROM groups WHERE id = ?",
	} {
		if _, err := tx.ExecContext(ctx, s.q(q), id); err != nil {
			return err
		}
	}
	return nil
}

// RemovePlan removes the group's plan: the planner plans it no more. The
// group, its ranges and what they found stay; a new plan (SetPlan) starts
// from the provider's watermarks again. A group with no plan fails with
// edgeindex.ErrNotFound.
func (s *Store) RemovePlan(ctx context.Context, group string) error {
	g, err := s.Group(ctx, group)
	if err != nil {
		return fmt.Errorf("remove plan: %w", err)
	}
	err = s.tx(ctx, func(tx *sqlx.Tx) error {
		if _, err := s.lockPlan(ctx, tx, g); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.q("DELETE FROM plans WHERE group_id = ?"), g.ID)
		return err
	})
	if err != nil {
		return fmt.Errorf("remove plan: %w", err)
	}
	return nil
}
