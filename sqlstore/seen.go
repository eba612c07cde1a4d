package sqlstore

import (
	"context"
	"maps"
	"time"

	"github.com/jmoiron/sqlx"
)

// A node's last-seen time is written behind its requests: Authenticate
// notes it (markSeen) and a loop of the store's (seenLoop) writes every
// time noted meanwhile in one statement. Written on the request, it cost
// one request in about twenty a commit of its own: under 1,000 workers,
// 200 commits a second, each a wait in some request's answer. This
// process's Node and Nodes show a noted time at once (notedSeen); other
// processes sharing the database see it once written, within about
// seenPause.

// noteSeen returns r's node's last-seen time with a request at now
// (micros): the later of the row's and the one noted, or now, noted for
// seenLoop, once that is seenEvery old. The caller holds s.authMu.
func (s *Store) noteSeen(r nodeRow, now int64) int64 {
	last := max(r.LastSeen, s.seen[r.Name])
	if now-last < seenEvery.Microseconds() {
		return last
	}
	s.markSeen(r.Name, now)
	return now
}

// markSeen notes that node name was seen at now (micros), for seenLoop to
// write. The caller holds s.authMu.
func (s *Store) markSeen(name string, now int64) {
	if s.seen == nil {
		s.seen = make(map[string]int64)
	}
	s.seen[name] = max(s.seen[name], now)
	select {
	case s.seenKick <- struct{}{}:
	default: // a write is due already; it takes this one too
	}
}

// notedSeen returns the last-seen times this process has noted and not
// yet written, for Node and Nodes to show with the rows they read. It is
// taken before the rows are read: writeSeen forgets a time only once it is
// written, so a time forgotten between the two is in the rows, where one
// taken after the read could miss both (TestConformance/sqlite/Nodes did).
func (s *Store) notedSeen() map[string]int64 {
	s.authMu.Lock()
	defer s.authMu.Unlock()
	return maps.Clone(s.seen)
}

// seenPause is the least time between two writes of seenLoop: the times
// noted meanwhile go in the next, as one statement.
const seenPause = time.Second

// seenLoop writes the noted last-seen times whenever there are some, at
// most once every seenPause, until ctx ends; then it writes what is left,
// for at most a few seconds.
func (s *Store) seenLoop(ctx context.Context) {
	defer func() {
		last, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.writeSeen(last)
	}()
	for {
		select {
		case <-s.seenKick:
		case <-ctx.Done():
			return
		}
		s.writeSeen(ctx)
		select {
		case <-time.After(seenPause):
		case <-ctx.Done():
			return
		}
	}
}

// writeSeen writes the noted last-seen times in one statement (one
// transaction on SQLite), never moving one back. They stay noted until
// written, so that notedSeen shows them meanwhile; a failed write leaves
// them for the next.
func (s *Store) writeSeen(ctx context.Context) {
	s.authMu.Lock()
	names, times := make([]string, 0, len(s.seen)), make([]int64, 0, len(s.seen))
	for name, at := range s.seen {
		names, times = append(names, name), append(times, at)
	}
	s.authMu.Unlock()
	if len(names) == 0 {
		return
	}
	var err error
	if s.d.takesArrays() {
		_, err = s.db.ExecContext(ctx, `UPDATE nodes SET last_seen_us = v.at
			FROM unnest(CAST($1 AS TEXT[]), CAST($2 AS BIGINT[])) AS v(name, at)
			WHERE nodes.name = v.name AND nodes.last_seen_us < v.at`, names, times)
	} else {
		err = s.tx(ctx, func(tx *sqlx.Tx) error {
			for i, name := range names {
				if _, err := tx.ExecContext(ctx, "UPDATE nodes SET last_seen_us = ? WHERE name = ? AND last_seen_us < ?", times[i], name, times[i]); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err != nil {
		return // written with the next ones (no kick of its own: no loop on a database that is down)
	}
	s.authMu.Lock()
	for i, name := range names {
		if s.seen[name] == times[i] { // not noted again meanwhile
			delete(s.seen, name)
		}
	}
	s.authMu.Unlock()
}
