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
	"github.com/edgeindex/edgeindex/internal/saturate"
	"github.com/edgeindex/edgeindex/lease"
)

type laneRow struct {
	GroupID    int64          `db:"group_id"`
	Lane       string         `db:"lane"`
	Token      int64          `db:"token"`
	Node       sql.NullString `db:"node"`
	Expires    sql.NullInt64  `db:"expires_us"`
	Headers    int64          `db:"headers"`     // no longer written: Lanes counts from the ranges
	RangesDone int64          `db:"ranges_done"` // likewise
	SnapNext   sql.NullInt64  `db:"snap_next"`
	SnapSize   sql.NullInt64  `db:"snap_size"`
	SnapToken  sql.NullInt64  `db:"snap_token"`
}

const laneCols = "group_id, lane, token, node, expires_us, headers, ranges_done, snap_next, snap_size, snap_token"

func (l laneRow) snapshot() *grouplease.Snapshot {
	if !l.SnapNext.Valid {
		return nil
	}
	return &grouplease.Snapshot{Next: l.SnapNext.Int64, Size: l.SnapSize.Int64, Token: l.SnapToken.Int64}
}

// current reports whether f is the lane's current lease: granted to
// f.Node under f.Token (its expiry is not checked).
func (l laneRow) current(f lease.Fence) bool {
	return l.Node.Valid && l.Node.String == f.Node && l.Token == f.Token
}

// headOf is the first range of a lane not done yet: the one the lane works
// on. Repair ranges are no part of a lane's order.
const headOf = "SELECT " + rangeCols + ` FROM ranges WHERE group_id = ? AND lane = ? AND state <> 'done' AND NOT repair
	ORDER BY start_n LIMIT 1`

// GrantLane implements grouplease.Store.
func (s *Store) GrantLane(ctx context.Context, node string, lane lease.Lane, ttl time.Duration) (grouplease.GroupLease, error) {
	if node == "" {
		return grouplease.GroupLease{}, edgeindex.Invalidf("grant lane: a node name is required")
	}
	if !lane.Valid() {
		return grouplease.GroupLease{}, edgeindex.Invalidf("lane: history or tail, not %q", lane)
	}
	ttlUS, err := ttlMicros(ttl)
	if err != nil {
		return grouplease.GroupLease{}, err
	}
	var gl grouplease.GroupLease
	err = s.tx(ctx, func(tx *sqlx.Tx) error {
		now := s.now()
		// A lane has work when its head range is pending or leased: a
		// failed head blocks the lane until it is retried.
		var l laneRow
		err := tx.GetContext(ctx, &l, s.q(`
			UPDATE lanes SET token = token + 1, node = ?, expires_us = {now} + ?
			WHERE group_id = (
				SELECT l.group_id FROM lanes l JOIN groups g ON g.id = l.group_id
				WHERE g.ordered AND l.lane = ? AND (l.node IS NULL OR l.expires_us < {now})
				  AND (SELECT r.state FROM ranges r WHERE r.group_id = l.group_id AND r.lane = l.lane AND r.state <> 'done' AND NOT r.repair
				       ORDER BY r.start_n LIMIT 1) IN ('pending', 'leased')
				ORDER BY l.group_id LIMIT 1 `+s.skipLockedOf("l")+`)
			AND lane = ?
			RETURNING `+laneCols), node, now, ttlUS, string(lane), now, string(lane))
		if errors.Is(err, sql.ErrNoRows) {
			return lease.ErrNoWork
		}
		if err != nil {
			return fmt.Errorf("grant lane: %w", err)
		}
		// Lanes fence their ranges: a range still leased under an older
		// grant of the lane gets a new token and goes back to pending, so
		// the old holder's next write to it is refused, and the new holder
		// gets it through Next, from its next. Repair ranges are no part
		// of the lane: plain grants lease them (lane_token 0), and they
		// keep their holder.
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE ranges SET state = 'pending', token = token + 1, node = NULL, expires_us = NULL
			WHERE group_id = ? AND lane = ? AND state = 'leased' AND NOT repair AND lane_token < ?`),
			l.GroupID, l.Lane, l.Token); err != nil {
			return fmt.Errorf("grant lane: fence ranges: %w", err)
		}
		var head rangeRow
		if err := tx.GetContext(ctx, &head, s.q(headOf), l.GroupID, l.Lane); err != nil {
			return fmt.Errorf("grant lane: %w", err)
		}
		g, err := s.groupByID(ctx, tx, l.GroupID)
		if err != nil {
			return err
		}
		gl = grouplease.GroupLease{
			Group: grouplease.GroupRef{ID: g.ID, Name: g.Name}, Lane: lane, Token: l.Token, Node: node,
			ExpiresAt: fromMicros(l.Expires), TTL: lease.Seconds(ttl), Next: head.Next, Snapshot: l.snapshot(),
		}
		return nil
	})
	return gl, err
}

// skipLockedOf is {skiplocked} for a query that joins tables: on
// PostgreSQL it locks only the rows of the table aliased alias, so a grant
// does not skip a lane because its group's row is locked (by range add, by
// planning, or by the grant of the group's other lane).
func (s *Store) skipLockedOf(alias string) string {
	if !s.d.skipsLocked() {
		return ""
	}
	return "FOR NO KEY UPDATE OF " + alias + " SKIP LOCKED"
}

// lockLane reads a lane row inside tx, locking it on PostgreSQL, and checks
// the fence.
func (s *Store) lockLane(ctx context.Context, tx *sqlx.Tx, op string, groupID int64, lane lease.Lane, f lease.Fence) (laneRow, error) {
	var l laneRow
	if !lane.Valid() {
		return l, edgeindex.Invalidf("lane: history or tail, not %q", lane)
	}
	err := tx.GetContext(ctx, &l, s.q("SELECT "+laneCols+" FROM lanes WHERE group_id = ? AND lane = ? {forupdate}"), groupID, string(lane))
	if errors.Is(err, sql.ErrNoRows) {
		return l, fmt.Errorf("%s: group %d has no %s lane: %w", op, groupID, lane, edgeindex.ErrNotFound)
	}
	if err != nil {
		return l, fmt.Errorf("%s: %w", op, err)
	}
	if !l.current(f) {
		why := "it is free"
		if l.Node.Valid && l.Node.String != f.Node {
			why = "another node holds it"
		} else if l.Node.Valid {
			why = fmt.Sprintf("token %d is not the current %d", f.Token, l.Token)
		}
		return l, fmt.Errorf("%s: group %d %s lane: %w: %s", op, groupID, lane, edgeindex.ErrLeaseLost, why)
	}
	return l, nil
}

// Next implements grouplease.Store.
func (s *Store) Next(ctx context.Context, groupID int64, lane lease.Lane, f lease.Fence, ttl time.Duration) (lease.Lease, error) {
	ttlUS, err := ttlMicros(ttl)
	if err != nil {
		return lease.Lease{}, err
	}
	var out lease.Lease
	err = s.tx(ctx, func(tx *sqlx.Tx) error {
		l, err := s.lockLane(ctx, tx, "next", groupID, lane, f)
		if err != nil {
			return err
		}
		var head rangeRow
		err = tx.GetContext(ctx, &head, s.q(headOf+" {forupdate}"), groupID, string(lane))
		if errors.Is(err, sql.ErrNoRows) {
			return lease.ErrNoWork
		}
		if err != nil {
			return fmt.Errorf("next: %w", err)
		}
		if head.State == string(lease.StateFailed) {
			return fmt.Errorf("%w: range %d failed (%s); retry it to go on", lease.ErrNoWork, head.ID, head.Reason)
		}
		if head.State == string(lease.StateLeased) && head.LaneToken == l.Token && head.Node.String == f.Node {
			// Handed back to its holder with the same token, renewed.
			err = tx.GetContext(ctx, &head, s.q("UPDATE ranges SET expires_us = {now} + ? WHERE id = ? RETURNING "+rangeCols),
				s.now(), ttlUS, head.ID)
		} else {
			// Pending, or left by an earlier grant of the lane: grant it again from next.
			err = tx.GetContext(ctx, &head, s.q(`UPDATE ranges SET state = 'leased', token = token + 1, node = ?, lane_token = ?,
				expires_us = {now} + ? WHERE id = ? RETURNING `+rangeCols), f.Node, l.Token, s.now(), ttlUS, head.ID)
		}
		if err != nil {
			return fmt.Errorf("next: %w", err)
		}
		out, err = s.toLease(ctx, tx, head, ttl)
		return err
	})
	return out, err
}

// HeartbeatLane implements grouplease.Store.
func (s *Store) HeartbeatLane(ctx context.Context, groupID int64, lane lease.Lane, f lease.Fence, ttl time.Duration) (time.Time, error) {
	ttlUS, err := ttlMicros(ttl)
	if err != nil {
		return time.Time{}, err
	}
	var exp time.Time
	err = s.tx(ctx, func(tx *sqlx.Tx) error {
		if _, err := s.lockLane(ctx, tx, "heartbeat lane", groupID, lane, f); err != nil {
			return err
		}
		var us sql.NullInt64
		if err := tx.GetContext(ctx, &us, s.q(`UPDATE lanes SET expires_us = {now} + ? WHERE group_id = ? AND lane = ?
			RETURNING expires_us`), s.now(), ttlUS, groupID, string(lane)); err != nil {
			return fmt.Errorf("heartbeat lane: %w", err)
		}
		exp = fromMicros(us)
		return nil
	})
	return exp, err
}

// ReleaseLane implements grouplease.Store.
func (s *Store) ReleaseLane(ctx context.Context, groupID int64, lane lease.Lane, f lease.Fence) error {
	return s.tx(ctx, func(tx *sqlx.Tx) error {
		l, err := s.lockLane(ctx, tx, "release lane", groupID, lane, f)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q("UPDATE lanes SET node = NULL, expires_us = NULL WHERE group_id = ? AND lane = ?"),
			groupID, string(lane)); err != nil {
			return fmt.Errorf("release lane: %w", err)
		}
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE ranges SET state = 'pending', node = NULL, expires_us = NULL
			WHERE group_id = ? AND lane = ? AND state = 'leased' AND lane_token = ?`), groupID, string(lane), l.Token); err != nil {
			return fmt.Errorf("release lane: %w", err)
		}
		return nil
	})
}

// laneKey names a lane of a group.
type laneKey struct {
	group int64
	lane  string
}

// laneCount is a row of Lanes' count query: a lane's ranges of one state,
// repair or not.
type laneCount struct {
	State   string `db:"state"`
	Repair  bool   `db:"repair"`
	N       int64  `db:"n"`
	Headers int64  `db:"headers"`
	Group   int64  `db:"group_id"`
	Lane    string `db:"lane"`
	Next    int64  `db:"next_n"`
}

// laneTally is what a lane's ranges add up to.
type laneTally struct {
	states        map[lease.State]int64 // its plain ranges by state; nil: none
	headNext      int64                 // the least next of its plain ranges not done
	hasHead       bool
	doneNext      int64 // one past its last plain range done
	headers, done int64 // the headers and number of its ranges done, repair ones too
}

// next is the lane's next: its head range's, or one past its last range
// when every range is done.
func (t *laneTally) next() int64 {
	if t.hasHead {
		return t.headNext
	}
	return t.doneNext
}

// tallyLanes adds up the counts by lane.
func tallyLanes(counts []laneCount) map[laneKey]*laneTally {
	tallies := map[laneKey]*laneTally{}
	for _, c := range counts {
		k := laneKey{c.Group, c.Lane}
		t := tallies[k]
		if t == nil {
			t = &laneTally{}
			tallies[k] = t
		}
		if c.State == string(lease.StateDone) {
			t.headers = saturate.Add(t.headers, c.Headers) // nodes count headers: no sum may fail a read
			t.done += c.N
		}
		if c.Repair {
			continue
		}
		if t.states == nil {
			t.states = map[lease.State]int64{}
		}
		t.states[lease.State(c.State)] = c.N
		if c.State == string(lease.StateDone) {
			t.doneNext = c.Next
		} else if !t.hasHead || c.Next < t.headNext {
			t.headNext, t.hasHead = c.Next, true
		}
	}
	return tallies
}

// Lanes implements grouplease.Store.
func (s *Store) Lanes(ctx context.Context, group string) ([]grouplease.LaneStatus, error) {
	query := "SELECT " + laneCols + " FROM lanes"
	// Progress is counted from the ranges, not kept in the lane row: a
	// counter there would be a hot row on the finish path.
	countQuery := `SELECT group_id, lane, state, repair, COUNT(*) AS n, {sumheaders} AS headers,
		CASE WHEN state = 'done' THEN MAX(end_n) + 1 ELSE MIN(next_n) END AS next_n
		FROM ranges WHERE TRUE`
	var args []any
	if group != "" {
		g, err := s.Group(ctx, group)
		if err != nil {
			return nil, fmt.Errorf("lanes: %w", err)
		}
		query += " WHERE group_id = ?"
		countQuery += " AND group_id = ?"
		args = append(args, g.ID)
	}
	var rows []laneRow
	if err := s.rdb.SelectContext(ctx, &rows, s.q(query+" ORDER BY group_id, lane"), args...); err != nil {
		return nil, fmt.Errorf("lanes: %w", err)
	}
	// Counts by state, and the lane's next: the head range's next, or one
	// past the last range when every range is done. Repair ranges count
	// only in the headers and ranges done, as every finished range does.
	var counts []laneCount
	if err := s.rdb.SelectContext(ctx, &counts, s.q(countQuery+" GROUP BY group_id, lane, state, repair"), args...); err != nil {
		return nil, fmt.Errorf("lanes: %w", err)
	}
	tallies := tallyLanes(counts)
	out := make([]grouplease.LaneStatus, 0, len(rows))
	for _, l := range rows {
		g, err := s.groupByID(ctx, s.rdb, l.GroupID)
		if err != nil {
			return nil, err
		}
		t := tallies[laneKey{l.GroupID, l.Lane}]
		if t == nil {
			t = &laneTally{}
		}
		st := grouplease.LaneStatus{
			GroupID: l.GroupID, Group: g.Name, Lane: lease.Lane(l.Lane), Token: l.Token,
			Next: t.next(), Headers: t.headers, RangesDone: t.done, Snapshot: l.snapshot(), Ranges: t.states,
		}
		if l.Node.Valid {
			st.Holder = l.Node.String
			exp := fromMicros(l.Expires)
			st.ExpiresAt = &exp
		}
		out = append(out, st)
	}
	return out, nil
}
