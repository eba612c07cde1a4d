package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/lease"
)

// Put implements batch.Store. Concurrent Puts are stored together, one
// commit for all of them (see committer and putRound), each with the
// outcome it would have had alone, in the order they were taken. A final
// batch finishes its range in the same commit, so a range's last chunk
// costs no commit of its own.
func (s *Store) Put(ctx context.Context, rangeID int64, f lease.Fence, b batch.Batch) (batch.Result, error) {
	return s.puts.do(ctx, putReq{rangeID: rangeID, f: f, b: b})
}

// putReq is one Put.
type putReq struct {
	rangeID int64
	f       lease.Fence
	b       batch.Batch
	then    *thenGrant // PutThenGrant's
}

// PutThenGrant is Put that, when the batch finishes its range (Done),
// grants f.Node its next range for ttl in the statement that stores the
// batch, where it can: on PostgreSQL, for a batch stored with its group's
// one statement (see putOptimistic). tried says whether the grant was
// made there; lease is nil then when there was no work. When it was not
// tried, the caller grants the usual way (Grant) if it wants one.
func (s *Store) PutThenGrant(ctx context.Context, rangeID int64, f lease.Fence, b batch.Batch, ttl time.Duration) (res batch.Result, l *lease.Lease, tried bool, err error) {
	ttlUS, err := ttlMicros(ttl)
	if err != nil {
		return batch.Result{}, nil, false, err
	}
	then := &thenGrant{ttl: ttl, ttlUS: ttlUS}
	res, err = s.puts.do(ctx, putReq{rangeID: rangeID, f: f, b: b, then: then})
	if err != nil {
		return res, nil, false, err
	}
	return res, then.lease, then.tried, nil // the loop wrote them before answering
}

// PutMany implements batch.Store: the entries go into one round of Puts
// (a round may then hold more than maxRound calls), each decided and
// fenced as its own Put, and with ttl > 0 each asking for its node's next
// range as PutThenGrant does.
func (s *Store) PutMany(ctx context.Context, entries []batch.Entry, ttl time.Duration) ([]batch.Answer, error) {
	var ttlUS int64
	if ttl > 0 {
		var err error
		if ttlUS, err = ttlMicros(ttl); err != nil {
			return nil, err
		}
	}
	reqs := make([]putReq, len(entries))
	for i, e := range entries {
		reqs[i] = putReq{rangeID: e.RangeID, f: e.Fence, b: e.Batch}
		if ttl > 0 {
			reqs[i].then = &thenGrant{ttl: ttl, ttlUS: ttlUS}
		}
	}
	cls, err := s.puts.doMany(ctx, reqs)
	if err != nil {
		return nil, err
	}
	out := make([]batch.Answer, len(cls))
	for i, cl := range cls {
		out[i] = batch.Answer{Result: cl.res, Err: cl.err}
		if then := cl.req.then; then != nil && cl.err == nil {
			out[i].Lease, out[i].Tried = then.lease, then.tried
		}
	}
	return out, nil
}

// thenGrant is a PutThenGrant's request for the next lease, and what came
// of it.
type thenGrant struct {
	ttl   time.Duration
	ttlUS int64
	lease *lease.Lease // granted
	tried bool         // the grant was tried: no lease means no work
}

// putRound stores a round of Puts: with putOptimistic's statement where it
// can, else in one transaction under the ranges' locks (putTx).
func (s *Store) putRound(ctx context.Context, round []*call[putReq, batch.Result]) {
	locked := func(ctx context.Context, round []*call[putReq, batch.Result]) error {
		return s.connTx(ctx, func(conn *sql.Conn, tx *sqlx.Tx) error { return s.putTx(ctx, conn, tx, round) })
	}
	commitRound(ctx, round, func(ctx context.Context, round []*call[putReq, batch.Result]) error {
		if !s.optimistic(round) {
			return locked(ctx, round)
		}
		rest, err := s.putOptimistic(ctx, round)
		if err != nil {
			return err // nothing was written
		}
		// The others' answers are final: the ranges these name changed
		// since they were read, and are decided again under their locks.
		commitRound(ctx, rest, locked)
		return nil
	})
}

// storedBatch is a batch being stored for range r, as node posted it.
type storedBatch struct {
	r    rangeRow
	b    batch.Batch
	node string
}

// putWrites collects what a round of Puts writes.
type putWrites struct {
	stored   []storedBatch
	touched  []*rangeRow // in the order first touched
	finished []int64
}

// putTx locks the round's ranges in id order, decides each Put against its
// range as the Puts before it left it (decidePut), then writes every
// stored batch, item, range and finish with a few statements. conn is the
// transaction's connection, for the COPY of many items.
func (s *Store) putTx(ctx context.Context, conn *sql.Conn, tx *sqlx.Tx, round []*call[putReq, batch.Result]) error {
	ids := roundIDs(round)
	for _, id := range ids {
		s.known.forget(id) // written here, under the lock, not as remembered
	}
	rows, err := s.lockRanges(ctx, tx, ids)
	if err != nil {
		return fmt.Errorf("batch: %w", err)
	}
	return s.writePuts(ctx, conn, tx, decideRound(round, rows))
}

// roundIDs returns the ranges a round of Puts names, sorted, once each.
func roundIDs(round []*call[putReq, batch.Result]) []int64 {
	ids := make([]int64, 0, len(round))
	for _, c := range round {
		ids = append(ids, c.req.rangeID)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// decideRound answers each Put of round against rows, its ranges, in the
// order taken (decidePut), and returns what they write.
func decideRound(round []*call[putReq, batch.Result], rows []rangeRow) *putWrites {
	byID := make(map[int64]*rangeRow, len(rows))
	for i := range rows {
		byID[rows[i].ID] = &rows[i]
	}
	var w putWrites
	for _, c := range round {
		c.res, c.err = batch.Result{}, nil
		r, ok := byID[c.req.rangeID]
		if !ok {
			c.err = fmt.Errorf("batch: range %d: %w", c.req.rangeID, edgeindex.ErrNotFound)
			continue
		}
		c.res, c.err = decidePut(r, c.req, &w)
	}
	return &w
}

// lockRanges reads and locks the ranges ids (sorted) in id order; on
// PostgreSQL with a prepared statement.
func (s *Store) lockRanges(ctx context.Context, tx *sqlx.Tx, ids []int64) ([]rangeRow, error) {
	var rows []rangeRow
	if !s.d.takesArrays() {
		err := tx.SelectContext(ctx, &rows, s.bind("SELECT "+rangeCols+" FROM ranges WHERE id IN ("+placeholders(len(ids))+") ORDER BY id"), anys(ids)...)
		return rows, err
	}
	st, err := s.prepared(ctx, lockRangesQuery)
	if err != nil {
		return nil, err
	}
	err = tx.StmtxContext(ctx, st).SelectContext(ctx, &rows, ids)
	return rows, err
}

// decidePut applies the batch rule to one Put against r, the range as the
// round's earlier Puts left it, updating r and adding the writes to w.
func decidePut(r *rangeRow, q putReq, w *putWrites) (batch.Result, error) {
	if !r.current(q.f) {
		err := leaseLost("batch", *r, q.f)
		if !q.b.Final {
			return batch.Result{}, err
		}
		var res batch.Result
		err = finalRetry(*r, q.b, &res, err)
		return res, err
	}
	if q.b.From < r.Start {
		// Not a retry of a stored batch: none starts before the range.
		return batch.Result{}, edgeindex.Invalidf("batch: from %d is before the range's start %d", q.b.From, r.Start)
	}
	outcome, err := batch.Classify(r.Next, r.End, q.b)
	if err != nil {
		return batch.Result{}, fmt.Errorf("batch: range %d: %w", r.ID, err)
	}
	if outcome == batch.Duplicate {
		res := batch.Result{Next: r.Next, Duplicate: true}
		if q.b.Final { // next > end: the range can be finished
			res.Done = true
			w.finish(r)
		}
		return res, nil
	}
	w.stored = append(w.stored, storedBatch{r: *r, b: q.b, node: q.f.Node})
	w.touch(r)
	r.Next, r.Headers = q.b.To+1, r.Headers+q.b.Headers
	if q.b.Final {
		w.finish(r)
	}
	return batch.Result{Next: r.Next, Done: q.b.Final}, nil
}

func (w *putWrites) touch(r *rangeRow) {
	if !slices.Contains(w.touched, r) {
		w.touched = append(w.touched, r)
	}
}

// finish sets r done: its lease ends and its chunk claims go (nobody
// fetches its chunks again).
func (w *putWrites) finish(r *rangeRow) {
	w.touch(r)
	r.State, r.Node, r.Expires = string(lease.StateDone), sql.NullString{}, sql.NullInt64{}
	w.finished = append(w.finished, r.ID)
}

// writePuts writes what a round of Puts decided: the batches, their items,
// the ranges and the finished ranges' claims, as statement parts that
// PostgreSQL runs as one statement (execParts); a round of many items
// COPYs them first. The missing articles, rare, follow.
func (s *Store) writePuts(ctx context.Context, conn *sql.Conn, tx *sqlx.Tx, w *putWrites) error {
	var parts []part
	if len(w.stored) > 0 {
		var sb strings.Builder
		sb.WriteString("INSERT INTO batches (range_id, node, from_n, to_n, headers, items, at_us) VALUES ")
		args := make([]any, 0, 7*len(w.stored))
		at := s.nowMicros()
		for _, p := range w.stored {
			if !recorded(p.b) {
				continue
			}
			if len(args) > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString("(?, ?, ?, ?, ?, ?, ?)")
			args = append(args, p.r.ID, p.node, p.b.From, p.b.To, p.b.Headers, len(p.b.Items), at)
		}
		if len(args) > 0 {
			parts = append(parts, part{sb.String(), args})
		}
		items, err := s.insertItems(ctx, conn, tx, w.stored)
		if err != nil {
			return fmt.Errorf("batch: items: %w", err)
		}
		parts = append(parts, items...)
	}
	parts = append(parts, s.rangeUpdates(w.touched)...)
	if len(w.finished) > 0 {
		parts = append(parts, part{"DELETE FROM chunk_claims WHERE range_id IN (" + placeholders(len(w.finished)) + ")", anys(w.finished)})
	}
	if err := s.execParts(ctx, tx, parts); err != nil {
		return fmt.Errorf("batch: %w", err)
	}
	for _, p := range w.stored {
		if err := s.putMissing(ctx, tx, p.r, p.b); err != nil {
			return fmt.Errorf("batch: missing: %w", err)
		}
	}
	return nil
}

// recorded reports whether a stored batch gets a row in the node's batch
// history (batches): every batch but an empty final one, which stored
// nothing and only finished its range (the range row says that).
func recorded(b batch.Batch) bool { return len(b.Items) > 0 || !b.Final }

// part is a statement that writes, in the ? form s.bind rebinds, and its
// arguments.
type part struct {
	sql  string
	args []any
}

// execParts runs parts in order: on PostgreSQL as one statement, each part
// a data-modifying WITH query (one round trip; the parts touch different
// rows, so their order does not matter), on SQLite one by one (in process).
func (s *Store) execParts(ctx context.Context, tx *sqlx.Tx, parts []part) error {
	if !s.d.writesInWith() || len(parts) == 1 {
		for _, p := range parts {
			if _, err := tx.ExecContext(ctx, s.bind(p.sql), p.args...); err != nil {
				return err
			}
		}
		return nil
	}
	var sb strings.Builder
	var args []any
	for i, p := range parts {
		if i == 0 {
			sb.WriteString("WITH ")
		} else {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, "w%d AS (%s)", i, p.sql)
		args = append(args, p.args...)
	}
	sb.WriteString(" SELECT 1")
	_, err := tx.ExecContext(ctx, s.bind(sb.String()), args...)
	return err
}

// rangeUpdates writes the next, headers, state, node and expiry of rows:
// one statement on PostgreSQL, one per row on SQLite.
func (s *Store) rangeUpdates(rows []*rangeRow) []part {
	if len(rows) == 0 {
		return nil
	}
	if s.d.takesArrays() {
		ids, next, headers := make([]int64, len(rows)), make([]int64, len(rows)), make([]int64, len(rows))
		states := make([]string, len(rows))
		for i, r := range rows {
			ids[i], next[i], headers[i], states[i] = r.ID, r.Next, r.Headers, r.State
		}
		return []part{{`UPDATE ranges AS r SET next_n = u.next_n, headers = u.headers, state = u.state,
			node = CASE WHEN u.state = 'done' THEN NULL ELSE r.node END,
			expires_us = CASE WHEN u.state = 'done' THEN NULL ELSE r.expires_us END
			FROM unnest(CAST(? AS BIGINT[]), CAST(? AS BIGINT[]), CAST(? AS BIGINT[]), CAST(? AS TEXT[])) AS u(id, next_n, headers, state)
			WHERE r.id = u.id`, []any{ids, next, headers, states}}}
	}
	parts := make([]part, len(rows))
	for i, r := range rows {
		parts[i] = part{`UPDATE ranges SET next_n = ?, headers = ?, state = ?,
			node = CASE WHEN ? = 'done' THEN NULL ELSE node END,
			expires_us = CASE WHEN ? = 'done' THEN NULL ELSE expires_us END WHERE id = ?`,
			[]any{r.Next, r.Headers, r.State, r.State, r.State, r.ID}}
	}
	return parts
}

// anys converts values to query arguments.
func anys[T any](values []T) []any {
	args := make([]any, len(values))
	for i, v := range values {
		args[i] = v
	}
	return args
}

// finalRetry answers a final batch refused by the fence with lost: when f's
// own grant finished the range (edgeindex.ErrFinished), the batch is the retry
// of the one that finished it, and gets Duplicate and Done; nothing is
// written. Anything else keeps lost.
func finalRetry(r rangeRow, b batch.Batch, res *batch.Result, lost error) error {
	if !errors.Is(lost, edgeindex.ErrFinished) {
		return lost
	}
	if _, err := batch.Classify(r.Next, r.End, b); err != nil {
		return fmt.Errorf("batch: range %d: %w", r.ID, err)
	}
	*res = batch.Result{Next: r.Next, Duplicate: true, Done: true}
	return nil
}

// Results implements batch.Store. On PostgreSQL the feed orders items by
// the transaction that stored them and shows only items below the oldest
// running transaction, so a page never skips an item that commits later;
// on SQLite, whose one writer commits in id order, by id.
func (s *Store) Results(ctx context.Context, q batch.Query) (batch.Page, error) {
	if q.Limit == 0 {
		q.Limit = 100
	}
	if q.Limit < 0 || q.Limit > 10000 {
		return batch.Page{}, edgeindex.Invalidf("results: limit %d must be 1 to 10000", q.Limit)
	}
	afterXID, afterID, err := parseCursor(q.After)
	if err != nil {
		return batch.Page{}, err
	}
	query := "SELECT id, xid, range_id, from_n, to_n, key, value FROM items WHERE (xid, id) > (?, ?) {visible}"
	args := []any{afterXID, afterID}
	if q.Group != "" {
		g, err := s.Group(ctx, q.Group)
		if err != nil {
			return batch.Page{}, fmt.Errorf("results: %w", err)
		}
		query += " AND group_id = ?"
		args = append(args, g.ID)
	}
	query += " ORDER BY xid, id LIMIT ?"
	args = append(args, q.Limit)
	rows, err := s.rdb.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return batch.Page{}, fmt.Errorf("results: %w", err)
	}
	defer rows.Close()
	page := batch.Page{Results: []batch.Stored{}}
	var xid int64
	for rows.Next() {
		var it batch.Stored
		var value string
		if err := rows.Scan(&it.ID, &xid, &it.Range, &it.From, &it.To, &it.Key, &value); err != nil {
			return batch.Page{}, fmt.Errorf("results: %w", err)
		}
		it.Value = []byte(value)
		page.Results = append(page.Results, it)
	}
	if err := rows.Err(); err != nil {
		return batch.Page{}, fmt.Errorf("results: %w", err)
	}
	if n := len(page.Results); n > 0 {
		page.Next = strconv.FormatInt(xid, 10) + "." + strconv.FormatInt(page.Results[n-1].ID, 10)
	} else {
		page.Next = q.After
	}
	return page, nil
}

// parseCursor reads "XID.ID"; the empty cursor is the start of the feed.
func parseCursor(c string) (xid, id int64, err error) {
	if c == "" {
		return -1, 0, nil
	}
	x, i, ok := strings.Cut(c, ".")
	if ok {
		xid, err = strconv.ParseInt(x, 10, 64)
	}
	if ok && err == nil {
		id, err = strconv.ParseInt(i, 10, 64)
	}
	if !ok || err != nil || xid < 0 || id < 0 {
		return 0, 0, fmt.Errorf("results: %w: %q", batch.ErrBadCursor, c)
	}
	return xid, id, nil
}

// Batches implements batch.Store.
func (s *Store) Batches(ctx context.Context, node string, before int64, limit int) ([]batch.Record, error) {
	if limit == 0 {
		limit = 50
	}
	if limit < 0 || limit > 1000 || before < 0 {
		return nil, edgeindex.Invalidf("batches: limit must be 1 to 1000 and before not negative")
	}
	if before == 0 {
		before = math.MaxInt64
	}
	rows, err := s.rdb.QueryContext(ctx, s.q(`SELECT id, range_id, from_n, to_n, headers, items, at_us FROM batches
		WHERE node = ? AND id < ? ORDER BY id DESC LIMIT ?`), node, before, limit)
	if err != nil {
		return nil, fmt.Errorf("batches: %w", err)
	}
	defer rows.Close()
	out := []batch.Record{}
	for rows.Next() {
		var r batch.Record
		var at int64
		if err := rows.Scan(&r.ID, &r.Range, &r.From, &r.To, &r.Headers, &r.Items, &at); err != nil {
			return nil, fmt.Errorf("batches: %w", err)
		}
		r.At = time.UnixMicro(at).UTC()
		out = append(out, r)
	}
	return out, rows.Err()
}
