package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/edgeindex/edgeindex/internal/pgtest"
)

// postgres is the database the benchmarks run on: TEST_DATABASE_URL, or a
// throwaway cluster internal/pgtest starts (initdb and pg_ctl from PATH or
// /usr/lib/postgresql/*/bin, on a free loopback port in a temporary
// directory, as the postgres user when run as root).
type postgres struct {
	base string // the server's URL
	stop func() // stops and removes a throwaway cluster
}

// startPostgres returns TEST_DATABASE_URL's server, or starts a cluster
// with room for the load runs' connections, fsync and synchronous_commit
// on (their defaults, set so that no postgresql.conf can turn them off),
// and pg_stat_statements loaded when statements is set.
// The caller must call Close, even on error paths after it returns.
func startPostgres(statements bool) (*postgres, error) {
	settings := []string{"max_connections=400", "fsync=on", "synchronous_commit=on"}
	if statements {
		settings = append(settings, "shared_preload_libraries=pg_stat_statements", "pg_stat_statements.track=all")
	}
	base, stop, err := pgtest.Start(settings...)
	if err != nil {
		return nil, err
	}
	return &postgres{base: base, stop: stop}, nil
}

// Close stops and removes a throwaway cluster. It is safe to call twice.
func (p *postgres) Close() {
	if p != nil && p.stop != nil {
		p.stop()
		p.stop = nil
	}
}

// schema creates a new, empty schema and returns a URL whose search_path is
// it, and a function that drops it.
func (p *postgres) schema(ctx context.Context, prefix string) (string, func(), error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", nil, err
	}
	name := prefix + "_" + hex.EncodeToString(b[:])
	if err := p.exec(ctx, "CREATE SCHEMA "+name); err != nil {
		return "", nil, fmt.Errorf("create schema: %w", err)
	}
	drop := func() { p.exec(context.Background(), "DROP SCHEMA "+name+" CASCADE") }
	u, err := url.Parse(p.base)
	if err != nil {
		drop()
		return "", nil, err
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return u.String(), drop, nil
}

// exec runs one statement on a connection of its own.
func (p *postgres) exec(ctx context.Context, sql string) error {
	return execOn(ctx, p.base, sql)
}

// execOn runs the statements sqls, in order, on a connection of its own
// to dbURL, and stops at the first that fails.
func execOn(ctx context.Context, dbURL string, sqls ...string) error {
	c, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	for _, q := range sqls {
		if _, err := c.Exec(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// describe returns the server's version and its durability settings.
func (p *postgres) describe(ctx context.Context) (string, error) {
	c, err := pgx.Connect(ctx, p.base)
	if err != nil {
		return "", err
	}
	defer c.Close(context.Background())
	var version, fsync, sync, shared string
	err = c.QueryRow(ctx, `SELECT current_setting('server_version'), current_setting('fsync'),
		current_setting('synchronous_commit'), current_setting('shared_buffers')`).Scan(&version, &fsync, &sync, &shared)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("PostgreSQL %s, fsync=%s, synchronous_commit=%s, shared_buffers=%s", version, fsync, sync, shared), nil
}

// quiesce asks for a checkpoint, so that a phase does not pay for the last
// one's writes; it needs superuser rights, and is skipped without them.
func (p *postgres) quiesce(ctx context.Context) {
	p.exec(ctx, "CHECKPOINT")
}

// openPool opens a pool of at most maxConns connections to dbURL.
func openPool(ctx context.Context, dbURL string, maxConns int) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = int32(maxConns)
	return pgxpool.NewWithConfig(ctx, cfg)
}

// walMeter measures the WAL the server writes between its start and its
// per call: the bytes from pg_current_wal_insert_lsn, cluster-wide (what a
// statement writes for its rows, their index entries and its commit).
type walMeter struct {
	url   string
	start string
}

// startWAL reads the server's WAL insert position now.
func startWAL(ctx context.Context, dbURL string) (*walMeter, error) {
	m := &walMeter{url: dbURL}
	return m, m.lsn(ctx, &m.start)
}

func (m *walMeter) lsn(ctx context.Context, dst *string) error {
	c, err := pgx.Connect(ctx, m.url)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	return c.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(dst)
}

// per returns the WAL bytes written since startWAL, per one of n, as a
// detail: "WAL 1234 B/cycle".
func (m *walMeter) per(ctx context.Context, n int64, unit string) (string, error) {
	var end string
	if err := m.lsn(ctx, &end); err != nil {
		return "", err
	}
	c, err := pgx.Connect(ctx, m.url)
	if err != nil {
		return "", err
	}
	defer c.Close(context.Background())
	var bytes float64
	if err := c.QueryRow(ctx, "SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::float8", end, m.start).Scan(&bytes); err != nil {
		return "", err
	}
	return fmt.Sprintf("WAL %.0f B/%s", bytes/float64(n), unit), nil
}
