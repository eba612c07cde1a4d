package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
)

// laneSnapshot reads the lane's snapshot with its file name and the end of
// its last planned range, inside tx.
func (s *Store) laneSnapshot(ctx context.Context, tx *sqlx.Tx, l laneRow) (grouplease.SnapshotCheck, error) {
	var out grouplease.SnapshotCheck
	var file sql.NullString
	if err := tx.GetContext(ctx, &file, s.q("SELECT snap_file FROM lanes WHERE group_id = ? AND lane = ?"), l.GroupID, l.Lane); err != nil {
		return out, err
	}
	if err := tx.GetContext(ctx, &out.End, s.q(`SELECT COALESCE(MAX(end_n), 0) FROM ranges
		WHERE group_id = ? AND lane = ? AND NOT repair`), l.GroupID, l.Lane); err != nil {
		return out, err
	}
	if snap := l.snapshot(); snap != nil {
		out.Current = &grouplease.SnapshotFile{Snapshot: *snap, File: file.String}
	}
	return out, nil
}

// CheckSnapshot implements grouplease.SnapshotStore.
func (s *Store) CheckSnapshot(ctx context.Context, groupID int64, lane lease.Lane, f lease.Fence) (grouplease.SnapshotCheck, error) {
	var out grouplease.SnapshotCheck
	err := s.tx(ctx, func(tx *sqlx.Tx) error {
		l, err := s.lockLane(ctx, tx, "check snapshot", groupID, lane, f)
		if err != nil {
			return err
		}
		out, err = s.laneSnapshot(ctx, tx, l)
		if err != nil {
			return fmt.Errorf("check snapshot: %w", err)
		}
		return nil
	})
	return out, err
}

// PutSnapshot implements grouplease.SnapshotStore.
func (s *Store) PutSnapshot(ctx context.Context, groupID int64, lane lease.Lane, f lease.Fence, snap grouplease.SnapshotFile) error {
	if snap.Next < 1 || snap.Size < 0 || snap.File == "" {
		return edgeindex.Invalidf("snapshot: next %d must be at least 1, size %d not negative, and a file named", snap.Next, snap.Size)
	}
	return s.tx(ctx, func(tx *sqlx.Tx) error {
		l, err := s.lockLane(ctx, tx, "put snapshot", groupID, lane, f)
		if err != nil {
			return err
		}
		cur, err := s.laneSnapshot(ctx, tx, l)
		if err != nil {
			return fmt.Errorf("put snapshot: %w", err)
		}
		if snap.Next > cur.End+1 {
			return edgeindex.Invalidf("next %d is past the end of the lane's last planned range + 1 (%d)", snap.Next, cur.End+1)
		}
		if cur.Current != nil && snap.Next < cur.Current.Next {
			return fmt.Errorf("put snapshot: %w: next %d is before the stored %d", grouplease.ErrSnapshotOlder, snap.Next, cur.Current.Next)
		}
		_, err = tx.ExecContext(ctx, s.q(`UPDATE lanes SET snap_next = ?, snap_size = ?, snap_token = ?, snap_file = ?
			WHERE group_id = ? AND lane = ?`), snap.Next, snap.Size, f.Token, snap.File, groupID, string(lane))
		if err != nil {
			return fmt.Errorf("put snapshot: %w", err)
		}
		return nil
	})
}

// ResetSnapshot implements grouplease.SnapshotStore.
func (s *Store) ResetSnapshot(ctx context.Context, groupID int64, lane lease.Lane) (*grouplease.SnapshotFile, error) {
	if !lane.Valid() {
		return nil, edgeindex.Invalidf("lane: history or tail, not %q", lane)
	}
	var out *grouplease.SnapshotFile
	err := s.tx(ctx, func(tx *sqlx.Tx) error {
		var l laneRow
		err := tx.GetContext(ctx, &l, s.q("SELECT "+laneCols+" FROM lanes WHERE group_id = ? AND lane = ? {forupdate}"), groupID, string(lane))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("reset snapshot: group %d has no %s lane: %w", groupID, lane, edgeindex.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("reset snapshot: %w", err)
		}
		cur, err := s.laneSnapshot(ctx, tx, l)
		if err != nil {
			return fmt.Errorf("reset snapshot: %w", err)
		}
		out = cur.Current
		_, err = tx.ExecContext(ctx, s.q(`UPDATE lanes SET snap_next = NULL, snap_size = NULL, snap_token = NULL, snap_file = NULL
			WHERE group_id = ? AND lane = ?`), groupID, string(lane))
		if err != nil {
			return fmt.Errorf("reset snapshot: %w", err)
		}
		return nil
	})
	return out, err
}
