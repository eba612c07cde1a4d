package sqlstore

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/lease"
)

// optimistic reports whether a round of Puts may be stored the optimistic
// way (putOptimistic): on PostgreSQL, with few items, and no missing
// articles, whose bookkeeping (putMissing) runs under the range's lock, as
// a repair range's does (putOptimistic hands those back).
func (s *Store) optimistic(round []*call[putReq, batch.Result]) bool {
	if !s.d.optimisticPuts() {
		return false
	}
	n := 0
	for _, c := range round {
		if len(c.req.b.Missing) > 0 {
			return false
		}
		n += len(c.req.b.Items)
	}
	return n < copyAbove
}

// putOptimistic stores a round of Puts with at most two statements and no
// transaction of its own, the way River completes jobs (the fence in the
// WHERE): it reads the round's ranges without locking them (readRound;
// none when it knows them: decideKnown), decides every Put against them
// (decideRound, as putTx does), then writes with one statement
// (optimisticWrite) whose range update holds only where each range is
// still as it was read (its next, token and state), and whose batches,
// items and claim deletions are written only for the ranges the update
// matched. A range that changed in between (a grant, a release, a lane's
// fence, a Put of another coordinator) matched nothing, so nothing of its
// Puts was written: those calls are returned, to be decided again under
// the range's lock. The rest are answered. An error means nothing was
// written.
func (s *Store) putOptimistic(ctx context.Context, round []*call[putReq, batch.Result]) ([]*call[putReq, batch.Result], error) {
	rows, w, err := s.readRound(ctx, round)
	switch {
	case err != nil:
		return nil, err
	case w == nil:
		return round, nil // a repair range: its stored spans are bookkept under its lock
	}
	if len(w.touched) == 0 {
		return nil, nil // nothing to write: every answer stands
	}
	ow := s.optimisticWrite(round, w, rows)
	if s.testHookWrite != nil {
		s.testHookWrite()
	}
	write, err := s.prepared(ctx, optimisticPutQuery)
	if err != nil {
		return nil, fmt.Errorf("batch: %w", err)
	}
	var out []writtenRow
	if err := write.SelectContext(ctx, &out, ow.args()...); err != nil {
		return nil, fmt.Errorf("batch: %w", err)
	}
	// Written: from here on nothing may fail the round.
	stale := s.staleRanges(w, out)
	s.handOver(ctx, ow.want, stale, out)
	var rest []*call[putReq, batch.Result]
	for _, c := range round {
		if stale[c.req.rangeID] {
			rest = append(rest, c)
		}
	}
	return rest, nil
}

// readRound decides round against its ranges as this store knows them
// (decideKnown), or else as it reads them, unlocked, and returns the
// ranges as they were before the round and its writes. It returns nil
// writes, and no error, when a range is a repair range.
func (s *Store) readRound(ctx context.Context, round []*call[putReq, batch.Result]) ([]rangeRow, *putWrites, error) {
	ids := roundIDs(round)
	if rows, w := s.decideKnown(round, ids); w != nil {
		return rows, w, nil
	}
	read, err := s.prepared(ctx, readRangesQuery)
	if err != nil {
		return nil, nil, fmt.Errorf("batch: %w", err)
	}
	var rows []rangeRow
	if err := read.SelectContext(ctx, &rows, ids); err != nil {
		return nil, nil, fmt.Errorf("batch: %w", err)
	}
	for _, r := range rows {
		if r.Repair {
			return nil, nil, nil
		}
	}
	return rows, decideRound(round, slices.Clone(rows)), nil
}

// staleRanges returns the ranges w touched that the write, whose rows are
// out, did not match, and updates what this store knows: a range matched
// and still leased is known as w left it, any other is forgotten.
func (s *Store) staleRanges(w *putWrites, out []writtenRow) map[int64]bool {
	stale := make(map[int64]bool, len(w.touched))
	for _, r := range w.touched {
		stale[r.ID] = true
	}
	for _, o := range out {
		if o.N == 0 { // a range u matched
			delete(stale, o.ID)
		}
	}
	for _, r := range w.touched {
		if stale[r.ID] || r.State != string(lease.StateLeased) {
			s.known.forget(r.ID)
		} else {
			s.known.put(*r)
		}
	}
	return stale
}

// writtenRow is a row optimisticPutQuery returns: a range granted to the
// N-th Put that asked, or with N = 0 the id of a range the write matched.
type writtenRow struct {
	rangeRow
	N int64 `db:"n"`
}

// optimisticWrite is what optimisticPutQuery writes, a list a column
// (args puts them in the statement's order).
type optimisticWrite struct {
	ranges   fencedUpdates
	batches  batchColumns
	items    itemColumns
	finished []int64 // the ranges whose claims go
	grants   grantWants
	want     []*call[putReq, batch.Result] // the Puts that asked for a grant, in grants' order
	at       int64                         // the batches' at_us
	now      any                           // the {now} argument
}

// fencedUpdates are the ranges' new values, and the values each was read
// with, which the update requires still (the fence).
type fencedUpdates struct {
	ids, next, headers, oldNext, oldToken []int64
	state, oldState                       []string
}

// batchColumns are the batches' rows.
type batchColumns struct {
	ranges, from, to, headers, items []int64
	nodes                            []string
}

// itemColumns are the items' rows. Their values go as one byte string,
// each row naming its value's place in it: as an array of strings, a
// round's values cost five times their size in allocations and copies,
// as pgx appends them to a buffer that grows a quarter at a time
// (decision 48).
type itemColumns struct {
	groups, ranges, from, to []int64
	keys                     []string
	values                   []byte  // every row's value, one after another
	at, lens                 []int64 // each row's value: its 1-based offset in values, its length
}

// grantWants are the grants asked for: wanted's rows.
type grantWants struct {
	nodes        []string
	ttls, ranges []int64
}

// optimisticWrite returns the write of the decided writes w of round,
// whose ranges were rows before.
func (s *Store) optimisticWrite(round []*call[putReq, batch.Result], w *putWrites, rows []rangeRow) optimisticWrite {
	ow := optimisticWrite{finished: w.finished, at: s.nowMicros(), now: s.now()}
	ow.ranges = fenceUpdates(w.touched, rows)
	ow.batches, ow.items = storedColumns(w.stored)
	ow.grants, ow.want = wantedGrants(round, w.touched)
	return ow
}

// fenceUpdates returns the updates of the ranges touched, each fenced by
// the values it had in rows.
func fenceUpdates(touched []*rangeRow, rows []rangeRow) fencedUpdates {
	was := make(map[int64]rangeRow, len(rows))
	for _, r := range rows {
		was[r.ID] = r
	}
	var u fencedUpdates
	for _, r := range touched {
		o := was[r.ID]
		u.ids, u.next, u.headers, u.state = append(u.ids, r.ID), append(u.next, r.Next), append(u.headers, r.Headers), append(u.state, r.State)
		u.oldNext, u.oldToken, u.oldState = append(u.oldNext, o.Next), append(u.oldToken, o.Token), append(u.oldState, o.State)
	}
	return u
}

// storedColumns returns the rows of the batches stored and of their items.
func storedColumns(stored []storedBatch) (batchColumns, itemColumns) {
	var b batchColumns
	it := itemColumns{values: make([]byte, 0, valueBytes(stored))}
	for _, p := range stored {
		if recorded(p.b) {
			b.ranges, b.nodes, b.from, b.to = append(b.ranges, p.r.ID), append(b.nodes, p.node), append(b.from, p.b.From), append(b.to, p.b.To)
			b.headers, b.items = append(b.headers, p.b.Headers), append(b.items, int64(len(p.b.Items)))
		}
		for _, item := range p.b.Items {
			v := valueText(item.Value)
			it.groups, it.ranges, it.from, it.to = append(it.groups, p.r.GroupID), append(it.ranges, p.r.ID), append(it.from, p.b.From), append(it.to, p.b.To)
			it.keys, it.at, it.lens = append(it.keys, item.Key), append(it.at, int64(len(it.values))+1), append(it.lens, int64(len(v)))
			it.values = append(it.values, v...)
		}
	}
	return b, it
}

// valueBytes is the size of the values of stored, as itemColumns holds
// them.
func valueBytes(stored []storedBatch) int {
	n := 0
	for _, p := range stored {
		for _, item := range p.b.Items {
			n += len(valueText(item.Value))
		}
	}
	return n
}

// wantedGrants returns the grants asked for by the Puts of round that
// asked for their next lease and finish a range the write touches, and
// those Puts.
func wantedGrants(round []*call[putReq, batch.Result], touchedRows []*rangeRow) (grantWants, []*call[putReq, batch.Result]) {
	touched := make(map[int64]bool, len(touchedRows))
	for _, r := range touchedRows {
		touched[r.ID] = true
	}
	var g grantWants
	var want []*call[putReq, batch.Result]
	for _, c := range round {
		// One lease per range: a retry in the same round is its duplicate.
		if c.req.then != nil && c.err == nil && c.res.Done && touched[c.req.rangeID] {
			touched[c.req.rangeID] = false
			want = append(want, c)
			g.nodes, g.ttls, g.ranges = append(g.nodes, c.req.f.Node), append(g.ttls, c.req.then.ttlUS), append(g.ranges, c.req.rangeID)
		}
	}
	return g, want
}

// args returns the arguments of optimisticPutQuery, in its order: v's
// lists, b's time and lists, d's, wanted's, granted's (grantRanges: {now},
// the ranges excluded, the limit, {now}), then i's lists and its values.
// The values come last, as pgx appends each argument to one buffer: one
// after them would copy them again as the buffer grows.
func (ow optimisticWrite) args() []any {
	u, b, it, g := ow.ranges, ow.batches, ow.items, ow.grants
	return []any{
		u.ids, u.next, u.headers, u.state,
		u.oldNext, u.oldToken, u.oldState,
		ow.at, b.ranges, b.nodes, b.from, b.to, b.headers, b.items,
		ow.finished,
		g.nodes, g.ttls, g.ranges,
		ow.now, u.ids, len(ow.want), ow.now,
		it.groups, it.ranges, it.from, it.to, it.keys, it.at, it.lens, it.values,
	}
}

// handOver gives each Put of want whose range the write matched (not
// stale) the range the write granted it, if any (a row of out with n > 0:
// its ordinal in want), and says the grant was tried. A lease that cannot
// be made (its group unknown: it cannot be, groups are cached when added)
// is left to expire, and its Put told nothing was tried.
func (s *Store) handOver(ctx context.Context, want []*call[putReq, batch.Result], stale map[int64]bool, out []writtenRow) {
	for _, c := range want {
		c.req.then.tried = !stale[c.req.rangeID]
	}
	for _, o := range out {
		if o.N == 0 {
			continue
		}
		c := want[o.N-1]
		l, err := s.toLease(ctx, s.rdb, o.rangeRow, c.req.then.ttl)
		if err != nil {
			c.req.then.tried = false
			continue
		}
		c.req.then.lease = &l
		s.known.put(o.rangeRow)
	}
}

// decideKnown decides a round against the ranges as this store last left
// them (knownRanges), when it knows every one and each Put then writes:
// putOptimistic's write checks that each range is still so, and hands back
// the Puts of one that is not. An answer that writes nothing (a lost
// lease, a duplicate, a refusal) would not be checked, so with any, or any
// range unknown, it returns nil writes and the caller reads the ranges.
func (s *Store) decideKnown(round []*call[putReq, batch.Result], ids []int64) ([]rangeRow, *putWrites) {
	rows, ok := s.known.get(ids)
	if !ok {
		return nil, nil
	}
	w := decideRound(round, slices.Clone(rows))
	for _, c := range round {
		if c.err != nil || c.res.Duplicate {
			return nil, nil
		}
	}
	return rows, w
}

// readRangesQuery reads a round's ranges without locking them;
// lockRangesQuery locks them in id order.
var (
	readRangesQuery = "SELECT " + rangeCols + " FROM ranges WHERE id = ANY(CAST(? AS BIGINT[]))"
	lockRangesQuery = readRangesQuery + " ORDER BY id {forupdate}"
)

// optimisticPutQuery is putOptimistic's write: u updates each range still
// as it was read; the batches, claim deletions and items follow only the
// ranges it matched, and so do the grants made to the Puts that asked
// (wanted, numbered anew: grantRanges), none of the round's ranges. It
// returns the granted ranges with the ordinal of the Put in want (n), then
// the ranges u matched (n = 0). Every list is an array, so the text is the
// same for any round (prepared once).
var optimisticPutQuery = `
	WITH v AS (
		SELECT * FROM unnest(CAST(? AS BIGINT[]), CAST(? AS BIGINT[]), CAST(? AS BIGINT[]), CAST(? AS TEXT[]),
			CAST(? AS BIGINT[]), CAST(? AS BIGINT[]), CAST(? AS TEXT[]))
			AS v(id, next_n, headers, state, old_next, old_token, old_state)),
	u AS (
		UPDATE ranges AS r SET next_n = v.next_n, headers = v.headers, state = v.state,
			node = CASE WHEN v.state = 'done' THEN NULL ELSE r.node END,
			expires_us = CASE WHEN v.state = 'done' THEN NULL ELSE r.expires_us END
		FROM v WHERE r.id = v.id AND r.next_n = v.old_next AND r.token = v.old_token AND r.state = v.old_state
		RETURNING r.id),
	b AS (
		INSERT INTO batches (range_id, node, from_n, to_n, headers, items, at_us)
		SELECT x.range_id, x.node, x.from_n, x.to_n, x.headers, x.items, ?
		FROM unnest(CAST(? AS BIGINT[]), CAST(? AS TEXT[]), CAST(? AS BIGINT[]), CAST(? AS BIGINT[]), CAST(? AS BIGINT[]), CAST(? AS BIGINT[]))
			AS x(range_id, node, from_n, to_n, headers, items)
		WHERE x.range_id IN (SELECT id FROM u)),
	d AS (
		DELETE FROM chunk_claims WHERE range_id = ANY(CAST(? AS BIGINT[])) AND range_id IN (SELECT id FROM u)),
	wanted AS (
		SELECT w.node, w.ttl_us, w.ord, row_number() OVER (ORDER BY w.ord) AS n
		FROM unnest(CAST(? AS TEXT[]), CAST(? AS BIGINT[]), CAST(? AS BIGINT[])) WITH ORDINALITY AS w(node, ttl_us, range_id, ord)
		WHERE w.range_id IN (SELECT id FROM u)),
	` + grantRanges(" AND id <> ALL(CAST(? AS BIGINT[]))") + `,
	i AS (
		INSERT INTO items (xid, group_id, range_id, from_n, to_n, key, value)
		SELECT {xid}, x.group_id, x.range_id, x.from_n, x.to_n, x.key,
			convert_from(substring(vals.b FROM CAST(x.value_at AS INTEGER) FOR CAST(x.value_len AS INTEGER)), 'UTF8')
		FROM unnest(CAST(? AS BIGINT[]), CAST(? AS BIGINT[]), CAST(? AS BIGINT[]), CAST(? AS BIGINT[]), CAST(? AS TEXT[]),
			CAST(? AS BIGINT[]), CAST(? AS BIGINT[])) AS x(group_id, range_id, from_n, to_n, key, value_at, value_len),
			(SELECT CAST(? AS BYTEA)) AS vals(b)
		WHERE x.range_id IN (SELECT id FROM u))
	SELECT * FROM granted
	UNION ALL SELECT id, 0, '', 0, 0, 0, FALSE, '', 0, 0, '', 0, NULL, 0, NULL, FALSE, 0 FROM u`

// knownRanges remembers the ranges this store leased, as it last wrote them
// (granted, or a batch stored), so that a round of Puts of ranges it knows
// needs no read (decideKnown). It is a guess, never trusted: the write
// checks each range's next, token and state. Entries go when a range is
// done, finished, released or reported corrupt, a check fails, or the map
// is full.
type knownRanges struct {
	mu   sync.Mutex
	rows map[int64]rangeRow
}

// maxKnown bounds knownRanges (about 250 bytes an entry); a full map is
// emptied. An entry no write removes (a lease that expired and went to
// another coordinator) stays until then.
const maxKnown = 10_000

func (h *knownRanges) get(ids []int64) ([]rangeRow, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	rows := make([]rangeRow, 0, len(ids))
	for _, id := range ids {
		r, ok := h.rows[id]
		if !ok || r.Repair {
			return nil, false
		}
		rows = append(rows, r)
	}
	return rows, true
}

func (h *knownRanges) put(r rangeRow) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.rows == nil || len(h.rows) >= maxKnown {
		h.rows = make(map[int64]rangeRow)
	}
	h.rows[r.ID] = r
}

func (h *knownRanges) forget(id int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.rows, id)
}
