package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/grouplease"
)

// SetPlanError implements grouplease.PlanStore. A group without a plan
// records nothing: its plan was removed while the planner polled it.
func (s *Store) SetPlanError(ctx context.Context, groupID int64, message string, at time.Time) error {
	if message == "" {
		if _, err := s.db.ExecContext(ctx, s.q(`DELETE FROM plan_errors WHERE group_id = ?`), groupID); err != nil {
			return fmt.Errorf("set plan error: %w", err)
		}
		return nil
	}
	if len(message) > grouplease.MaxPlanError {
		return edgeindex.Invalidf("set plan error: %d bytes, at most %d", len(message), grouplease.MaxPlanError)
	}
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO plan_errors (group_id, message, at_us)
		SELECT group_id, ?, ? FROM plans WHERE group_id = ?
		ON CONFLICT (group_id) DO UPDATE SET message = excluded.message, at_us = excluded.at_us`),
		message, at.UnixMicro(), groupID)
	if err != nil {
		return fmt.Errorf("set plan error: %w", err)
	}
	return nil
}

// PlanErrors implements grouplease.PlanStore.
func (s *Store) PlanErrors(ctx context.Context) (map[int64]grouplease.PlanError, error) {
	var rows []struct {
		Group   int64  `db:"group_id"`
		Message string `db:"message"`
		At      int64  `db:"at_us"`
	}
	if err := s.rdb.SelectContext(ctx, &rows, "SELECT group_id, message, at_us FROM plan_errors"); err != nil {
		return nil, fmt.Errorf("plan errors: %w", err)
	}
	out := make(map[int64]grouplease.PlanError, len(rows))
	for _, r := range rows {
		out[r.Group] = grouplease.PlanError{Message: r.Message, At: time.UnixMicro(r.At).UTC()}
	}
	return out, nil
}
