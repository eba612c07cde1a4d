package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
)

type planRow struct {
	GroupID     int64         `db:"group_id"`
	Tail        bool          `db:"tail"`
	History     bool          `db:"history"`
	HistoryBack int64         `db:"history_back"`
	Margin      int64         `db:"margin"`
	Low         sql.NullInt64 `db:"low"`
	High        sql.NullInt64 `db:"high"`
	Polled      sql.NullInt64 `db:"polled_us"`
	TailNext    sql.NullInt64 `db:"tail_next"`
	HistoryNext sql.NullInt64 `db:"history_next"`
	HistoryEnd  sql.NullInt64 `db:"history_end"`
	PendingLow  sql.NullInt64 `db:"pending_low"`
	PendingHigh sql.NullInt64 `db:"pending_high"`
	Since       int64         `db:"history_since_us"` // 0: none
	From        sql.NullInt64 `db:"history_from"`
	FromDate    sql.NullInt64 `db:"history_from_us"`
}

const planCols = "group_id, tail, history, history_back, margin, low, high, polled_us, tail_next, history_next, history_end, pending_low, pending_high, " +
	"history_since_us, history_from, history_from_us"

// sinceMicros is a plan's HistorySince as stored: microseconds since 1970,
// 0 for none (Check refuses dates before 1970).
func sinceMicros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

// sinceTime is sinceMicros undone.
func sinceTime(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}

// SetPlan implements grouplease.PlanStore.
func (s *Store) SetPlan(ctx context.Context, group string, p grouplease.GroupPlan) error {
	if err := p.Check(); err != nil {
		return err
	}
	g, err := s.Group(ctx, group)
	if err != nil {
		return fmt.Errorf("set plan: %w", err)
	}
	// A new date forgets the article found for the old one (the CASEs
	// read the row as it was).
	_, err = s.db.ExecContext(ctx, s.q(`INSERT INTO plans (group_id, tail, history, history_back, margin, history_since_us) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (group_id) DO UPDATE SET tail = excluded.tail, history = excluded.history,
			history_back = excluded.history_back, margin = excluded.margin,
			history_from = CASE WHEN plans.history_since_us = excluded.history_since_us THEN plans.history_from END,
			history_from_us = CASE WHEN plans.history_since_us = excluded.history_since_us THEN plans.history_from_us END,
			history_since_us = excluded.history_since_us`),
		g.ID, p.Tail, p.History, p.HistoryBack, p.Margin, sinceMicros(p.HistorySince))
	if err != nil {
		return fmt.Errorf("set plan: %w", err)
	}
	return nil
}

// Plans implements grouplease.PlanStore.
func (s *Store) Plans(ctx context.Context) ([]grouplease.PlanStatus, error) {
	var rows []planRow
	if err := s.rdb.SelectContext(ctx, &rows, "SELECT "+planCols+" FROM plans ORDER BY group_id"); err != nil {
		return nil, fmt.Errorf("plans: %w", err)
	}
	missing, err := s.missingCounts(ctx)
	if err != nil {
		return nil, fmt.Errorf("plans: %w", err)
	}
	tailHeads, err := s.tailHeads(ctx)
	if err != nil {
		return nil, fmt.Errorf("plans: %w", err)
	}
	out := make([]grouplease.PlanStatus, 0, len(rows))
	for _, r := range rows {
		g, err := s.groupByID(ctx, s.rdb, r.GroupID)
		if err != nil {
			return nil, err
		}
		st := planStatus(r, g)
		if m := missing[r.GroupID]; m != nil {
			st.Missing = *m
		}
		if r.TailNext.Valid {
			stored, ok := tailHeads[r.GroupID]
			if !ok {
				stored = st.TailNext
			}
			st.Lag = max(0, st.High-stored+1)
		}
		out = append(out, st)
	}
	return out, nil
}

// planStatus is the status of group g's plan r, without its missing
// articles and its lag.
func planStatus(r planRow, g grouplease.Group) grouplease.PlanStatus {
	st := grouplease.PlanStatus{
		GroupID: r.GroupID, Group: g.Name,
		GroupPlan: grouplease.GroupPlan{Tail: r.Tail, History: r.History, HistoryBack: r.HistoryBack, Margin: r.Margin,
			HistorySince: sinceTime(r.Since)},
		Polled: r.Low.Valid,
		Low:    r.Low.Int64, High: r.High.Int64,
		TailNext: r.TailNext.Int64, HistoryNext: r.HistoryNext.Int64, HistoryEnd: r.HistoryEnd.Int64,
		HistoryFrom: r.From.Int64, HistoryFromDate: fromMicros(r.FromDate),
	}
	if r.PendingLow.Valid {
		st.Held = &grouplease.Watermarks{Low: r.PendingLow.Int64, High: r.PendingHigh.Int64}
	}
	if r.Polled.Valid {
		st.PolledAt = time.UnixMicro(r.Polled.Int64).UTC()
	}
	return st
}

// missingCounts counts the missing articles of each group by state.
func (s *Store) missingCounts(ctx context.Context) (map[int64]*grouplease.Missing, error) {
	var counts []struct {
		Group int64  `db:"group_id"`
		State string `db:"state"`
		N     int64  `db:"n"`
	}
	if err := s.rdb.SelectContext(ctx, &counts, "SELECT group_id, state, COUNT(*) AS n FROM missing GROUP BY group_id, state"); err != nil {
		return nil, err
	}
	missing := map[int64]*grouplease.Missing{}
	for _, c := range counts {
		m := missing[c.Group]
		if m == nil {
			m = &grouplease.Missing{}
			missing[c.Group] = m
		}
		switch c.State {
		case "waiting":
			m.Waiting = c.N
		case "repairing":
			m.Repairing = c.N
		case "repaired":
			m.Repaired = c.N
		case "lost":
			m.Lost = c.N
		}
	}
	return missing, nil
}

// tailHeads returns, by group, the tail's first article not stored: the
// next of its first unfinished range. A group missing from it has every
// planned range done: its first article not stored is its cursor.
func (s *Store) tailHeads(ctx context.Context) (map[int64]int64, error) {
	var heads []struct {
		Group int64 `db:"group_id"`
		Next  int64 `db:"next_n"`
	}
	if err := s.rdb.SelectContext(ctx, &heads, `SELECT group_id, MIN(next_n) AS next_n FROM ranges
		WHERE lane = 'tail' AND state <> 'done' AND NOT repair GROUP BY group_id`); err != nil {
		return nil, err
	}
	out := make(map[int64]int64, len(heads))
	for _, h := range heads {
		out[h.Group] = h.Next
	}
	return out, nil
}

// PlanRanges implements grouplease.PlanStore.
func (s *Store) PlanRanges(ctx context.Context, groupID int64, low, high int64) (grouplease.Planned, error) {
	if low < 0 || high < 0 || low > grouplease.MaxArticle || high > grouplease.MaxArticle {
		return grouplease.Planned{}, edgeindex.Invalidf("plan ranges: watermarks %d..%d must be 0 to %d", low, high, grouplease.MaxArticle)
	}
	g, err := s.groupByID(ctx, s.rdb, groupID)
	if err != nil {
		return grouplease.Planned{}, fmt.Errorf("plan ranges: %w", err)
	}
	var out grouplease.Planned
	err = s.tx(ctx, func(tx *sqlx.Tx) error {
		var err error
		out, err = s.planRanges(ctx, tx, g, grouplease.Watermarks{Low: low, High: high})
		return err
	})
	if err != nil {
		return grouplease.Planned{}, fmt.Errorf("plan ranges: %w", err)
	}
	return out, nil
}

// planRanges is PlanRanges in tx: it trusts what it can of the reply
// (trust), keeps the reply waiting for the next poll when it does not
// trust it whole, sets the cursors of a plan that has none
// (startCursors), plans the lanes (planLanes) and writes the plan back.
func (s *Store) planRanges(ctx context.Context, tx *sqlx.Tx, g grouplease.Group, reply grouplease.Watermarks) (grouplease.Planned, error) {
	var out grouplease.Planned
	now, err := s.clock(ctx, tx)
	if err != nil {
		return out, err
	}
	p, err := s.lockPlan(ctx, tx, g)
	if err != nil {
		return out, err
	}
	w, ok := trust(p, reply, s.highJump(g))
	var pendingLow, pendingHigh sql.NullInt64
	// A reply that planning does not use whole waits (out.Held, pending_low
	// and pending_high) for the next poll. An empty group's high counts
	// only where it is below the trusted one.
	if !ok || w.Low != reply.Low || w.High > reply.High || (w.High < reply.High && !reply.Empty()) {
		out.Held = &reply
		pendingLow = sql.NullInt64{Int64: reply.Low, Valid: true}
		pendingHigh = sql.NullInt64{Int64: reply.High, Valid: true}
	}
	if !ok {
		// An empty group's reply, and nothing trusted yet: no split,
		// no cursor, until a poll reports articles.
		_, err = tx.ExecContext(ctx, s.q(`UPDATE plans SET polled_us = ?, pending_low = ?, pending_high = ? WHERE group_id = ?`),
			now, pendingLow, pendingHigh, g.ID)
		return out, err
	}
	out.Trusted = w
	first := max(w.Low, 1) // article 0 does not exist; below low they expired
	if err := s.startCursors(ctx, tx, g, &p, w, first); err != nil {
		return out, err
	}
	if out.Ranges, err = s.planLanes(ctx, tx, g, &p, w, first); err != nil {
		return out, err
	}
	_, err = tx.ExecContext(ctx, s.q(`UPDATE plans SET low = ?, high = ?, polled_us = ?, tail_next = ?, history_next = ?, history_end = ?,
		pending_low = ?, pending_high = ? WHERE group_id = ?`),
		w.Low, w.High, now, p.TailNext, p.HistoryNext, p.HistoryEnd, pendingLow, pendingHigh, g.ID)
	return out, err
}

// startCursors sets the cursors p lacks, given the trusted watermarks w
// and the first article not expired: the split between tail and history
// at the first trusted reply, and the history's target at the split, or,
// for a date not found by then, as soon as it is.
func (s *Store) startCursors(ctx context.Context, tx *sqlx.Tx, g grouplease.Group, p *planRow, w grouplease.Watermarks, first int64) error {
	if !p.TailNext.Valid {
		start := max(first, w.High-p.Margin+1)
		p.TailNext = sql.NullInt64{Int64: start, Valid: true}
		p.HistoryEnd = sql.NullInt64{Int64: start - 1, Valid: true}
		p.HistoryNext = sql.NullInt64{}
	}
	if !p.HistoryNext.Valid && (p.Since == 0 || p.From.Valid) {
		target, err := s.historyTarget(ctx, tx, g, *p, first)
		if err != nil {
			return err
		}
		p.HistoryNext = sql.NullInt64{Int64: target, Valid: true}
	}
	return nil
}

// planLanes plans the lanes p plans (planLane), the tail up to the trusted
// high less the margin, the history down from its cursor, and moves p's
// cursors past what they planned.
func (s *Store) planLanes(ctx context.Context, tx *sqlx.Tx, g grouplease.Group, p *planRow, w grouplease.Watermarks, first int64) ([]lease.Range, error) {
	var out []lease.Range
	if p.Tail {
		added, next, err := s.planLane(ctx, tx, g, lease.LaneTail, max(p.TailNext.Int64, first), w.High-p.Margin)
		if err != nil {
			return nil, err
		}
		out, p.TailNext.Int64 = append(out, added...), next
	}
	if p.History && p.HistoryNext.Valid {
		added, next, err := s.planLane(ctx, tx, g, lease.LaneHistory, max(p.HistoryNext.Int64, first), p.HistoryEnd.Int64)
		if err != nil {
			return nil, err
		}
		out, p.HistoryNext.Int64 = append(out, added...), next
	}
	return out, nil
}

// historyTarget is the first article history plans, given the first
// article not expired: first itself, start − HistoryBack, or the article
// found for HistorySince, whichever is higher.
func (s *Store) historyTarget(ctx context.Context, tx *sqlx.Tx, g grouplease.Group, p planRow, first int64) (int64, error) {
	start := p.HistoryEnd.Int64 + 1
	target := first
	switch {
	case p.Since != 0:
		target = max(target, p.From.Int64) // high + 1 when every article was older
	case p.HistoryBack > 0:
		target = max(target, start-p.HistoryBack)
	default:
		return target, nil
	}
	// After a reset the group has ranges: history goes down to the
	// articles above them at least, so that none is left between the old
	// ranges and the new split.
	var covered sql.NullInt64
	if err := tx.GetContext(ctx, &covered, s.q(`SELECT MAX(end_n) FROM ranges WHERE group_id = ? AND NOT repair`), g.ID); err != nil {
		return 0, err
	}
	if covered.Valid {
		target = max(first, min(target, covered.Int64+1))
	}
	return target, nil
}

// SetHistoryStart implements grouplease.PlanStore.
func (s *Store) SetHistoryStart(ctx context.Context, groupID int64, since time.Time, p grouplease.DatePoint) error {
	if since.IsZero() {
		return edgeindex.Invalidf("set history start: no date")
	}
	if p.Article < 1 || p.Article > grouplease.MaxArticle+1 {
		return edgeindex.Invalidf("set history start: article %d must be 1 to %d", p.Article, grouplease.MaxArticle+1)
	}
	var date sql.NullInt64
	if !p.Date.IsZero() {
		date = sql.NullInt64{Int64: p.Date.UnixMicro(), Valid: true}
	}
	g, err := s.groupByID(ctx, s.rdb, groupID)
	if err != nil {
		return fmt.Errorf("set history start: %w", err)
	}
	err = s.tx(ctx, func(tx *sqlx.Tx) error {
		if _, err := s.lockPlan(ctx, tx, g); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.q(`UPDATE plans SET history_from = ?, history_from_us = ?
			WHERE group_id = ? AND history_since_us = ? AND history_next IS NULL`), p.Article, date, g.ID, sinceMicros(since))
		return err
	})
	if err != nil {
		return fmt.Errorf("set history start: %w", err)
	}
	return nil
}

// ResetPlan implements grouplease.PlanStore.
func (s *Store) ResetPlan(ctx context.Context, group string) (int64, error) {
	g, err := s.Group(ctx, group)
	if err != nil {
		return 0, fmt.Errorf("reset plan: %w", err)
	}
	var revived int64
	err = s.tx(ctx, func(tx *sqlx.Tx) error {
		if _, err := s.lockPlan(ctx, tx, g); err != nil {
			return err
		}
		now, err := s.clock(ctx, tx)
		if err != nil {
			return err
		}
		// The watermarks trusted until now wait as the previous reply, so
		// that the first poll after the reset is checked against them
		// (trust); SET reads the row as it was.
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE plans SET low = NULL, high = NULL, polled_us = NULL, tail_next = NULL,
			history_next = NULL, history_end = NULL, pending_low = low, pending_high = high,
			history_from = NULL, history_from_us = NULL WHERE group_id = ?`), g.ID); err != nil {
			return err
		}
		// Lost before their last try: they fell below the low watermark.
		res, err := tx.ExecContext(ctx, s.q(`UPDATE missing SET state = 'waiting', range_id = NULL, due_us = ?
			WHERE group_id = ? AND state = 'lost' AND tries < ?`), now, g.ID, s.cfg.RepairTries)
		if err != nil {
			return err
		}
		revived, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("reset plan: %w", err)
	}
	return revived, nil
}

// lockPlan locks the group, as AddRanges does, and reads its plan.
func (s *Store) lockPlan(ctx context.Context, tx *sqlx.Tx, g grouplease.Group) (planRow, error) {
	var p planRow
	if err := s.lockGroup(ctx, tx, g); err != nil {
		return p, err
	}
	err := tx.GetContext(ctx, &p, s.q("SELECT "+planCols+" FROM plans WHERE group_id = ?"), g.ID)
	if errors.Is(err, sql.ErrNoRows) {
		return p, fmt.Errorf("group %q has no plan: %w", g.Name, edgeindex.ErrNotFound)
	}
	return p, err
}

// clock reads the one clock inside tx, in microseconds.
func (s *Store) clock(ctx context.Context, q sqlx.QueryerContext) (int64, error) {
	var now int64
	err := sqlx.GetContext(ctx, q, &now, s.q("SELECT {now}"), s.now())
	return now, err
}

// maxClashes bounds how many existing ranges one planning step reads.
const maxClashes = 10000

// planLane adds ranges of the group's range size over [from, to] in lane,
// around the ranges the group has, at most as many as keep the lane's
// unfinished ranges within PlanAhead. It returns them and the first article
// left unplanned.
func (s *Store) planLane(ctx context.Context, tx *sqlx.Tx, g grouplease.Group, lane lease.Lane, from, to int64) ([]lease.Range, int64, error) {
	if from > to {
		return nil, from, nil
	}
	var open int
	if err := tx.GetContext(ctx, &open, s.q(`SELECT COUNT(*) FROM ranges
		WHERE group_id = ? AND lane = ? AND state IN ('pending', 'leased') AND NOT repair`), g.ID, string(lane)); err != nil {
		return nil, from, err
	}
	budget := s.cfg.PlanAhead - open
	if budget <= 0 {
		return nil, from, nil
	}
	var clashes []lease.Span
	if err := tx.SelectContext(ctx, &clashes, s.q(`SELECT start_n AS "from", end_n AS "to" FROM ranges
		WHERE group_id = ? AND NOT repair AND start_n <= ? AND end_n >= ? ORDER BY start_n LIMIT ?`),
		g.ID, to, from, maxClashes); err != nil {
		return nil, from, err
	}
	if len(clashes) == maxClashes {
		to = clashes[len(clashes)-1].To // the next pass reads on from there
	}
	var spans []lease.Span
	cur := from
	// fill plans [cur, end] until the budget is spent, leaving cur at the
	// first article it did not plan.
	fill := func(end int64) {
		for cur <= end && len(spans) < budget {
			e := end
			if end-cur >= g.RangeSize { // written so that no sum overflows
				e = cur + g.RangeSize - 1
			}
			spans = append(spans, lease.Span{From: cur, To: e})
			cur = e + 1
		}
	}
	for _, c := range clashes {
		fill(min(c.From-1, to))
		if cur < c.From {
			break // the budget is spent before this range
		}
		cur = max(cur, c.To+1)
	}
	fill(to)
	if len(spans) == 0 {
		return nil, cur, nil
	}
	added, err := s.insertRanges(ctx, tx, g, lane, spans, false, false)
	return added, cur, err
}
