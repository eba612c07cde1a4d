package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/internal/pgtest"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/nntp/nntptest"
	"github.com/edgeindex/edgeindex/spool"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// The operator's commands (issue 20): the usage made from the flag sets,
// no database made by an admin command, group rm, --plan none, the group
// looked up on its provider, one prefix on errors.

// runExit runs the program's entry point as main does and returns its
// exit code, stdout and stderr.
func runExit(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runMain(t.Context(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// -h lists every command on one line; COMMAND -h prints that command's
// usage and every flag of its flag set, and no other command's.
func TestUsageFromFlagSets(t *testing.T) {
	t.Parallel()
	code, out, _ := runExit(t, "-h")
	require.Equal(t, 0, code)
	for _, c := range commands() {
		n := 0
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "  "+strings.TrimSpace(c.name+" "+c.args)+"  ") {
				n++
			}
		}
		require.Equal(t, 1, n, "%s: one line in the list:\n%s", c.name, out)

		code, help, _ := runExit(t, append(strings.Fields(c.name), "-h")...)
		require.Equal(t, 0, code, c.name)
		require.True(t, strings.HasPrefix(help, "Usage: coordinator "+c.name), "%s:\n%s", c.name, help)
		require.Equal(t, 1, strings.Count(help, "Usage: "), "%s: its usage alone", c.name)
		fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
		c.setup(NewMain(nil, nil), fs)
		fs.VisitAll(func(f *flag.Flag) {
			require.Regexp(t, `(?m)^  -`+f.Name+`( |$)`, help, "%s -h names --%s", c.name, f.Name)
		})
	}
	_, help, _ := runExit(t, "serve", "-h")
	for _, f := range []string{"-storage", "-claim-ttl", "-releases", "-source", "-newznab"} {
		require.Regexp(t, `(?m)^  `+f+`( |$)`, help, "serve's usage lists every flag it takes")
	}
	_, help, _ = runExit(t, "group", "plan", "--data", "x", "-h")
	require.NotContains(t, help, "-ordered", "group add's flags are not group plan's")
	require.NotContains(t, help, "Usage: coordinator group add")
	code, list, _ := runExit(t, "group", "-h")
	require.Equal(t, 0, code)
	require.Contains(t, list, "group rm NAME")
	require.NotContains(t, list, "node add")
	code, _, stderr := runExit(t, "group")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "add, plan, rm")
}

// An admin command that finds no database fails, says where it looked
// and how to point it elsewhere, and makes nothing; init, serve and demo
// make one.
func TestNoDatabaseMadeByAdminCommands(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	missing := filepath.Join(root, "missing")
	foreign := filepath.Join(root, "home")
	require.NoError(t, os.Mkdir(foreign, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("not edgeindex's\n"), 0o644))
	lost := filepath.Join(root, "lost") // a coordinator ran here, and the database went
	require.NoError(t, os.MkdirAll(filepath.Join(lost, "spool"), 0o700))
	for _, name := range []string{"admin.token", "coordinator.id"} {
		require.NoError(t, os.WriteFile(filepath.Join(lost, name), []byte("x\n"), 0o600))
	}
	for _, args := range [][]string{
		{"group", "add", "alt.binaries.test"}, {"group", "rm", "g"}, {"group", "plan", "g", "--plan", "none"},
		{"node", "add", "edge-1"}, {"node", "list"}, {"status"}, {"range", "add", "g", "1", "100"},
		{"range", "retry", "g", "--failed"}, {"snapshot", "reset", "g"}, {"releases"}, {"releases", "build", "--once"},
		{"nzb", "1"}, {"user", "add", "u"}, {"user", "list"},
	} {
		for _, data := range []string{missing, foreign, lost} {
			code, _, stderr := runExit(t, append(args, "--data", data)...)
			require.Equal(t, 1, code, "%q in %s: %s", args, data, stderr)
			for _, want := range []string{filepath.Join(data, "edgeindex.db"), "--data", "EDGEINDEX_DATA", "--db", "coordinator init"} {
				require.Contains(t, stderr, want, "%q", args)
			}
			require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %s", stderr)
		}
		_, err := run(t, missing, args...)
		require.ErrorIs(t, err, edgeindex.ErrNotFound)
	}
	_, err := os.Stat(missing)
	require.ErrorIs(t, err, os.ErrNotExist, "nothing was made")
	entries, err := os.ReadDir(foreign)
	require.NoError(t, err)
	require.Len(t, entries, 1, "nothing was made beside the foreign file")
	_, err = os.Stat(filepath.Join(lost, "edgeindex.db"))
	require.ErrorIs(t, err, os.ErrNotExist, "no new database where one was lost")
	code, _, stderr := runExit(t, "status", "--db", "sqlite://"+filepath.Join(missing, "x.db"))
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "from --db")
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, dead.Close())
	code, _, stderr = runExit(t, "status", "--db", "postgres://u:secret@"+dead.Addr().String()+"/nope?sslmode=disable")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, dead.Addr().String(), "where it looked")
	require.Contains(t, stderr, "from --db")
	require.NotContains(t, stderr, "secret")

	out, err := run(t, missing, "init")
	require.NoError(t, err)
	require.Contains(t, out, "database ready")
	require.Equal(t, os.FileMode(0o700), mode(t, missing))
	_, err = run(t, missing, "group", "add", "alt.binaries.test")
	require.NoError(t, err)
	out, err = run(t, missing, "init")
	require.NoError(t, err, "init keeps a database that is there")
	require.Contains(t, out, "database ready")
	out, err = run(t, missing, "status")
	require.NoError(t, err)
	require.Contains(t, out, "PENDING")
}

// EDGEINDEX_DATA names the data directory when --data is not given, and
// --data wins over it.
func TestNoDatabaseNamesEnvironment(t *testing.T) {
	data := t.TempDir()
	_, err := run(t, data, "init")
	require.NoError(t, err)
	_, err = run(t, data, "group", "add", "g")
	require.NoError(t, err)
	t.Setenv("EDGEINDEX_DATA", data)
	var out bytes.Buffer
	require.NoError(t, NewMain(&out, &out).Run(t.Context(), []string{"status"}))
	require.Contains(t, out.String(), "PENDING", "the database EDGEINDEX_DATA names")
	missing := filepath.Join(t.TempDir(), "missing")
	t.Setenv("EDGEINDEX_DATA", missing)
	code, _, stderr := runExit(t, "status")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "in EDGEINDEX_DATA="+missing)
	code, _, stderr = runExit(t, "status", "--data", data)
	require.Equal(t, 0, code, stderr)
}

// group rm removes a mistyped group, refusing while it is leased or has
// results unless forced; --plan none stops planning a group and keeps it.
func TestGroupRm(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db string) {
		data := t.TempDir()
		cli := func(args ...string) (string, error) { return run(t, data, append(args, "--db", db)...) }
		_, err := cli("group", "add", "alt.binaries.tset", "--range-size", "100", "--plan", "tail")
		require.NoError(t, err)
		_, err = cli("range", "add", "alt.binaries.tset", "1", "300")
		require.NoError(t, err)

		out, err := cli("group", "plan", "alt.binaries.tset", "--plan", "none")
		require.NoError(t, err)
		require.Contains(t, out, "plan removed")
		out, err = cli("status", "--json")
		require.NoError(t, err)
		require.Contains(t, out, `"plans": []`)
		require.Contains(t, out, "alt.binaries.tset", "the group and its ranges stay")
		_, err = cli("group", "plan", "alt.binaries.tset", "--plan", "none")
		require.ErrorIs(t, err, edgeindex.ErrNotFound, "no plan left")
		_, err = cli("group", "plan", "alt.binaries.tset", "--plan", "none", "--reset")
		require.ErrorIs(t, err, errUsage)

		_, err = cli("group", "add", "alt.binaries.test", "--provider", "eweka")
		require.NoError(t, err, "the group as meant")
		out, err = cli("group", "rm", "alt.binaries.test", "--provider", "eweka")
		require.NoError(t, err, "an empty group goes without --force")
		require.Contains(t, out, "alt.binaries.test@eweka removed")

		st, err := sqlstore.Open(t.Context(), db, sqlstore.Config{})
		require.NoError(t, err)
		defer st.Close()
		_, err = st.AddNode(t.Context(), "edge-1", []byte("hash-of-a-token-of-32-bytes....."))
		require.NoError(t, err)
		l, err := st.Grant(t.Context(), "edge-1", time.Minute)
		require.NoError(t, err)
		sp, err := spool.Open(filepath.Join(data, "spool"), spool.Config{})
		require.NoError(t, err)
		span := lease.Span{From: l.Range.Start, To: l.Range.Start + 9}
		require.NoError(t, sp.Put(l.Range.ID, span, []byte("a chunk")))
		require.NoError(t, sp.Close())
		_, err = cli("group", "rm", "alt.binaries.tset")
		require.ErrorIs(t, err, edgeindex.ErrConflict, "a range is leased")
		if st.Backend() == "sqlite" {
			_, err = cli("group", "rm", "alt.binaries.tset", "--force")
			require.ErrorIs(t, err, sqlstore.ErrRangesKept, "SQLite would give its range ids to new ranges")
			require.NotContains(t, err.Error(), "--force")
			out, err = cli("status")
			require.NoError(t, err)
			require.Contains(t, out, "alt.binaries.tset", "nothing was removed")
			return
		}
		require.ErrorContains(t, err, "--force")
		out, err = cli("group", "rm", "alt.binaries.tset", "--force")
		require.NoError(t, err)
		require.Contains(t, out, "3 ranges")
		sp, err = spool.Open(filepath.Join(data, "spool"), spool.Config{})
		require.NoError(t, err)
		require.False(t, sp.Has(l.Range.ID, span), "the removed range's chunks are dropped")
		require.NoError(t, sp.Close())
		out, err = cli("status")
		require.NoError(t, err)
		require.NotContains(t, out, "alt.binaries.tset")
		_, err = cli("group", "rm", "alt.binaries.tset")
		require.ErrorIs(t, err, edgeindex.ErrNotFound)

	})
}

// group add and group plan with --plan and an NNTP --source look the
// group up on its provider: one it does not carry is refused, naming the
// group and the provider, and nothing is written. Without --source the
// check is skipped.
func TestGroupAddChecksProvider(t *testing.T) {
	t.Parallel()
	srv, err := nntptest.New(nntptest.Config{Groups: []nntptest.Group{{Name: "alt.test", Lines: nntptest.Lines("alt.test", 1, 100)}}})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	data := t.TempDir()

	_, err = run(t, data, "group", "add", "alt.tset", "--plan", "tail", "--source", srv.URL())
	require.ErrorIs(t, err, edgeindex.ErrNotFound)
	require.ErrorContains(t, err, `"alt.tset"`)
	require.ErrorContains(t, err, "default provider")
	require.ErrorContains(t, err, "411")
	_, err = run(t, data, "group", "add", "alt.tset", "--provider", "news", "--plan", "tail", "--source", "news="+srv.URL())
	require.ErrorIs(t, err, edgeindex.ErrNotFound)
	require.ErrorContains(t, err, `provider "news"`)
	_, err = run(t, data, "group", "add", "alt.tset", "--provider", "other", "--plan", "tail", "--source", "news="+srv.URL())
	require.ErrorIs(t, err, errUsage, "no --source names the group's provider")
	out, err := run(t, data, "status", "--json")
	require.NoError(t, err)
	require.NotContains(t, out, "alt.tset", "nothing was written")

	_, err = run(t, data, "group", "add", "alt.test", "--plan", "tail", "--source", srv.URL())
	require.NoError(t, err)
	_, err = run(t, data, "group", "add", "alt.test", "--provider", "news", "--plan", "tail", "--source", "news="+srv.URL())
	require.NoError(t, err)
	_, err = run(t, data, "group", "add", "alt.unchecked", "--plan", "tail")
	require.NoError(t, err, "no --source: no check")
	_, err = run(t, data, "group", "add", "alt.synthetic", "--plan", "tail", "--source", "synthetic")
	require.NoError(t, err, "the synthetic source carries every group")

	_, err = run(t, data, "group", "add", "alt.later")
	require.NoError(t, err, "no --plan: no check")
	_, err = run(t, data, "group", "plan", "alt.later", "--plan", "tail,history", "--source", srv.URL())
	require.ErrorIs(t, err, edgeindex.ErrNotFound)
	require.ErrorContains(t, err, `"alt.later"`)
	out, err = run(t, data, "status", "--json")
	require.NoError(t, err)
	require.NotContains(t, out, `"group": "alt.later"`, "no plan was written")
}

// A busy port's error reads "coordinator: listen ..." once, not twice.
func TestErrorPrefixOnce(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	code, _, stderr := runExit(t, "serve", "--addr", l.Addr().String(), "--data", t.TempDir())
	require.Equal(t, 1, code)
	last := strings.Split(strings.TrimSpace(stderr), "\n")
	line := last[len(last)-1]
	require.True(t, strings.HasPrefix(line, "coordinator: "), line)
	require.Contains(t, line, "listen")
	require.Equal(t, 1, strings.Count(line, "coordinator:"), line)
	require.Equal(t, "coordinator: x", errorLine(errors.New("x")))
}

// --source's error names both schemes.
func TestSourceErrorNamesBothSchemes(t *testing.T) {
	t.Parallel()
	m := NewMain(nil, nil)
	m.Sources = sourceFlags{"ftp://x"}
	_, err := m.sources(context.Background(), nil)
	require.ErrorIs(t, err, errUsage)
	require.ErrorContains(t, err, "nntp://[user:pass@]host:port")
	require.ErrorContains(t, err, "nntps://[user:pass@]host:port")
}

// docs/operating.md lists the commands as -h does.
func TestOperatingDocListsCommands(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "operating.md"))
	require.NoError(t, err)
	_, list, _ := runExit(t, "-h")
	_, commandList, _ := strings.Cut(list, "Commands:\n")
	commandList, _, _ = strings.Cut(commandList, "\n\n")
	require.Contains(t, string(doc), commandList+"\n", "docs/operating.md's list is coordinator -h's")
}

// init on PostgreSQL makes the tables of a database the server has, and
// the admin commands find it.
func TestInitPostgres(t *testing.T) {
	t.Parallel()
	db := pgtest.URL(t)
	data := filepath.Join(t.TempDir(), "unused")
	out, err := run(t, data, "init", "--db", db)
	require.NoError(t, err)
	require.Contains(t, out, "database ready: postgres")
	require.NotContains(t, out, "data directory")
	_, err = run(t, data, "group", "add", "g", "--db", db)
	require.NoError(t, err)
	_, err = os.Stat(data)
	require.ErrorIs(t, err, os.ErrNotExist, "PostgreSQL's init makes no data directory")
}

// An admin command pointed at a database of something else (tables, none
// of them edgeindex's) fails in one line, says how to point elsewhere, and
// adds no table; init puts edgeindex's tables beside, and then the
// commands find them.
func TestAdminCommandsRefuseAForeignDatabase(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db string) {
		data := t.TempDir()
		driver, dsn := "pgx", db
		if path, ok := strings.CutPrefix(db, "sqlite://"); ok {
			driver, dsn = "sqlite", "file:"+path
		}
		raw, err := sqlx.Open(driver, dsn)
		require.NoError(t, err)
		defer raw.Close()
		_, err = raw.ExecContext(t.Context(), "CREATE TABLE invoices (id INTEGER PRIMARY KEY)")
		require.NoError(t, err)
		count := "SELECT COUNT(*) FROM pg_tables WHERE schemaname = current_schema()"
		if driver == "sqlite" {
			count = "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'"
		}
		for _, args := range [][]string{{"status"}, {"group", "add", "alt.binaries.test"}, {"node", "list"}} {
			code, _, stderr := runExit(t, append(args, "--db", db, "--data", data)...)
			require.Equal(t, 1, code, "%q: %s", args, stderr)
			for _, want := range []string{"none of them edgeindex's", "from --db", "coordinator init"} {
				require.Contains(t, stderr, want, "%q", args)
			}
			require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %s", stderr)
			var n int
			require.NoError(t, raw.GetContext(t.Context(), &n, count))
			require.Equal(t, 1, n, "%q added no table", args)
		}
		_, err = run(t, data, "init", "--db", db)
		require.NoError(t, err)
		_, err = run(t, data, "group", "add", "alt.binaries.test", "--db", db)
		require.NoError(t, err)
	})
}

// status shows the planner's last failure of a group beside the plans,
// and in --json, until it is cleared.
func TestStatusShowsPlanErrors(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db string) {
		data := t.TempDir()
		cli := func(args ...string) (string, error) { return run(t, data, append(args, "--db", db)...) }
		_, err := cli("group", "add", "alt.binaries.tvv", "--plan", "tail")
		require.NoError(t, err)
		st, err := sqlstore.Open(t.Context(), db, sqlstore.Config{})
		require.NoError(t, err)
		defer st.Close()
		g, err := st.Group(t.Context(), "alt.binaries.tvv")
		require.NoError(t, err)
		at := time.Date(2026, 12, 1, 17, 0, 0, 0, time.UTC)
		require.NoError(t, st.SetPlanError(t.Context(), g.ID, "GROUP alt.binaries.tvv: 411 No such group", at))

		out, err := cli("status")
		require.NoError(t, err)
		require.Contains(t, out, "not yet")
		require.Contains(t, out, "Planner errors")
		require.Regexp(t, `alt\.binaries\.tvv\s+2026-12-01T17:00:00Z\s+GROUP alt\.binaries\.tvv: 411 No such group`, out)
		out, err = cli("status", "--json")
		require.NoError(t, err)
		require.Contains(t, out, `"message": "GROUP alt.binaries.tvv: 411 No such group"`)

		require.NoError(t, st.SetPlanError(t.Context(), g.ID, "", at))
		out, err = cli("status")
		require.NoError(t, err)
		require.NotContains(t, out, "Planner errors")
		out, err = cli("status", "--json")
		require.NoError(t, err)
		require.Contains(t, out, `"planErrors": []`)
	})
}

// An error that quotes a provider's text is printed on one line with
// nothing a terminal acts on: no escape, no bidi override, no newline.
func TestErrorLineIsInert(t *testing.T) {
	t.Parallel()
	line := errorLine(errors.New("GROUP g: 502 \x1b]0;pwned\x07 access \x1b[2Jdenied\u202e\u2028\r\nnext"))
	require.True(t, strings.HasPrefix(line, "coordinator: GROUP g: 502 "), line)
	for _, bad := range []string{"\x1b", "\x07", "\u202e", "\u2028", "\r", "\n"} {
		require.NotContains(t, line, bad)
	}
}
