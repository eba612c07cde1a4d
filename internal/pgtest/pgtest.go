// Package pgtest gives tests a PostgreSQL database: the one TEST_DATABASE_URL
// names, or a throwaway cluster started from the machine's own PostgreSQL
// binaries (initdb and pg_ctl, on PATH or under /usr/lib/postgresql/*/bin) on
// a free port in a temporary directory. Each test gets its own schema, so
// tests run in parallel.
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

	_ "github.com/lib/pq" // the "postgres" driver
	"go.uber.org/goleak"
)

var (
	once     sync.Once
	baseURL  string
	startErr error
	stop     func()
)

// Main runs the tests of a package, stops the throwaway cluster if one was
// started, checks that no goroutine leaked (goleak), and exits. Call it
// from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if stop != nil {
		stop()
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

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
	once.Do(func() { baseURL, stop, startErr = start() })
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
	db, err := sql.Open("postgres", baseURL)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE SCHEMA " + schema); err != nil {
		tb.Fatalf("pgtest: create schema: %v", err)
	}
	tb.Cleanup(func() {
		db, err := sql.Open("postgres", baseURL)
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

// start returns the base URL: TEST_DATABASE_URL, or a new cluster's.
func start() (string, func(), error) {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return u, nil, nil
	}
	bin, err := binDir()
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "edgeindex-pg-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	// initdb refuses to run as root: run the cluster as the postgres user.
	var runAs []string
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			cleanup()
			return "", nil, fmt.Errorf("running as root and no postgres user to run the cluster as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			cleanup()
			return "", nil, err
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
	if err := run("initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync", "--no-instructions"); err != nil {
		cleanup()
		return "", nil, err
	}
	port, err := freePort()
	if err != nil {
		cleanup()
		return "", nil, err
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=300", port, dir)
	if err := run("pg_ctl", "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		cleanup()
		return "", nil, fmt.Errorf("%w\n%s", err, log)
	}
	stop := func() {
		run("pg_ctl", "-D", data, "-m", "immediate", "-w", "stop")
		cleanup()
	}
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port), stop, nil
}

// binDir finds the directory holding initdb and pg_ctl.
func binDir() (string, error) {
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
