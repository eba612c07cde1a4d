package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/edgeindex/edgeindex/release"
)

// MaxPostProcReason bounds the reason a failed post-processing keeps.
const MaxPostProcReason = 300

// PostProcDue leases up to n releases whose post-processing is due at
// now (pending, and not leased or waiting for a retry past now), the
// longest due first: each is moved to now+lease, so another process
// sharing the database leaves it, and one that dies leaves it to be
// taken again then.
func (s *Store) PostProcDue(ctx context.Context, now time.Time, lease time.Duration, n int) ([]int64, error) {
	if n <= 0 {
		return nil, nil
	}
	var ids []int64
	err := s.tx(ctx, func(tx *sqlx.Tx) error {
		ids = ids[:0]
		return tx.SelectContext(ctx, &ids, s.q(`UPDATE releases SET pp_next_us = ? WHERE id IN (
			SELECT id FROM releases WHERE pp_state = 0 AND pp_next_us <= ? ORDER BY pp_next_us, id LIMIT ? {skiplocked})
			RETURNING id`), now.Add(lease).UnixMicro(), now.UnixMicro(), n)
	})
	if err != nil {
		return nil, fmt.Errorf("post-processing due: %w", err)
	}
	return ids, nil
}

// PostProcDone stores what post-processing found of release id, leased
// by PostProcDue, and marks it done, with p.Reason saying what it left
// out (a corrupt piece); a release that gained files since it was leased
// stays pending. A name other than "" renames the release: its category and
// episode are those of the new name, its search words the new name's and
// then the old one's, and the builder keeps them from then on.
func (s *Store) PostProcDone(ctx context.Context, id int64, name string, p release.PostProc) error {
	nfo := sql.NullString{String: p.NFO, Valid: p.HasNFO}
	err := s.tx(ctx, func(tx *sqlx.Tx) error {
		var row struct {
			Name   string `db:"name"`
			Groups string `db:"group_names"`
		}
		if err := tx.GetContext(ctx, &row, s.q("SELECT name, group_names FROM releases WHERE id = ? {forupdate}"), id); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("%w: no release %d", release.ErrNotFound, id)
			}
			return err
		}
		var files sql.NullString
		if len(p.FileNames) > 0 {
			b, err := json.Marshal(p.FileNames)
			if err != nil {
				return err
			}
			files = sql.NullString{String: string(b), Valid: true}
		}
		// A release the builder queued again meanwhile (it gained files:
		// due at 0) stays pending, to be read with them.
		set := "pp_state = CASE WHEN pp_next_us = 0 THEN 0 ELSE 1 END, pp_reason = ?, pp_bodies = ?, password = ?, nfo = ?, imdb = ?, tvdb = ?, pp_files = ?"
		args := []any{nullString(cutReason(p.Reason)), p.Bodies, p.Password, nfo, nullString(p.IMDb), nullString(p.TVDB), files}
		if name != "" && name != row.Name {
			r := release.Release{Name: name}
			if err := json.Unmarshal([]byte(row.Groups), &r.Groups); err != nil {
				return fmt.Errorf("groups: %w", err)
			}
			cat, season, episode, daily := classify(r)
			set += ", renamed = ?, name = ?, category = ?, season = ?, episode = ?, episode_daily = ?, search_words = ?"
			args = append(args, true, name, cat, season, episode, daily, searchText(name+" "+row.Name))
		}
		_, err := tx.ExecContext(ctx, s.q("UPDATE releases SET "+set+" WHERE id = ?"), append(args, id)...)
		return err
	})
	if err != nil {
		return fmt.Errorf("post-processing release %d: %w", id, err)
	}
	return nil
}

// PostProcFailed counts a failed try of release id's post-processing,
// keeping reason (cut at MaxPostProcReason bytes): it is due again at
// next, or failed for good at its maxAttempts-th try.
func (s *Store) PostProcFailed(ctx context.Context, id int64, reason string, next time.Time, maxAttempts int) error {
	reason = cutReason(reason)
	_, err := s.db.ExecContext(ctx, s.q(`UPDATE releases SET pp_attempts = pp_attempts + 1, pp_reason = ?, pp_next_us = ?,
		pp_state = CASE WHEN pp_attempts + 1 >= ? THEN 2 ELSE 0 END WHERE id = ? AND pp_state = 0`),
		reason, next.UnixMicro(), maxAttempts, id)
	if err != nil {
		return fmt.Errorf("post-processing release %d failed: %w", id, err)
	}
	return nil
}

// PostProcCounts returns how many releases wait for post-processing and
// how many it gave up on, each counted through its partial index.
func (s *Store) PostProcCounts(ctx context.Context) (pending, failed int64, err error) {
	if err := s.rdb.GetContext(ctx, &pending, "SELECT COUNT(*) FROM releases WHERE pp_state = 0"); err != nil {
		return 0, 0, fmt.Errorf("post-processing counts: %w", err)
	}
	if err := s.rdb.GetContext(ctx, &failed, "SELECT COUNT(*) FROM releases WHERE pp_state = 2"); err != nil {
		return 0, 0, fmt.Errorf("post-processing counts: %w", err)
	}
	return pending, failed, nil
}

// cutReason cuts reason at MaxPostProcReason bytes, on a character.
func cutReason(reason string) string {
	if len(reason) > MaxPostProcReason {
		reason = strings.ToValidUTF8(reason[:MaxPostProcReason], "") + "..."
	}
	return reason
}

func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }
