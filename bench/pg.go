package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// postgres is the database the benchmarks run on: TEST_DATABASE_URL, or a
// throwaway cluster started the way internal/pgtest starts one (initdb and
// pg_ctl from PATH or /usr/lib/postgresql/*/bin, on a free loopback port in a
// temporary directory, as the postgres user when run as root).
type postgres struct {
	base string // the server's URL
	stop func() // stops and removes a throwaway cluster; nil for TEST_DATABASE_URL
}

// startPostgres returns TEST_DATABASE_URL's server, or starts a cluster.
// The caller must call Close, even on error paths after it returns.
func startPostgres() (*postgres, error) {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return &postgres{base: u}, nil
	}
	bin, err := pgBinDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "edgeindex-bench-pg-")
	if err != nil {
		return nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	var runAs []string
	if os.Geteuid() == 0 { // initdb refuses to run as root
		u, err := user.Lookup("postgres")
		if err != nil {
			cleanup()
			return nil, fmt.Errorf("running as root and no postgres user to run the cluster as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			cleanup()
			return nil, err
		}
		runAs = []string{"runuser", "-u", "postgres", "--"}
	}
	run := func(name string, args ...string) error {
		argv := append(append(runAs[:len(runAs):len(runAs)], filepath.Join(bin, name)), args...)
		out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s: %w: %s", name, err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	data := filepath.Join(dir, "data")
	// --no-sync only skips initdb's own fsync of the new files; the server
	// runs with fsync and synchronous_commit on (their defaults, set below
	// too so no postgresql.conf can turn them off).
	if err := run("initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync", "--no-instructions"); err != nil {
		cleanup()
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		cleanup()
		return nil, err
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=400 -c fsync=on -c synchronous_commit=on", port, dir)
	if err := run("pg_ctl", "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		cleanup()
		return nil, fmt.Errorf("%w\n%s", err, log)
	}
	stop := func() {
		run("pg_ctl", "-D", data, "-m", "fast", "-w", "-t", "60", "stop")
		cleanup()
	}
	return &postgres{base: fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port), stop: stop}, nil
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
	c, err := pgx.Connect(ctx, p.base)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	_, err = c.Exec(ctx, sql)
	return err
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

func pgBinDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		return filepath.Dir(p), nil
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(found) == 0 {
		return "", errors.New("no initdb on PATH or under /usr/lib/postgresql/*/bin (apt-get install -y postgresql), and TEST_DATABASE_URL is not set")
	}
	version := func(initdb string) int {
		n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
		return n
	}
	sort.Slice(found, func(i, j int) bool { return version(found[i]) < version(found[j]) })
	return filepath.Dir(found[len(found)-1]), nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
