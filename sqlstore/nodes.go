package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/node"
)

// seenEvery bounds how often Authenticate writes a node's last-seen time.
const seenEvery = 5 * time.Second

// A node's token is checked in memory: every request of a node
// authenticates, and a read per request was a third of a lease cycle's
// statements, and waited behind whatever else held the pool. Authenticate
// reads the database once per token it does not know, and authLoop
// re-reads the tokens it knows every authFresh, in one statement, so no
// request waits for that read. RemoveNode forgets its node's tokens at
// once in its own process; another process sharing the database trusts a
// removed node's token until its next re-read (about authFresh), and the
// removal has fenced the node's leases already. When the re-reads fail,
// a token is trusted for authStale after the last that succeeded, and then
// read again on the request; a token no request used for authIdle is
// forgotten.
const (
	authFresh = time.Second
	authStale = 30 * time.Second
	authIdle  = time.Minute
)

// authEntry is a token Authenticate found, when it was last read (micros)
// and when last used.
type authEntry struct {
	row         nodeRow
	found, used int64
}

type nodeRow struct {
	Name     string `db:"name"`
	Created  int64  `db:"created_us"`
	LastSeen int64  `db:"last_seen_us"`
}

func (r nodeRow) node() node.Node {
	return node.Node{Name: r.Name, CreatedAt: time.UnixMicro(r.Created).UTC(), LastSeen: time.UnixMicro(r.LastSeen).UTC()}
}

// nowMicros is the clock in Go, for values stored rather than compared:
// the injected one, or clock.Real.
func (s *Store) nowMicros() int64 {
	if s.cfg.Clock != nil {
		return s.cfg.Clock.Now().UnixMicro()
	}
	return clock.Real.Now().UnixMicro()
}

// AddNode implements node.Store.
func (s *Store) AddNode(ctx context.Context, name string, tokenHash []byte) (node.Node, error) {
	if err := node.ValidName(name); err != nil {
		return node.Node{}, err
	}
	if len(tokenHash) == 0 {
		return node.Node{}, edgeindex.Invalidf("add node: a token hash is required")
	}
	now := s.nowMicros()
	var r nodeRow
	err := s.db.GetContext(ctx, &r, s.q(`INSERT INTO nodes (name, token_hash, created_us, last_seen_us) VALUES (?, ?, ?, ?)
		ON CONFLICT DO NOTHING RETURNING name, created_us, last_seen_us`), name, tokenHash, now, now)
	if errors.Is(err, sql.ErrNoRows) {
		return node.Node{}, fmt.Errorf("add node: %w: node %q exists", edgeindex.ErrConflict, name)
	}
	if err != nil {
		return node.Node{}, fmt.Errorf("add node: %w", err)
	}
	return r.node(), nil
}

// RemoveNode implements node.Store.
func (s *Store) RemoveNode(ctx context.Context, name string) error {
	defer s.forgetAuth(name) // after the commit, whatever the outcome
	return s.tx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, s.q("DELETE FROM nodes WHERE name = ?"), name)
		if err != nil {
			return fmt.Errorf("remove node: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("remove node %q: %w", name, edgeindex.ErrNotFound)
		}
		// Lanes before ranges, the order lane grants lock them in, so the
		// two never deadlock on PostgreSQL.
		if _, err := tx.ExecContext(ctx, s.q("UPDATE lanes SET node = NULL, expires_us = NULL WHERE node = ?"), name); err != nil {
			return fmt.Errorf("remove node: %w", err)
		}
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE ranges SET state = 'pending', node = NULL, expires_us = NULL
			WHERE node = ? AND state = 'leased'`), name); err != nil {
			return fmt.Errorf("remove node: %w", err)
		}
		return nil
	})
}

// maxAuth bounds the tokens Authenticate remembers.
const maxAuth = 10_000

// forgetAuth forgets the tokens of node name, and makes every
// Authenticate that read the database before now keep what it read to
// itself.
func (s *Store) forgetAuth(name string) {
	s.authMu.Lock()
	defer s.authMu.Unlock()
	s.authGen++
	delete(s.seen, name)
	for k, e := range s.auth {
		if e.row.Name == name {
			delete(s.auth, k)
		}
	}
}

// Authenticate implements node.Store. It notes the last-seen time at most
// every seenEvery, and a loop of the store's writes it (seen.go), so no
// request waits for that write.
func (s *Store) Authenticate(ctx context.Context, tokenHash []byte) (node.Node, error) {
	now := s.nowMicros()
	s.authMu.Lock()
	e, ok := s.auth[string(tokenHash)]
	if ok && now-e.found < authStale.Microseconds() {
		e.row.LastSeen = s.noteSeen(e.row, now)
		e.used = now
		s.auth[string(tokenHash)] = e
		s.authMu.Unlock()
		return e.row.node(), nil
	}
	gen := s.authGen
	s.authMu.Unlock()
	var r nodeRow
	err := s.rdb.GetContext(ctx, &r, s.q("SELECT name, created_us, last_seen_us FROM nodes WHERE token_hash = ?"), tokenHash)
	if errors.Is(err, sql.ErrNoRows) {
		return node.Node{}, fmt.Errorf("authenticate: %w: unknown token", edgeindex.ErrNotFound)
	}
	if err != nil {
		return node.Node{}, fmt.Errorf("authenticate: %w", err)
	}
	s.authMu.Lock()
	defer s.authMu.Unlock()
	if gen != s.authGen {
		return r.node(), nil // forgotten meanwhile (RemoveNode): neither kept nor marked seen
	}
	r.LastSeen = s.noteSeen(r, now)
	if len(s.auth) >= maxAuth {
		clear(s.auth)
	}
	s.auth[string(tokenHash)] = authEntry{row: r, found: now, used: now}
	return r.node(), nil
}

// authLoop re-reads the tokens Authenticate keeps every authFresh until
// ctx ends.
func (s *Store) authLoop(ctx context.Context) {
	t := time.NewTicker(authFresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.refreshAuth(ctx)
	}
}

// refreshAuth re-reads the nodes of the tokens Authenticate keeps: a
// token whose node is gone is forgotten, as is one unused for authIdle.
// A read that fails changes nothing (the tokens age toward authStale),
// and one that a forgetAuth overtook is dropped.
func (s *Store) refreshAuth(ctx context.Context) {
	now := s.nowMicros()
	s.authMu.Lock()
	gen := s.authGen
	hashes := make([]string, 0, len(s.auth))
	for h, e := range s.auth {
		if now-e.used >= authIdle.Microseconds() {
			delete(s.auth, h)
			continue
		}
		hashes = append(hashes, h)
	}
	s.authMu.Unlock()
	found := make(map[string]nodeRow, len(hashes))
	for part := range slices.Chunk(hashes, inChunk) {
		var rows []struct {
			Hash []byte `db:"token_hash"`
			nodeRow
		}
		args := make([]any, len(part))
		for i, h := range part {
			args[i] = []byte(h)
		}
		if err := s.rdb.SelectContext(ctx, &rows, s.bind("SELECT token_hash, name, created_us, last_seen_us FROM nodes WHERE token_hash IN ("+
			placeholders(len(part))+")"), args...); err != nil {
			return
		}
		for _, r := range rows {
			found[string(r.Hash)] = r.nodeRow
		}
	}
	s.authMu.Lock()
	defer s.authMu.Unlock()
	if gen != s.authGen {
		return
	}
	for _, h := range hashes {
		e, ok := s.auth[h]
		if !ok {
			continue
		}
		r, ok := found[h]
		if !ok {
			delete(s.auth, h)
			continue
		}
		r.LastSeen = max(r.LastSeen, e.row.LastSeen)
		s.auth[h] = authEntry{row: r, found: now, used: e.used}
	}
}

// Nodes implements node.Store.
func (s *Store) Nodes(ctx context.Context) ([]node.Node, error) {
	noted := s.notedSeen()
	var rows []nodeRow
	if err := s.rdb.SelectContext(ctx, &rows, "SELECT name, created_us, last_seen_us FROM nodes ORDER BY name"); err != nil {
		return nil, fmt.Errorf("nodes: %w", err)
	}
	out := make([]node.Node, len(rows))
	for i, r := range rows {
		r.LastSeen = max(r.LastSeen, noted[r.Name])
		out[i] = r.node()
	}
	return out, nil
}

// Node implements node.Store.
func (s *Store) Node(ctx context.Context, name string) (node.Node, error) {
	s.authMu.Lock()
	noted := s.seen[name] // before the read, as Nodes takes notedSeen
	s.authMu.Unlock()
	var r nodeRow
	err := s.rdb.GetContext(ctx, &r, s.q("SELECT name, created_us, last_seen_us FROM nodes WHERE name = ?"), name)
	if errors.Is(err, sql.ErrNoRows) {
		return node.Node{}, fmt.Errorf("node %q: %w", name, edgeindex.ErrNotFound)
	}
	if err != nil {
		return node.Node{}, fmt.Errorf("node: %w", err)
	}
	r.LastSeen = max(r.LastSeen, noted)
	return r.node(), nil
}
