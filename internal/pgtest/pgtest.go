// Package pgtest gives tests a PostgreSQL database: the one TEST_DATABASE_URL
// names, or a throwaway cluster started from the machine's own PostgreSQL
// binaries (initdb and pg_ctl, on PATH or under /usr/lib/postgresql/*/bin) on
// a free port in a temporary directory, stopped by testmain.Main. Each
// test gets its own schema, so tests run in parallel. Start, which URL
// uses, also serves programs that are not tests: the bench module starts
// its cluster with it.
//
// With EDGEINDEX_REQUIRE_POSTGRES=1 a test fails, rather than skips, when no
// PostgreSQL can be had: CI sets it, so the PostgreSQL half of a suite never
// skips silently.
package pgtest

import (
	"crypto/rand"
	"database/sql"
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
	"sync"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver

	"github.com/edgeindex/edgeindex/internal/testmain"
)

var (
	once     sync.Once
	baseURL  string
	startErr error
)

// Backend names a database for tests and makes a new, empty one.
type Backend struct {
	Name string
	URL  func(tb testing.TB) string
}

// Backends are every backend the stores run on: subtests named after them
// read .../sqlite/... and .../postgres/...
var Backends = []Backend{
	{"sqlite", func(tb testing.TB) string { return "sqlite://" + filepath.Join(tb.TempDir(), "edgeindex.db") }},
	{"postgres", URL},
}

// URL returns a connection URL whose search_path is a new, empty schema,
// dropped when the test ends. It skips the test when PostgreSQL cannot be
// had, or fails it under EDGEINDEX_REQUIRE_POSTGRES=1.
func URL(tb testing.TB) string {
	tb.Helper()
	once.Do(func() {
		var stop func()
		baseURL, stop, startErr = Start()
		if startErr == nil {
			testmain.AtExit(stop)
		}
	})
	if startErr != nil {
		if os.Getenv("EDGEINDEX_REQUIRE_POSTGRES") == "1" {
			tb.Fatalf("pgtest: PostgreSQL is required (EDGEINDEX_REQUIRE_POSTGRES=1): %v", startErr)
		}
		tb.Skipf("pgtest: no PostgreSQL: %v", startErr)
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		tb.Fatal(err)
	}
	schema := "t_" + hex.EncodeToString(b[:])
	db, err := sql.Open("pgx", baseURL)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE SCHEMA " + schema); err != nil {
		tb.Fatalf("pgtest: create schema: %v", err)
	}
	tb.Cleanup(func() {
		db, err := sql.Open("pgx", baseURL)
		if err != nil {
			return
		}
		defer db.Close()
		db.Exec("DROP SCHEMA " + schema + " CASCADE")
	})
	u, err := url.Parse(baseURL)
	if err != nil {
		tb.Fatal(err)
	}
	qs := u.Query()
	qs.Set("search_path", schema)
	u.RawQuery = qs.Encode()
	return u.String()
}

// Start returns the base URL of a PostgreSQL server and a function that
// stops it, for a program that is not a test (the bench) as much as for
// URL: TEST_DATABASE_URL's server, with a stop that does nothing, or a new
// throwaway cluster started from the machine's own binaries (BinDir), as
// the postgres user when run as root (initdb refuses root), on a free
// loopback port in a temporary directory that stop removes. Settings are
// server settings ("name=value", no spaces) passed after the defaults
// (listen_addresses=127.0.0.1, max_connections=300); a later one wins.
func Start(settings ...string) (string, func(), error) {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return u, func() {}, nil
	}
	bin, err := BinDir()
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "edgeindex-pg-")
	if err != nil {
		return "", nil, err
	}
	run, err := runner(bin, dir)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	port, err := initAndStart(run, dir, settings)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	stop := func() {
		run("pg_ctl", "-D", filepath.Join(dir, "data"), "-m", "immediate", "-w", "stop")
		os.RemoveAll(dir)
	}
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port), stop, nil
}

// runner returns a function that runs one of bin's programs, as the
// postgres user when this process is root; dir is given to that user.
func runner(bin, dir string) (func(name string, args ...string) error, error) {
	var runAs []string
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root and no postgres user to run the cluster as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
		runAs = []string{"runuser", "-u", "postgres", "--"}
	}
	return func(name string, args ...string) error {
		argv := append(append(runAs[:len(runAs):len(runAs)], filepath.Join(bin, name)), args...)
		out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s: %w: %s", name, err, strings.TrimSpace(string(out)))
		}
		return nil
	}, nil
}

// initAndStart creates a cluster in dir/data and starts it on a free port,
// which it returns.
func initAndStart(run func(string, ...string) error, dir string, settings []string) (int, error) {
	data := filepath.Join(dir, "data")
	// --no-sync only skips initdb's own fsync of the new files; the server
	// runs with fsync on (its default) unless settings say otherwise.
	if err := run("initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync", "--no-instructions"); err != nil {
		return 0, err
	}
	port, err := freePort()
	if err != nil {
		return 0, err
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=300", port, dir)
	for _, s := range settings {
		opts += " -c " + s
	}
	if err := run("pg_ctl", "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		return 0, fmt.Errorf("%w\n%s", err, log)
	}
	return port, nil
}

// BinDir finds the directory holding initdb, pg_ctl and postgres: initdb's
// on PATH, or the newest /usr/lib/postgresql/*/bin.
func BinDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		return filepath.Dir(p), nil
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(found) == 0 {
		return "", errors.New("no initdb on PATH or under /usr/lib/postgresql/*/bin (apt-get install -y postgresql)")
	}
	sort.Slice(found, func(i, j int) bool { return version(found[i]) < version(found[j]) })
	return filepath.Dir(found[len(found)-1]), nil
}

func version(initdb string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return n
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
