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
