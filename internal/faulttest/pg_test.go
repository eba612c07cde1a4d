package faulttest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver

	"github.com/edgeindex/edgeindex/internal/pgtest"
)

// pgCluster is a throwaway PostgreSQL cluster of the test's own, so that
// the test can restart it. Like internal/pgtest it uses the machine's
// initdb and postgres, and runs them as the postgres user when the test
// runs as root (initdb refuses root). The postmaster is a direct child of
// the test (no pg_ctl daemon), so it dies with the test.
type pgCluster struct {
	t    *testing.T
	bin  string
	dir  string
	data string
	port int
	cred *syscall.Credential
	pm   *proc
}

// newPGCluster creates and starts a cluster, or skips the test when there is
// no PostgreSQL (fails under EDGEINDEX_REQUIRE_POSTGRES=1).
func newPGCluster(t *testing.T) *pgCluster {
	t.Helper()
	noPG := func(err error) {
		t.Helper()
		if os.Getenv("EDGEINDEX_REQUIRE_POSTGRES") == "1" {
			t.Fatalf("PostgreSQL is required (EDGEINDEX_REQUIRE_POSTGRES=1): %v", err)
		}
		t.Skipf("no PostgreSQL: %v", err)
	}
	bin, err := pgtest.BinDir()
	if err != nil {
		noPG(err)
	}
	// Not t.TempDir: the postgres user must be able to reach it.
	dir, err := os.MkdirTemp("", "edgeindex-faulttest-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	c := &pgCluster{t: t, bin: bin, dir: dir, data: filepath.Join(dir, "data"), port: freePort(t)}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			noPG(fmt.Errorf("running as root and no postgres user to run the cluster as: %w", err))
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", c.data, "-U", "postgres", "-A", "trust", "-E", "UTF8",
		"--no-sync", "--no-instructions")
	initdb.Dir = dir
	initdb.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: c.cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		noPG(fmt.Errorf("initdb: %w: %s", err, strings.TrimSpace(string(out))))
	}
	c.start()
	return c
}

// URL is the cluster's connection URL.
func (c *pgCluster) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

func (c *pgCluster) logPath() string { return filepath.Join(c.dir, "log") }

// start starts the postmaster and waits until it accepts connections.
func (c *pgCluster) start() {
	c.t.Helper()
	c.pm = startProc(c.t, "postgres", c.logPath(), nil, c.cred, c.dir, filepath.Join(c.bin, "postgres"),
		"-D", c.data, "-p", strconv.Itoa(c.port), "-k", c.dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200")
	pm := c.pm
	c.t.Cleanup(func() { // an immediate shutdown, before startProc's SIGKILL
		if pm.signal(syscall.SIGQUIT) == nil {
			pm.wait(10 * time.Second)
		}
	})
	if err := c.waitReady(60 * time.Second); err != nil {
		c.t.Fatalf("postgres did not start: %v\n%s", err, tail(c.logPath(), 30))
	}
}

// restart is pg_ctl restart -m fast: a fast shutdown (SIGINT: open
// sessions are ended, a shutdown checkpoint is written), then a start.
func (c *pgCluster) restart() time.Duration {
	c.t.Helper()
	began := time.Now()
	if err := c.pm.signal(syscall.SIGINT); err != nil {
		c.t.Fatalf("postgres: %v", err)
	}
	if !c.pm.wait(60 * time.Second) {
		c.t.Fatalf("postgres did not shut down in 60 s\n%s", tail(c.logPath(), 30))
	}
	c.start()
	return time.Since(began)
}

func (c *pgCluster) waitReady(d time.Duration) error {
	db, err := sql.Open("pgx", c.URL())
	if err != nil {
		return err
	}
	defer db.Close()
	deadline := time.Now().Add(d)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err = db.PingContext(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if c.pm.exited() {
			return fmt.Errorf("postgres exited: %v", c.pm.err)
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}
