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

// rangeCols are the columns rangeRow scans, in a SELECT or a RETURNING.
const rangeCols = "id, group_id, lane, start_n, end_n, next_n, capture, state, attempts, headers, reason, token, node, lane_token, expires_us, repair"

type rangeRow struct {
	ID        int64          `db:"id"`
	GroupID   int64          `db:"group_id"`
	Lane      string         `db:"lane"`
	Start     int64          `db:"start_n"`
	End       int64          `db:"end_n"`
	Next      int64          `db:"next_n"`
	Capture   bool           `db:"capture"`
	State     string         `db:"state"`
	Attempts  int            `db:"attempts"`
	Headers   int64          `db:"headers"`
	Reason    string         `db:"reason"`
	Token     int64          `db:"token"`
	Node      sql.NullString `db:"node"`
	LaneToken int64          `db:"lane_token"`
	Expires   sql.NullInt64  `db:"expires_us"`
	Repair    bool           `db:"repair"`
}

// current reports whether f is the range's current lease: the range is
// leased, to f.Node, under f.Token (its expiry is not checked).
func (r rangeRow) current(f lease.Fence) bool {
	return r.State == string(lease.StateLeased) && r.Node.Valid && r.Node.String == f.Node && r.Token == f.Token
}

// toRange fills in the group's name from the cache.
func (s *Store) toRange(ctx context.Context, q sqlx.QueryerContext, r rangeRow) (lease.Range, grouplease.Group, error) {
	g, err := s.groupByID(ctx, q, r.GroupID)
	if err != nil {
		return lease.Range{}, g, err
	}
	return lease.Range{
		ID: r.ID, Group: g.Name, GroupID: r.GroupID, Lane: lease.Lane(r.Lane),
		Start: r.Start, End: r.End, Next: r.Next, Capture: r.Capture,
		State: lease.State(r.State), Attempts: r.Attempts, Headers: r.Headers, Reason: r.Reason, Repair: r.Repair,
	}, g, nil
}

func (s *Store) toLease(ctx context.Context, q sqlx.QueryerContext, r rangeRow, ttl time.Duration) (lease.Lease, error) {
	rg, g, err := s.toRange(ctx, q, r)
	if err != nil {
		return lease.Lease{}, err
	}
	return lease.Lease{
		Range: rg, Token: r.Token, Node: r.Node.String, ExpiresAt: fromMicros(r.Expires),
		TTL: lease.Seconds(ttl), ChunkSize: g.ChunkSize,
	}, nil
}

// Grant implements lease.Store. Concurrent Grants are granted together
// (see committer): on PostgreSQL one statement locks as many eligible
// ranges as there are callers and gives one to each.
func (s *Store) Grant(ctx context.Context, node string, ttl time.Duration) (lease.Lease, error) {
	if node == "" {
		return lease.Lease{}, edgeindex.Invalidf("grant: a node name is required")
	}
	ttlUS, err := ttlMicros(ttl)
	if err != nil {
		return lease.Lease{}, err
	}
	return s.grants.do(ctx, grantReq{node: node, ttl: ttl, ttlUS: ttlUS})
}

// GrantMany implements lease.Store: n Grants in one round.
func (s *Store) GrantMany(ctx context.Context, node string, n int, ttl time.Duration) ([]lease.Lease, error) {
	if node == "" || n < 1 {
		return nil, edgeindex.Invalidf("grant: a node name and at least one grant are required")
	}
	ttlUS, err := ttlMicros(ttl)
	if err != nil {
		return nil, err
	}
	reqs := make([]grantReq, n)
	for i := range reqs {
		reqs[i] = grantReq{node: node, ttl: ttl, ttlUS: ttlUS}
	}
	cls, err := s.grants.doMany(ctx, reqs)
	if err != nil {
		return nil, err
	}
	var out []lease.Lease
	var failed error
	for _, cl := range cls {
		switch {
		case cl.err == nil:
			out = append(out, cl.res)
		case !errors.Is(cl.err, lease.ErrNoWork) && failed == nil:
			failed = cl.err
		}
	}
	if len(out) == 0 && failed != nil {
		return nil, failed
	}
	return out, nil
}

// grantReq is one Grant.
type grantReq struct {
	node  string
	ttl   time.Duration
	ttlUS int64
}

// grantEligible is the condition of a range a Grant may take.
//
// A leased range is eligible once its lease expired. A pending one is
// eligible unless it waits out a retry delay: a range reported corrupt is
// pending with expires_us at the time it may be granted again (retryAt).
const grantEligible = "NOT ordered AND state IN ('pending', 'leased') AND (expires_us IS NULL OR expires_us < {now})"

// grantOrder is the order Grant takes eligible ranges in: tail lanes
// first, then the lowest start. The ranges_grant index has these columns,
// so a grant walks it in this order and stops at the first rows it can
// lock. A range whose chunk keeps failing does not come first every time:
// it waits out a retry delay after each attempt (grantEligible).
const grantOrder = "lane_rank, start_n"

// maxRetryDelay bounds the doubled retry delay.
const maxRetryDelay = 24 * time.Hour

// retryAt is when a range that has had attempts (counting the one just
// made) may be granted or fetched again, in microseconds after now: the
// retry delay, doubled for each attempt after the first, at most a day.
func (s *Store) retryAt(now int64, attempts int) int64 {
	d := min(s.cfg.RetryDelay, maxRetryDelay)
	for range min(max(attempts-1, 0), 16) {
		d = min(2*d, maxRetryDelay) // d <= a day: no overflow
	}
	return now + d.Microseconds()
}

// countAttempt counts one corrupt attempt of r, read and locked in tx,
// with reason, and updates r: at the store's maximum attempts r fails,
// leased to no one. Otherwise r becomes pending and waits out its retry
// delay, unless keepLease and r is leased: then its holder keeps it (a
// worker waits for the chunk the prefetcher will fetch again).
func (s *Store) countAttempt(ctx context.Context, tx *sqlx.Tx, r *rangeRow, keepLease bool, reason string) error {
	set, args := "attempts = attempts + 1, reason = ?", []any{reason}
	switch {
	case r.Attempts+1 >= s.cfg.MaxAttempts:
		set += ", state = 'failed', node = NULL, expires_us = NULL"
	case keepLease && r.State == string(lease.StateLeased):
	default:
		now, err := s.clock(ctx, tx)
		if err != nil {
			return err
		}
		set, args = set+", state = 'pending', node = NULL, expires_us = ?", append(args, s.retryAt(now, r.Attempts+1))
	}
	return tx.GetContext(ctx, r, s.q("UPDATE ranges SET "+set+" WHERE id = ? RETURNING "+rangeCols), append(args, r.ID)...)
}

// grantRound grants a round of Grants at once: on PostgreSQL with one
// statement, on SQLite in one transaction. The earliest call gets the first
// range in grant order (grantOrder); calls left without a range get
// lease.ErrNoWork.
func (s *Store) grantRound(ctx context.Context, round []*call[grantReq, lease.Lease]) {
	commitRound(ctx, round, func(ctx context.Context, round []*call[grantReq, lease.Lease]) error {
		var rows []rangeRow
		var err error
		if s.d.takesArrays() {
			rows, err = s.grantPostgres(ctx, round)
		} else {
			err = s.tx(ctx, func(tx *sqlx.Tx) error {
				rows, err = s.grantSQLite(ctx, tx, round)
				return err
			})
		}
		if err != nil {
			return fmt.Errorf("grant: %w", err)
		}
		for i, c := range round {
			c.res, c.err = lease.Lease{}, lease.ErrNoWork
			if i < len(rows) {
				c.res, c.err = s.toLease(ctx, s.rdb, rows[i], c.req.ttl)
			}
		}
		return nil
	})
}

// grantSQLite leases one eligible range to each call's node, in call
// order, a statement each (SQLite's one writer runs them in process). It
// names the grant index: without statistics (nothing runs ANALYZE) SQLite
// would rather search ranges_state by state and sort every eligible range
// for each grant; the partial index holds only eligible states and is in
// grant order, so the first row that passes the expiry check is the one.
func (s *Store) grantSQLite(ctx context.Context, tx *sqlx.Tx, round []*call[grantReq, lease.Lease]) ([]rangeRow, error) {
	now := s.now()
	var rows []rangeRow
	for _, c := range round {
		var r rangeRow
		err := tx.GetContext(ctx, &r, s.q(`
			UPDATE ranges SET state = 'leased', token = token + 1, node = ?, lane_token = 0, expires_us = {now} + ?
			WHERE id = (SELECT id FROM ranges INDEXED BY ranges_grant WHERE `+grantEligible+` ORDER BY `+grantOrder+` LIMIT 1)
			RETURNING `+rangeCols), c.req.node, now, c.req.ttlUS, now)
		if errors.Is(err, sql.ErrNoRows) {
			break
		}
		if err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// grantPostgres is grantSQLite in one statement: it locks as many eligible
// ranges as there are calls, skipping those other transactions have locked, and
// gives the n-th to the n-th call.
func (s *Store) grantPostgres(ctx context.Context, round []*call[grantReq, lease.Lease]) ([]rangeRow, error) {
	nodes, ttls := make([]string, len(round)), make([]int64, len(round))
	for i, c := range round {
		nodes[i], ttls[i] = c.req.node, c.req.ttlUS
	}
	var rows []struct {
		rangeRow
		N int64 `db:"n"`
	}
	now := s.now()
	st, err := s.prepared(ctx, grantRoundQuery)
	if err != nil {
		return nil, err
	}
	if err := st.SelectContext(ctx, &rows, nodes, ttls, now, len(round), now); err != nil {
		return nil, err
	}
	out := make([]rangeRow, len(rows))
	for _, r := range rows {
		out[r.N-1] = r.rangeRow
		s.known.put(r.rangeRow)
	}
	return out, nil
}

// grantRoundQuery is grantPostgres' statement.
var grantRoundQuery = `
	WITH wanted AS (
		SELECT node, ttl_us, n, n AS ord FROM unnest(CAST(? AS TEXT[]), CAST(? AS BIGINT[])) WITH ORDINALITY AS w(node, ttl_us, n)),
	` + grantRanges("") + `
	SELECT * FROM granted`

// grantRanges is the part of a statement that leases ranges as Grant does
// to the rows of a WITH query named wanted (node, ttl_us, n = 1, 2, ...,
// ord): granted locks up to ? eligible ranges in grant order, skipping
// those other transactions have locked and those exclude (SQL) rules out, gives
// the n-th to wanted's n-th, and returns each with its wanted's ord as n.
// The one grant rule of grantPostgres and putOptimistic.
func grantRanges(exclude string) string {
	return `locked AS (
		SELECT id, ` + grantOrder + ` FROM ranges WHERE ` + grantEligible + exclude + `
		ORDER BY ` + grantOrder + ` LIMIT ? {skiplocked}),
	picked AS (SELECT id, row_number() OVER (ORDER BY ` + grantOrder + `) AS n FROM locked),
	granted AS (
		UPDATE ranges AS r SET state = 'leased', token = r.token + 1, node = wanted.node, lane_token = 0,
			expires_us = {now} + wanted.ttl_us
		FROM picked JOIN wanted USING (n) WHERE r.id = picked.id
		RETURNING ` + prefixed("r.", rangeCols) + `, wanted.ord AS n)`
}

// fenceError explains why a fenced write changed no row: no such range, or
// the fence is stale.
func (s *Store) fenceError(ctx context.Context, q sqlx.QueryerContext, op string, rangeID int64, f lease.Fence) error {
	_, err := s.currentRange(ctx, q, op, rangeID, f, "")
	return err
}

// currentRange reads range rangeID, its SELECT ending in lock ("" or
// " {forupdate}" in a transaction that writes it), and checks that f is
// its current lease. Its errors start with op and wrap edgeindex.ErrNotFound or
// edgeindex.ErrLeaseLost.
func (s *Store) currentRange(ctx context.Context, q sqlx.QueryerContext, op string, rangeID int64, f lease.Fence, lock string) (rangeRow, error) {
	var r rangeRow
	err := sqlx.GetContext(ctx, q, &r, s.q("SELECT "+rangeCols+" FROM ranges WHERE id = ?"+lock), rangeID)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return r, fmt.Errorf("%s: range %d: %w", op, rangeID, edgeindex.ErrNotFound)
	case err != nil:
		return r, fmt.Errorf("%s: %w", op, err)
	case !r.current(f):
		return r, leaseLost(op, r, f)
	}
	return r, nil
}

func leaseLost(op string, r rangeRow, f lease.Fence) error {
	why := "it is " + r.State
	switch {
	case r.State != string(lease.StateLeased):
	case r.Node.String != f.Node:
		why = "another node holds it"
	default:
		why = fmt.Sprintf("token %d is not the current %d", f.Token, r.Token)
	}
	err := fmt.Errorf("%s: range %d: %w: %s", op, r.ID, edgeindex.ErrLeaseLost, why)
	if r.State == string(lease.StateDone) && r.Token == f.Token {
		// A token is granted once and a finish keeps it: f's grant finished it.
		err = edgeindex.FinishedLost(err)
	}
	return err
}

// Heartbeat implements lease.Store.
func (s *Store) Heartbeat(ctx context.Context, rangeID int64, f lease.Fence, ttl time.Duration) (time.Time, error) {
	ttlUS, err := ttlMicros(ttl)
	if err != nil {
		return time.Time{}, err
	}
	if s.d.takesArrays() {
		// Concurrent heartbeats go in rounds, one statement and one
		// commit each (heartbeatRound); one its round did not renew goes
		// on alone, below, to be renewed or told apart.
		exp, err := s.heartbeats.do(ctx, heartbeatReq{rangeFence: rangeFence{rangeID: rangeID, f: f}, ttlUS: ttlUS})
		if err != nil {
			return time.Time{}, err
		}
		if exp.Valid {
			return fromMicros(exp), nil
		}
	}
	var exp sql.NullInt64
	err = s.db.GetContext(ctx, &exp, s.q(`
		UPDATE ranges SET expires_us = {now} + ?
		WHERE id = ? AND state = 'leased' AND node = ? AND token = ?
		RETURNING expires_us`), s.now(), ttlUS, rangeID, f.Node, f.Token)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, s.fenceError(ctx, s.db, "heartbeat", rangeID, f)
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("heartbeat: %w", err)
	}
	return fromMicros(exp), nil
}

// Finish implements lease.Store. It writes no lane row: a lane's progress
// is counted from its ranges (Lanes). A lane row written here would be a hot
// row every finish of the lane queues on; on PostgreSQL it would also take
// the lane's lock after the range's, the reverse of GrantLane, which fences
// the lane's ranges under the lane's lock (a deadlock), and a lane grant
// would skip the lane while a finish has its row locked (no work, spuriously).
func (s *Store) Finish(ctx context.Context, rangeID int64, f lease.Fence) error {
	errs, err := s.FinishMany(ctx, []lease.Held{{RangeID: rangeID, Fence: f}})
	if err != nil {
		return err
	}
	return errs[0]
}

// finishAlone is Finish in a transaction of its own, which tells a
// refusal apart: a lost lease, or batches short of the range's end.
func (s *Store) finishAlone(ctx context.Context, rangeID int64, f lease.Fence) error {
	return s.tx(ctx, func(tx *sqlx.Tx) error {
		var id int64
		err := tx.GetContext(ctx, &id, s.q(`
			UPDATE ranges SET state = 'done', node = NULL, expires_us = NULL
			WHERE id = ? AND state = 'leased' AND node = ? AND token = ? AND next_n > end_n
			RETURNING id`), rangeID, f.Node, f.Token)
		if errors.Is(err, sql.ErrNoRows) {
			// The fence's read has the row's next and end too.
			r, err := s.currentRange(ctx, tx, "finish", rangeID, f, "")
			if err != nil {
				return err
			}
			return fmt.Errorf("finish: range %d: %w: the batches reach %d but the range ends at %d", rangeID, edgeindex.ErrConflict, r.Next-1, r.End)
		}
		if err != nil {
			return fmt.Errorf("finish: %w", err)
		}
		return s.finishChecked(ctx, tx, "finish", rangeID, true)
	})
}

// FinishMany implements lease.Store. On PostgreSQL the ranges go into one
// finish round (finishRound): one statement and one commit for the round,
// fenced in its WHERE, with the claims' delete, where the transaction of
// finishAlone takes four round trips and a commit for one. Only a range
// the round did not finish (a refusal, to be told apart) goes on to it.
func (s *Store) FinishMany(ctx context.Context, ranges []lease.Held) ([]error, error) {
	errs := make([]error, len(ranges))
	done := make([]bool, len(ranges))
	defer func() {
		for _, r := range ranges {
			s.known.forget(r.RangeID) // no longer the holder's as last written
		}
	}()
	if s.d.writesInWith() {
		reqs := make([]rangeFence, len(ranges))
		for i, r := range ranges {
			reqs[i] = rangeFence{rangeID: r.RangeID, f: r.Fence}
		}
		cls, err := s.finishes.doMany(ctx, reqs)
		if err != nil {
			return nil, err
		}
		for i, cl := range cls {
			done[i], errs[i] = cl.res && cl.err == nil, cl.err
		}
	}
	for i, r := range ranges {
		if !done[i] && errs[i] == nil {
			errs[i] = s.finishAlone(ctx, r.RangeID, r.Fence)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return errs, nil
}

// finishChecked finishes, in tx, range rangeID whose lease the caller checked
// under the row's lock and whose next is past its end. When marked, the
// caller has set it done already; otherwise it is set done here. Its chunk
// claims go: nobody fetches its chunks again.
func (s *Store) finishChecked(ctx context.Context, tx *sqlx.Tx, op string, rangeID int64, marked bool) error {
	if !marked {
		if _, err := tx.ExecContext(ctx, s.q("UPDATE ranges SET state = 'done', node = NULL, expires_us = NULL WHERE id = ?"), rangeID); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
	}
	// A done range's chunks are dropped from the spool: nobody fetches them again.
	if _, err := tx.ExecContext(ctx, s.q("DELETE FROM chunk_claims WHERE range_id = ?"), rangeID); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// Release implements lease.Store.
func (s *Store) Release(ctx context.Context, rangeID int64, f lease.Fence) error {
	defer s.known.forget(rangeID) // no longer the holder's as last written
	res, err := s.db.ExecContext(ctx, s.q(`
		UPDATE ranges SET state = 'pending', node = NULL, expires_us = NULL
		WHERE id = ? AND state = 'leased' AND node = ? AND token = ?`), rangeID, f.Node, f.Token)
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return s.fenceError(ctx, s.db, "release", rangeID, f)
	}
	return nil
}

// Corrupt implements lease.Store.
func (s *Store) Corrupt(ctx context.Context, rangeID int64, f lease.Fence, from int64, reason string) (lease.Range, error) {
	defer s.known.forget(rangeID) // no longer the holder's as last written
	var out lease.Range
	err := s.tx(ctx, func(tx *sqlx.Tx) error {
		r, err := s.currentRange(ctx, tx, "corrupt", rangeID, f, " {forupdate}")
		if err != nil {
			return err
		}
		g, err := s.groupByID(ctx, tx, r.GroupID)
		if err != nil {
			return err
		}
		if !lease.IsChunkStart(r.Start, r.End, g.ChunkSize, from) {
			return edgeindex.Invalidf("corrupt: %d is not the start of a chunk of range %d (%d..%d, chunks of %d)",
				from, rangeID, r.Start, r.End, g.ChunkSize)
		}
		if reason == "" {
			reason = "corrupt chunk"
		}
		if err := s.countAttempt(ctx, tx, &r, false, fmt.Sprintf("chunk %d: %s", from, reason)); err != nil {
			return fmt.Errorf("corrupt: %w", err)
		}
		// The chunk is fetched again.
		if _, err := tx.ExecContext(ctx, s.q("DELETE FROM chunk_claims WHERE range_id = ? AND from_n = ?"), rangeID, from); err != nil {
			return fmt.Errorf("corrupt: %w", err)
		}
		out, _, err = s.toRange(ctx, tx, r)
		return err
	})
	return out, err
}

// Check implements lease.Store.
func (s *Store) Check(ctx context.Context, rangeID int64, f lease.Fence) (lease.Lease, error) {
	var r rangeRow
	err := s.db.GetContext(ctx, &r, s.q("SELECT "+rangeCols+" FROM ranges WHERE id = ?"), rangeID)
	if errors.Is(err, sql.ErrNoRows) {
		return lease.Lease{}, fmt.Errorf("check: range %d: %w", rangeID, edgeindex.ErrNotFound)
	}
	if err != nil {
		return lease.Lease{}, fmt.Errorf("check: %w", err)
	}
	if !r.current(f) {
		return lease.Lease{}, leaseLost("check", r, f)
	}
	return s.toLease(ctx, s.db, r, 0) // the TTL is not stored per range
}

// Range returns one range by id, or edgeindex.ErrNotFound.
func (s *Store) Range(ctx context.Context, id int64) (lease.Range, error) {
	var r rangeRow
	err := s.rdb.GetContext(ctx, &r, s.q("SELECT "+rangeCols+" FROM ranges WHERE id = ?"), id)
	if errors.Is(err, sql.ErrNoRows) {
		return lease.Range{}, fmt.Errorf("range %d: %w", id, edgeindex.ErrNotFound)
	}
	if err != nil {
		return lease.Range{}, fmt.Errorf("range: %w", err)
	}
	rg, _, err := s.toRange(ctx, s.rdb, r)
	return rg, err
}

// Held implements lease.Store.
func (s *Store) Held(ctx context.Context) ([]lease.Lease, error) {
	var rows []rangeRow
	if err := s.rdb.SelectContext(ctx, &rows, "SELECT "+rangeCols+" FROM ranges WHERE state = 'leased' ORDER BY node, start_n"); err != nil {
		return nil, fmt.Errorf("held: %w", err)
	}
	out := make([]lease.Lease, 0, len(rows))
	for _, r := range rows {
		l, err := s.toLease(ctx, s.rdb, r, 0)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}
