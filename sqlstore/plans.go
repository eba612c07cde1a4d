package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/batch"
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
	var counts []struct {
		Group int64  `db:"group_id"`
		State string `db:"state"`
		N     int64  `db:"n"`
	}
	if err := s.rdb.SelectContext(ctx, &counts, "SELECT group_id, state, COUNT(*) AS n FROM missing GROUP BY group_id, state"); err != nil {
		return nil, fmt.Errorf("plans: %w", err)
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
	// The tail's first article not stored: the next of its first
	// unfinished range, or the cursor when every planned range is done.
	var heads []struct {
		Group int64 `db:"group_id"`
		Next  int64 `db:"next_n"`
	}
	if err := s.rdb.SelectContext(ctx, &heads, `SELECT group_id, MIN(next_n) AS next_n FROM ranges
		WHERE lane = 'tail' AND state <> 'done' AND NOT repair GROUP BY group_id`); err != nil {
		return nil, fmt.Errorf("plans: %w", err)
	}
	tailHead := map[int64]int64{}
	for _, h := range heads {
		tailHead[h.Group] = h.Next
	}
	out := make([]grouplease.PlanStatus, 0, len(rows))
	for _, r := range rows {
		g, err := s.groupByID(ctx, s.rdb, r.GroupID)
		if err != nil {
			return nil, err
		}
		st := grouplease.PlanStatus{
			GroupID: r.GroupID, Group: g.Name,
			GroupPlan: grouplease.GroupPlan{Tail: r.Tail, History: r.History, HistoryBack: r.HistoryBack, Margin: r.Margin,
				HistorySince: sinceTime(r.Since)},
			Polled: r.Low.Valid,
			Low:    r.Low.Int64, High: r.High.Int64,
			TailNext: r.TailNext.Int64, HistoryNext: r.HistoryNext.Int64, HistoryEnd: r.HistoryEnd.Int64,
			HistoryFrom: r.From.Int64, HistoryFromDate: fromMicros(r.FromDate),
		}
		if m := missing[r.GroupID]; m != nil {
			st.Missing = *m
		}
		if r.PendingLow.Valid {
			st.Held = &grouplease.Watermarks{Low: r.PendingLow.Int64, High: r.PendingHigh.Int64}
		}
		if r.Polled.Valid {
			st.PolledAt = time.UnixMicro(r.Polled.Int64).UTC()
		}
		if r.TailNext.Valid {
			stored, ok := tailHead[r.GroupID]
			if !ok {
				stored = st.TailNext
			}
			st.Lag = max(0, st.High-stored+1)
		}
		out = append(out, st)
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
		out = grouplease.Planned{}
		now, err := s.clock(ctx, tx)
		if err != nil {
			return err
		}
		p, err := s.lockPlan(ctx, tx, g)
		if err != nil {
			return err
		}
		reply := grouplease.Watermarks{Low: low, High: high}
		w, ok := trust(p, reply, s.highJump(g))
		var pendingLow, pendingHigh sql.NullInt64
		// A reply that planning does not use whole waits (out.Held, pending_low
		// and pending_high) for the next poll. An empty group's high counts
		// only where it is below the trusted one.
		if !ok || w.Low != low || w.High > high || (w.High < high && !reply.Empty()) {
			out.Held = &reply
			pendingLow = sql.NullInt64{Int64: low, Valid: true}
			pendingHigh = sql.NullInt64{Int64: high, Valid: true}
		}
		if !ok {
			// An empty group's reply, and nothing trusted yet: no split,
			// no cursor, until a poll reports articles.
			_, err = tx.ExecContext(ctx, s.q(`UPDATE plans SET polled_us = ?, pending_low = ?, pending_high = ? WHERE group_id = ?`),
				now, pendingLow, pendingHigh, g.ID)
			return err
		}
		out.Trusted = w
		first := max(w.Low, 1) // article 0 does not exist; below low they expired
		if !p.TailNext.Valid {
			start := max(first, w.High-p.Margin+1)
			p.TailNext = sql.NullInt64{Int64: start, Valid: true}
			p.HistoryEnd = sql.NullInt64{Int64: start - 1, Valid: true}
			p.HistoryNext = sql.NullInt64{}
		}
		if !p.HistoryNext.Valid && (p.Since == 0 || p.From.Valid) {
			// The history target: at the split, or, for a date not found
			// by then, as soon as it is.
			target, err := s.historyTarget(ctx, tx, g, p, first)
			if err != nil {
				return err
			}
			p.HistoryNext = sql.NullInt64{Int64: target, Valid: true}
		}
		if p.Tail {
			added, next, err := s.planLane(ctx, tx, g, lease.LaneTail, max(p.TailNext.Int64, first), w.High-p.Margin)
			if err != nil {
				return err
			}
			out.Ranges, p.TailNext.Int64 = append(out.Ranges, added...), next
		}
		if p.History && p.HistoryNext.Valid {
			added, next, err := s.planLane(ctx, tx, g, lease.LaneHistory, max(p.HistoryNext.Int64, first), p.HistoryEnd.Int64)
			if err != nil {
				return err
			}
			out.Ranges, p.HistoryNext.Int64 = append(out.Ranges, added...), next
		}
		_, err = tx.ExecContext(ctx, s.q(`UPDATE plans SET low = ?, high = ?, polled_us = ?, tail_next = ?, history_next = ?, history_end = ?,
			pending_low = ?, pending_high = ? WHERE group_id = ?`),
			w.Low, w.High, now, p.TailNext, p.HistoryNext, p.HistoryEnd, pendingLow, pendingHigh, g.ID)
		return err
	})
	if err != nil {
		return grouplease.Planned{}, fmt.Errorf("plan ranges: %w", err)
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

// trust returns the watermarks planning uses for a GROUP reply, given the
// plan's trusted ones (low and high) and the previous reply when it
// waits (pending_low and pending_high). It reports false when nothing
// is trusted: the reply of an empty group before any other was trusted.
//
// A reply moves nothing for good on its own. A low that rises above the
// trusted one is trusted only as far as the previous reply rose too; a
// high that jumps more than bound above the trusted one likewise. An
// empty group's reply (grouplease.Watermarks.Empty) never moves the high
// and never lowers the low: its numbers say only where articles would
// start. So the trusted value is the one two polls in a row agree on,
// and one odd reply, or replies that alternate, move no cursor and
// expire nothing. A low or high that falls in a reply with articles is
// trusted at once: cursors never go back, and a lower low expires less.
func trust(p planRow, reply grouplease.Watermarks, bound int64) (grouplease.Watermarks, bool) {
	if !p.Low.Valid || !p.High.Valid {
		// The first poll has nothing to compare against: it is trusted,
		// unless the group is empty now. After a reset the watermarks
		// trusted before it wait as the previous reply: a first reply
		// more than bound from their high waits for the next poll to
		// agree with it, so one odd reply does not undo the reset.
		if reply.Empty() {
			return reply, false
		}
		prev := grouplease.Watermarks{Low: p.PendingLow.Int64, High: p.PendingHigh.Int64}
		if p.PendingLow.Valid && p.PendingHigh.Valid && !prev.Empty() && (reply.High-prev.High > bound || prev.High-reply.High > bound) {
			return reply, false
		}
		return reply, true
	}
	w := grouplease.Watermarks{Low: p.Low.Int64, High: p.High.Int64}
	// The previous reply, as far as it is known: the one that waits, or
	// the trusted watermarks when it was trusted whole.
	prev, prevEmpty := w, false
	if p.PendingLow.Valid && p.PendingHigh.Valid {
		prev = grouplease.Watermarks{Low: p.PendingLow.Int64, High: p.PendingHigh.Int64}
		prevEmpty = prev.Empty()
	}
	switch {
	case max(reply.Low, 1) > max(w.Low, 1): // article 0 does not exist
		w.Low = max(w.Low, min(reply.Low, prev.Low))
	case !reply.Empty():
		w.Low = reply.Low
	}
	// The jump is measured from the highest high the plan has relied on:
	// the trusted one, the one the tail has planned up to, or below the
	// trusted low, whichever is higher. A lower high trusted since (a
	// lagging server behind a balancer) does not make the real high look
	// like a jump.
	from := max(w.High, w.Low-1, reached(p))
	switch {
	case reply.Empty():
		// The high stays.
	case reply.High-from <= bound: // both in -1..MaxArticle: no overflow
		w.High = reply.High
	case !prevEmpty && reply.High-prev.High <= bound && prev.High-reply.High <= bound:
		// Two replies in a row that agree confirm the jump as far as
		// both go; two odd ones that differ by more than the bound
		// confirm nothing.
		w.High = max(w.High, min(reply.High, prev.High))
	}
	return w, true
}

// reached is the highest high the tail has planned from: it plans up to
// high − Margin, and its cursor is one past that. 0 before the first split.
func reached(p planRow) int64 {
	if !p.TailNext.Valid {
		return 0
	}
	planned := min(p.TailNext.Int64-1, grouplease.MaxArticle)
	return planned + min(p.Margin, grouplease.MaxArticle-planned) // at most MaxArticle
}

// highJump is how far above the trusted high one GROUP reply's high is
// trusted: Config.HighJump, or by default 10 × the group's range size ×
// PlanAhead, at most MaxArticle.
func (s *Store) highJump(g grouplease.Group) int64 {
	if s.cfg.HighJump > 0 {
		return min(s.cfg.HighJump, grouplease.MaxArticle)
	}
	ahead := int64(s.cfg.PlanAhead) // at least 1 (validate)
	if ahead > grouplease.MaxArticle/10 {
		return grouplease.MaxArticle
	}
	per := 10 * ahead
	if g.RangeSize <= 0 || g.RangeSize > grouplease.MaxArticle/per {
		return grouplease.MaxArticle
	}
	return g.RangeSize * per
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
	if _, err := tx.ExecContext(ctx, s.q("SELECT id FROM groups WHERE id = ? {forupdate}"), g.ID); err != nil {
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

// PlanRepairs implements grouplease.PlanStore. Each group is planned in a
// transaction of its own that locks the group.
func (s *Store) PlanRepairs(ctx context.Context) ([]lease.Range, error) {
	var groups []int64
	if err := s.rdb.SelectContext(ctx, &groups,
		"SELECT DISTINCT group_id FROM missing WHERE state IN ('waiting', 'repairing') ORDER BY group_id"); err != nil {
		return nil, fmt.Errorf("plan repairs: %w", err)
	}
	var out []lease.Range
	for _, id := range groups {
		added, err := s.planRepairs(ctx, id)
		if err != nil {
			return out, fmt.Errorf("plan repairs: %w", err)
		}
		out = append(out, added...)
	}
	return out, nil
}

func (s *Store) planRepairs(ctx context.Context, groupID int64) ([]lease.Range, error) {
	g, err := s.groupByID(ctx, s.rdb, groupID)
	if err != nil {
		return nil, err
	}
	var out []lease.Range
	err = s.tx(ctx, func(tx *sqlx.Tx) error {
		out = nil
		if _, err := tx.ExecContext(ctx, s.q("SELECT id FROM groups WHERE id = ? {forupdate}"), g.ID); err != nil {
			return err
		}
		now, err := s.clock(ctx, tx)
		if err != nil {
			return err
		}
		if err := s.settleMissing(ctx, tx, g.ID, now); err != nil {
			return err
		}
		var open int
		if err := tx.GetContext(ctx, &open, s.q(`SELECT COUNT(*) FROM ranges
			WHERE group_id = ? AND repair AND state IN ('pending', 'leased')`), g.ID); err != nil {
			return err
		}
		budget := s.cfg.PlanAhead - open
		if budget <= 0 {
			return nil
		}
		var due []dueArticle
		// Enough numbers for budget runs of a chunk, at most maxDue a pass.
		limit := int64(maxDue)
		if g.ChunkSize < limit/int64(budget) {
			limit = int64(budget) * g.ChunkSize
		}
		if err := tx.SelectContext(ctx, &due, s.q(`SELECT number, lane FROM missing
			WHERE group_id = ? AND state = 'waiting' AND due_us <= ? ORDER BY number LIMIT ?`),
			g.ID, now, limit); err != nil {
			return err
		}
		out, err = s.addRepairs(ctx, tx, g, repairRuns(due, g.ChunkSize, budget))
		return err
	})
	return out, err
}

// settleMissing marks lost the missing articles of a group that fell below
// its trusted low watermark, and counts a try of those whose repair range
// failed.
func (s *Store) settleMissing(ctx context.Context, tx *sqlx.Tx, groupID int64, now int64) error {
	// Below the low watermark an article has expired: it never comes.
	if _, err := tx.ExecContext(ctx, s.q(`UPDATE missing SET state = 'lost'
		WHERE group_id = ? AND state = 'waiting' AND number < (SELECT COALESCE(low, 0) FROM plans WHERE group_id = ?)`),
		groupID, groupID); err != nil {
		return err
	}
	// A repair range that failed counts as one try of its articles, due
	// at once: the range's own attempts took their time.
	_, err := tx.ExecContext(ctx, s.q(`UPDATE missing SET `+retrySet+`
		WHERE group_id = ? AND state = 'repairing'
		  AND range_id IN (SELECT id FROM ranges WHERE group_id = ? AND repair AND state = 'failed')`),
		s.cfg.RepairTries, now, groupID, groupID)
	return err
}

// dueArticle is a missing article due for a repair.
type dueArticle struct {
	Number int64  `db:"number"`
	Lane   string `db:"lane"`
}

// repairRuns groups due articles, in ascending order, into runs of
// consecutive numbers of one lane, a chunk at most each, budget runs at most.
func repairRuns(due []dueArticle, chunkSize int64, budget int) map[lease.Lane][]lease.Span {
	runs := map[lease.Lane][]lease.Span{}
	var last *lease.Span
	lastLane := lease.Lane("")
	n := 0
	for _, d := range due {
		lane := lease.Lane(d.Lane)
		if last != nil && lane == lastLane && d.Number == last.To+1 && d.Number-last.From < chunkSize {
			last.To = d.Number
			continue
		}
		if n == budget {
			break
		}
		runs[lane] = append(runs[lane], lease.Span{From: d.Number, To: d.Number})
		last, lastLane = &runs[lane][len(runs[lane])-1], lane
		n++
	}
	return runs
}

// addRepairs adds a repair range for each run, tail lane first, and marks
// its articles repairing under it.
func (s *Store) addRepairs(ctx context.Context, tx *sqlx.Tx, g grouplease.Group, runs map[lease.Lane][]lease.Span) ([]lease.Range, error) {
	var out []lease.Range
	for _, lane := range []lease.Lane{lease.LaneTail, lease.LaneHistory} {
		if len(runs[lane]) == 0 {
			continue
		}
		added, err := s.insertRanges(ctx, tx, g, lane, runs[lane], false, true)
		if err != nil {
			return nil, err
		}
		for _, r := range added {
			if _, err := tx.ExecContext(ctx, s.q(`UPDATE missing SET state = 'repairing', range_id = ?
				WHERE group_id = ? AND state = 'waiting' AND number BETWEEN ? AND ?`), r.ID, g.ID, r.Start, r.End); err != nil {
				return nil, err
			}
		}
		out = append(out, added...)
	}
	return out, nil
}

// maxDue bounds the missing articles one repair pass of a group reads.
const maxDue = 100_000

// retrySet counts one more try of a missing article: it waits for the next,
// or is lost after the last. Its arguments are the tries and the due time.
const retrySet = `state = CASE WHEN tries + 1 >= ? THEN 'lost' ELSE 'waiting' END, tries = tries + 1, range_id = NULL, due_us = ?`

// putMissing records a stored batch's missing articles, inside its
// transaction. On a plain range they wait for repair; on a repair range the
// ones named again count a try, and the rest of the span arrived.
func (s *Store) putMissing(ctx context.Context, tx *sqlx.Tx, r rangeRow, b batch.Batch) error {
	if len(b.Missing) == 0 && !r.Repair {
		return nil
	}
	now, err := s.clock(ctx, tx)
	if err != nil {
		return err
	}
	due := now + s.cfg.RepairDelay.Microseconds()
	const perStatement = 500
	for rest := b.Missing; len(rest) > 0; {
		part := rest[:min(perStatement, len(rest))]
		rest = rest[len(part):]
		var sb strings.Builder
		var args []any
		if r.Repair {
			sb.WriteString("UPDATE missing SET " + retrySet + " WHERE group_id = ? AND range_id = ? AND number IN (")
			args = append(args, s.cfg.RepairTries, due, r.GroupID, r.ID)
			for i, n := range part {
				if i > 0 {
					sb.WriteString(", ")
				}
				sb.WriteString("?")
				args = append(args, n)
			}
			sb.WriteString(")")
		} else {
			sb.WriteString("INSERT INTO missing (group_id, number, lane, state, due_us) VALUES ")
			for i, n := range part {
				if i > 0 {
					sb.WriteString(", ")
				}
				sb.WriteString("(?, ?, ?, 'waiting', ?)")
				args = append(args, r.GroupID, n, r.Lane, due)
			}
			sb.WriteString(" ON CONFLICT (group_id, number) DO NOTHING")
		}
		if _, err := tx.ExecContext(ctx, s.bind(sb.String()), args...); err != nil {
			return err
		}
	}
	if r.Repair {
		_, err = tx.ExecContext(ctx, s.q(`UPDATE missing SET state = 'repaired', range_id = NULL
			WHERE range_id = ? AND state = 'repairing' AND number BETWEEN ? AND ?`), r.ID, b.From, b.To)
	}
	return err
}
