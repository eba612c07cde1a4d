package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/blobstore"
	"github.com/edgeindex/edgeindex/coordinator"
	"github.com/edgeindex/edgeindex/corpus"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/internal/redact"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/node"
	"github.com/edgeindex/edgeindex/prefetch"
	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/spool"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// errUsage marks a command line that is wrong: exit code 2.
var errUsage = errors.New("usage")

func usagef(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

func exitCode(err error) int {
	if errors.Is(err, errUsage) {
		return 2
	}
	return 1
}

// Main is the program: its flags, its state, and what it opened.
type Main struct {
	Stdout, Stderr io.Writer

	// Options shared by the commands.
	DB   string
	Data string
	// Sources are serve's --source flags: URL for the default provider,
	// NAME=URL for a named one; none is the synthetic source.
	Sources sourceFlags
	Addr    string
	TTL     time.Duration
	// NNTPConns is an NNTP account's connections in all, the budget the
	// coordinators sharing the database share, for each source URL
	// without a conns parameter (a URL's conns wins); 0 leaves those to
	// the nntp package's default.
	NNTPConns int
	// Poll is how often the provider's watermarks are read to plan ranges.
	Poll time.Duration
	// Store tunes the database: repair tries and delay, from serve's flags.
	Store sqlstore.Config
	// ID is this coordinator's identity as the owner of chunk claims
	// (serve --id). Empty: the one kept in <data>/coordinator.id, made on
	// the first start.
	ID string
	// Releases runs the release builder in serve (--releases, on by
	// default); Release holds its window and interval.
	Releases bool
	Release  release.Config
	// ClaimTTL is how long a chunk claim holds while its fetch runs
	// (--claim-ttl; 0: the prefetcher's default, 2m): a coordinator that
	// dies leaves the chunks it was fetching to the others after it.
	ClaimTTL time.Duration
	// Storage is where serve keeps chunks and snapshots (--storage): ""
	// for the data directory, or s3://BUCKET/PREFIX for a bucket that
	// coordinators on several machines share.
	Storage string
	// Newznab is the address of the Newznab API and the search page
	// (--newznab; empty: off), NewznabURL the base URL its links carry,
	// and MinCompletion the percent of its parts a release needs to be
	// listed there.
	Newznab, NewznabURL string
	MinCompletion       int

	// Ready, when set, is told the address serve listens on; NewznabReady
	// the address of --newznab.
	Ready, NewznabReady func(addr string)

	store *sqlstore.Store
}

// NewMain returns a Main writing to stdout and stderr.
func NewMain(stdout, stderr io.Writer) *Main {
	return &Main{Stdout: stdout, Stderr: stderr}
}

// commonFlags adds the flags every command takes.
func (m *Main) commonFlags(fs *flag.FlagSet) {
	fs.StringVar(&m.DB, "db", os.Getenv("EDGEINDEX_DB"), "database: sqlite://PATH or postgres://... (default sqlite://<data>/edgeindex.db)")
	fs.StringVar(&m.Data, "data", envOr("EDGEINDEX_DATA", "./edgeindex-data"), "directory for the spool, corpus, snapshots and admin.token")
}

// storageFlag adds --storage, for the commands that read chunks or
// snapshots.
func (m *Main) storageFlag(fs *flag.FlagSet) {
	fs.StringVar(&m.Storage, "storage", os.Getenv("EDGEINDEX_STORAGE"),
		"where chunks and snapshots go: s3://BUCKET/PREFIX (default: the data directory)")
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// parse parses flags wherever they stand among the positional arguments.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err // Run prints the usage
			}
			return nil, usagef("%s: %v", fs.Name(), err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// Run runs the command that args name. "help", or -h with any command,
// prints the usage.
func (m *Main) Run(ctx context.Context, args []string) error {
	defer m.Close()
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	err := m.command(ctx, cmd, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(m.Stdout, usage)
		return nil
	}
	return err
}

// command runs one command.
func (m *Main) command(ctx context.Context, cmd string, args []string) error {
	switch cmd {
	case "serve":
		return m.serve(ctx, args)
	case "node":
		return m.nodeCmd(ctx, args)
	case "group":
		return m.groupCmd(ctx, args)
	case "range":
		return m.rangeCmd(ctx, args)
	case "status":
		return m.status(ctx, args)
	case "snapshot":
		return m.snapshotCmd(ctx, args)
	case "demo":
		return m.demo(ctx, args)
	case "releases":
		return m.releasesCmd(ctx, args)
	case "nzb":
		return m.nzbCmd(ctx, args)
	case "user":
		return m.userCmd(ctx, args)
	case "help":
		return flag.ErrHelp
	}
	return usagef("unknown command %q; try coordinator help", cmd)
}

const usage = `coordinator serve  [--addr 127.0.0.1:7070] [--db URL] [--data DIR] [--source [NAME=]URL]... [--nntp-conns N] [--poll 1m]
                   [--repair-tries 3] [--repair-delay 5m] [--retry-delay 10s] [--lease-ttl 60s] [--id NAME] [--storage s3://BUCKET/PREFIX] [--claim-ttl 2m]
                   [--releases=true] [--release-window 6h] [--release-interval 5s]
                   [--newznab 127.0.0.1:5076] [--newznab-url URL] [--min-completion 100]
coordinator node add NAME | node rm NAME | node list
coordinator group add NAME [--provider P] [--ordered] [--range-size N] [--chunk-size N] [--plan tail,history] [--history N] [--margin M]
coordinator group plan NAME [--provider P] --plan tail,history [--history N] [--margin M] | group plan NAME [--provider P] --reset [--repair-tries 3]
coordinator range add GROUP FROM TO [--provider P] [--lane history|tail] [--capture]
coordinator range retry GROUP [--provider P] [--failed | ID...]
coordinator snapshot reset GROUP [--provider P] [--lane history|tail] [--storage s3://BUCKET/PREFIX]
coordinator status [--json]
coordinator releases [list] [--group G] [--after CURSOR] [--limit N] [--json] | releases build [--once]
coordinator nzb ID [-o FILE]
coordinator user add NAME [--requests N] [--grabs N] | user rm NAME | user suspend NAME | user resume NAME | user list [--json]
coordinator demo [--articles N] [--workers N] [--range-size N] [--keep] [--serve] [--newznab 127.0.0.1:5076]
coordinator help

--source is synthetic (the default) or nntp://[user:pass@]host[:port] (nntps:// for TLS). Repeat it as NAME=URL
(--source eweka=nntps://news.eweka.example:563 --source news2=nntp://news2.example), one provider each, each with its
own connections (the URL's ?conns=N, else --nntp-conns, else 4: a URL's conns wins over the flag); one source may be
unnamed, the default provider. That count is the account's total, shared by the coordinators on one database.
--provider P reads a group from provider P: it is stored, and shown by status, as NAME@P, which the commands that take
a group accept too. One newsgroup may be added once per provider; the release builder merges what they hold.
--storage puts the spool, the corpus and the snapshots in an S3-compatible bucket that coordinators on several
machines share, s3://BUCKET[/PREFIX][?endpoint=HOST:PORT&region=R&tls=false&path-style=true], instead of the data
directory; the credentials come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.
--history is how far back a plan's history goes: an article count (1000000), days before now (30d, or a Go
duration such as 36h) or a date (2026-01-01, UTC midnight, or RFC 3339); a date is found by bisection over OVER.
Flags may come before or after the positional arguments. With no command it serves.

Environment:
  EDGEINDEX_DB           the database when --db is not given (default sqlite://<data>/edgeindex.db)
  EDGEINDEX_DATA         the data directory when --data is not given (default ./edgeindex-data)
  EDGEINDEX_ADMIN_TOKEN  the admin token; without it, the one in <data>/admin.token, made on the first start
  EDGEINDEX_NNTP_USER    the NNTP user when --source's URL has none
  EDGEINDEX_NNTP_PASS    the NNTP password when --source's URL has none
  EDGEINDEX_STORAGE      --storage when it is not given
  AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION, AWS_ENDPOINT_URL
                         --storage's credentials, region and endpoint when its URL has none

Example:
  EDGEINDEX_NNTP_USER=me EDGEINDEX_NNTP_PASS=secret coordinator serve --source nntps://news.example:563 --data /var/lib/edgeindex
`

// printJSON prints v as indented JSON: what a command's --json prints.
func (m *Main) printJSON(v any) error {
	enc := json.NewEncoder(m.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Close closes what Run opened.
func (m *Main) Close() error {
	if m.store != nil {
		err := m.store.Close()
		m.store = nil
		return err
	}
	return nil
}

// open opens the database (applying the migrations) under --data. A
// SQLite database's files are made 0600, in a data directory of 0700.
func (m *Main) open(ctx context.Context) (*sqlstore.Store, error) {
	if m.store != nil {
		return m.store, nil
	}
	if m.DB == "" {
		if err := m.dataDir(); err != nil {
			return nil, err
		}
		m.DB = "sqlite://" + filepath.Join(m.Data, "edgeindex.db")
	}
	s, err := sqlstore.Open(ctx, m.DB, m.Store)
	if err != nil {
		return nil, err
	}
	m.store = s
	if path, ok := strings.CutPrefix(m.DB, "sqlite://"); ok {
		for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
			if err := tighten(path+suffix, 0o600); err != nil {
				return nil, fmt.Errorf("database: %w", err)
			}
		}
	}
	return s, nil
}

// dataDir makes the data directory, or tightens it, to 0700: it holds the
// database (results, token hashes) and admin.token.
func (m *Main) dataDir() error {
	if err := os.MkdirAll(m.Data, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	if err := tighten(m.Data, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	return nil
}

// tighten takes from path's mode every bit that perm does not have; a
// missing path is fine.
func tighten(path string, perm os.FileMode) error {
	info, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if mode := info.Mode().Perm(); mode&^perm != 0 {
		return os.Chmod(path, mode&perm)
	}
	return nil
}

// adminToken returns EDGEINDEX_ADMIN_TOKEN, or the token in
// <data>/admin.token, made on the first start with mode 0600. An existing
// admin.token is tightened to 0600 either way.
func (m *Main) adminToken() (string, error) {
	if err := m.dataDir(); err != nil {
		return "", err
	}
	path := filepath.Join(m.Data, "admin.token")
	if err := tighten(path, 0o600); err != nil {
		return "", fmt.Errorf("admin token: %w", err)
	}
	if t := os.Getenv("EDGEINDEX_ADMIN_TOKEN"); t != "" {
		return t, nil
	}
	if b, err := os.ReadFile(path); err == nil {
		if t := strings.TrimSpace(string(b)); t != "" {
			return t, nil
		}
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	t := hex.EncodeToString(b[:])
	if err := os.WriteFile(path, []byte(t+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("admin token: %w", err)
	}
	return t, nil
}

// maxID is the longest --id.
const maxID = 200

// ownerID returns --id, or the identity kept in <data>/coordinator.id,
// made on the first start as "<hostname>-<random>". It names this
// coordinator as the owner of chunk claims, so it must not change while the
// spool it fetched into is there: the data directory holds both, so the
// identity survives restarts, --addr changes and a new hostname, and a new
// (empty) data directory is a new owner.
func (m *Main) ownerID() (string, error) {
	if m.ID != "" {
		return m.ID, checkID(m.ID)
	}
	path := filepath.Join(m.Data, "coordinator.id")
	if b, err := os.ReadFile(path); err == nil {
		id := strings.TrimSpace(string(b))
		if checkID(id) != nil {
			return "", fmt.Errorf("%s holds %q, not a coordinator id: remove it, or pass --id", path, id)
		}
		return id, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("coordinator id: %w", err)
	}
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		if r <= ' ' || r == 0x7f {
			return -1
		}
		return r
	}, host)
	if host == "" {
		host = "coordinator"
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	id := host + "-" + hex.EncodeToString(b[:])
	if len(id) > maxID {
		id = id[len(id)-maxID:]
	}
	if err := os.WriteFile(path, []byte(id+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("coordinator id: %w", err)
	}
	return id, nil
}

// checkID refuses an identity that is empty, too long or not printable.
func checkID(id string) error {
	if id == "" || len(id) > maxID || !utf8.ValidString(id) || strings.IndexFunc(id, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
		return usagef("--id %q: 1 to %d printable bytes, no spaces", id, maxID)
	}
	return nil
}

func (m *Main) serve(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	m.commonFlags(fs)
	fs.StringVar(&m.Addr, "addr", "127.0.0.1:7070", "address to listen on")
	fs.Var(&m.Sources, "source", "where chunks come from: synthetic or nntp://[user:pass@]host:port (default synthetic); "+
		"repeat it as NAME=URL for several providers, one of them unnamed at most")
	fs.DurationVar(&m.TTL, "lease-ttl", coordinator.DefaultLeaseTTL, "lease TTL; workers heartbeat at TTL/3")
	fs.IntVar(&m.NNTPConns, "nntp-conns", 0, "the NNTP account's connections in all, shared by the coordinators on one database, for each --source URL without ?conns=N (a URL's conns wins over this flag; default 4)")
	fs.DurationVar(&m.Poll, "poll", time.Minute, "how often to read the provider's watermarks and plan ranges")
	fs.IntVar(&m.Store.RepairTries, "repair-tries", sqlstore.DefaultRepairTries, "how often a missing article is fetched again before it counts as lost")
	fs.DurationVar(&m.Store.RepairDelay, "repair-delay", sqlstore.DefaultRepairDelay, "how long a missing article waits between tries")
	fs.DurationVar(&m.Store.RetryDelay, "retry-delay", sqlstore.DefaultRetryDelay, "how long a range with a corrupt chunk waits before it is granted again, doubling with each attempt")
	fs.StringVar(&m.ID, "id", "", "this coordinator's identity as the owner of chunk claims (default: kept in <data>/coordinator.id)")
	fs.DurationVar(&m.ClaimTTL, "claim-ttl", 2*time.Minute, "how long a chunk claim holds while its fetch runs; a coordinator that dies leaves its chunks to the others after it")
	m.storageFlag(fs)
	m.releaseFlags(fs)
	m.newznabFlags(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("serve takes no arguments, not %q", pos)
	}
	log := slog.New(slog.NewTextHandler(m.Stderr, nil))
	srv, err := m.start(ctx, log)
	if err != nil {
		return err
	}
	return srv.wait(ctx)
}

// running is a started coordinator.
type running struct {
	http     *http.Server
	api      *coordinator.Server
	listener net.Listener
	newznab  *http.Server // --newznab's, or nil
	served   chan error
	bg       chan error // the prefetcher, the planner, the release builder and the chunk listener
	cancel   context.CancelFunc
	log      *slog.Logger
	storage  storage
	source   chunkSource
}

// start opens everything, binds the address (so a busy port fails at
// once) and serves in the background.
func (m *Main) start(ctx context.Context, log *slog.Logger) (_ *running, err error) {
	var closers []func() error
	defer func() {
		if err != nil {
			for i := len(closers) - 1; i >= 0; i-- {
				closers[i]()
			}
		}
	}()
	if m.ID != "" {
		if err := checkID(m.ID); err != nil {
			return nil, err
		}
	}
	token, err := m.adminToken()
	if err != nil {
		return nil, err
	}
	owner, err := m.ownerID()
	if err != nil {
		return nil, err
	}
	store, err := m.open(ctx)
	if err != nil {
		return nil, err
	}
	// The store is open before the source is made: every connection, the
	// source's start-up check's too, holds a slot of its provider's budget.
	bud := newBudgets(store, owner, log)
	src, err := m.sources(ctx, bud.budget)
	if err != nil {
		bud.close()
		return nil, err
	}
	src.close = andThen(src.close, bud.close) // the slots go back once the connections are closed
	closers = append(closers, src.close)
	st, err := m.openStorage(ctx, log)
	if err != nil {
		return nil, err
	}
	closers = append(closers, st.close)
	l, err := coordinator.Listen(m.Addr)
	if err != nil {
		return nil, err
	}
	closers = append(closers, l.Close)
	pf, err := prefetch.New(prefetch.Config{Source: src, Spool: st.spool, Corpus: st.corpus, Claims: store, Targets: store,
		Owner: owner, Concurrency: src.conns, ClaimTTL: m.ClaimTTL, Logger: log})
	if err != nil {
		return nil, err
	}
	planner, err := grouplease.NewPlanner(grouplease.PlannerConfig{Store: store, Source: src, Interval: m.Poll, Planned: pf.Kick, Logger: log,
		Dates: dateFinder(src)})
	if err != nil {
		return nil, err
	}
	metrics := coordinator.NewMetrics(func() map[string]float64 { return rangeStates(store) })
	if len(src.nntp) > 0 {
		// A stuck fetch shows as an old oldest fetch, then as a cut one;
		// with several providers, summed over them.
		metrics.WatchFetches(src.fetchStats)
	}
	cfg := coordinator.Config{Store: store, Spool: st.spool, Corpus: st.corpus, Snapshots: st.snaps,
		Prefetcher: pf, AdminToken: token, LeaseTTL: m.TTL, Logger: log, Metrics: metrics}
	if st.bucket != nil {
		cfg.Shared = st.bucket
	}
	svc, err := coordinator.NewService(cfg)
	if err != nil {
		return nil, err
	}
	api := coordinator.NewServer(svc)
	nz, nzl, err := m.listenNewznab(store, log)
	if err != nil {
		return nil, err
	}
	if nzl != nil {
		closers = append(closers, nzl.Close)
	}
	r := &running{http: api.HTTPServer(), api: api, listener: l, newznab: nz, served: make(chan error, 2),
		bg: make(chan error, 4), log: log, storage: st, source: src}
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancel = cancel
	go func() { r.bg <- pf.Run(pctx) }()
	go func() { r.bg <- planner.Run(pctx) }()
	go func() { r.bg <- m.runReleases(pctx, store, log) }()
	go func() { r.bg <- listenChunks(pctx, api.Service(), log) }()
	go func() { r.served <- r.http.Serve(l) }()
	if nz != nil {
		go func() { r.served <- nz.Serve(nzl) }()
		log.Info("newznab API and search page listening", "addr", nzl.Addr().String(), "min_completion", m.MinCompletion)
		if m.NewznabReady != nil {
			m.NewznabReady(nzl.Addr().String())
		}
	}
	log.Info("coordinator listening", "addr", l.Addr().String(), "db", redact.URL(m.DB), "data", m.Data,
		"storage", cmp.Or(blobstore.Redact(m.Storage), "data directory"), "id", owner)
	if m.Ready != nil {
		m.Ready(l.Addr().String())
	}
	return r, nil
}

// wait serves until ctx ends, then drains streams and shuts down.
func (r *running) wait(ctx context.Context) error {
	select {
	case err := <-r.served:
		r.stop()
		return err
	case <-ctx.Done():
	}
	return r.stop()
}

// stop ends streams with an error frame, then shuts the servers down
// within 10 s (the node API and --newznab's at once, each cut off if it is
// not done by then), then stops the prefetcher.
func (r *running) stop() error {
	r.log.Info("coordinator shutting down")
	r.api.Drain()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nzDone := make(chan struct{})
	go func() {
		defer close(nzDone)
		if r.newznab != nil && r.newznab.Shutdown(ctx) != nil {
			r.newznab.Close()
		}
	}()
	err := r.http.Shutdown(ctx)
	if err != nil {
		r.http.Close()
	}
	<-nzDone
	r.cancel()
	for range cap(r.bg) {
		<-r.bg
	}
	r.storage.close()
	r.source.close()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// dateFinder is the source's search for the article of a date (an NNTP
// source's), or nil: a plan with --history DATE then plans no history.
func dateFinder(src chunkSource) grouplease.DateFinder {
	if d, ok := src.ChunkSource.(grouplease.DateFinder); ok {
		return d
	}
	return nil
}

// listenChunks tells svc of the chunks every coordinator on the database
// stores (PostgreSQL's LISTEN/NOTIFY; on SQLite, one machine's, it returns
// at once), so that a stream waiting here for a chunk another coordinator
// fetched gets it at once.
func listenChunks(ctx context.Context, svc *coordinator.Service, log *slog.Logger) error {
	err := svc.ListenChunks(ctx)
	if err != nil && ctx.Err() == nil {
		log.Error("listen for the chunks other coordinators store: streams here hear of them at their keepalives only", "err", err)
	}
	return err
}

func rangeStates(store *sqlstore.Store) map[string]float64 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lanes, err := store.Lanes(ctx, "")
	out := map[string]float64{}
	if err != nil {
		return out
	}
	for _, l := range lanes {
		for st, n := range l.Ranges {
			out[string(st)] += float64(n)
		}
	}
	return out
}

func (m *Main) nodeCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	m.commonFlags(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("node add NAME | node rm NAME | node list")
	}
	store, err := m.open(ctx)
	if err != nil {
		return err
	}
	switch {
	case pos[0] == "add" && len(pos) == 2:
		token, err := node.NewToken()
		if err != nil {
			return err
		}
		if _, err := store.AddNode(ctx, pos[1], node.HashToken(token)); err != nil {
			return err
		}
		fmt.Fprintln(m.Stdout, token)
		return nil
	case pos[0] == "rm" && len(pos) == 2:
		return store.RemoveNode(ctx, pos[1])
	case pos[0] == "list" && len(pos) == 1:
		nodes, err := store.Nodes(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(m.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tCREATED\tLAST SEEN")
		for _, n := range nodes {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", n.Name, n.CreatedAt.Format(time.RFC3339), n.LastSeen.Format(time.RFC3339))
		}
		return tw.Flush()
	}
	return usagef("node add NAME | node rm NAME | node list, not %q", pos)
}

func (m *Main) groupCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("group", flag.ContinueOnError)
	m.commonFlags(fs)
	ordered := fs.Bool("ordered", false, "hand the group's ranges out in article order, per lane")
	rangeSize := fs.Int64("range-size", grouplease.DefaultRangeSize, "articles per range")
	chunkSize := fs.Int64("chunk-size", grouplease.DefaultChunkSize, "articles per chunk")
	planLanes := fs.String("plan", "", "plan the group's ranges from the provider: tail, history or tail,history")
	history := fs.String("history", "", "with --plan history: how far back history goes: N articles, Nd days (or a duration such as 36h), "+
		"or a date YYYY-MM-DD or RFC 3339 (default: to the low watermark)")
	margin := fs.Int64("margin", 0, "with --plan tail: how many of the newest articles to leave unplanned")
	reset := fs.Bool("reset", false, "with plan: clear the group's cursors and watermarks, so that the next poll splits it again "+
		"from the provider's watermarks and plans every article no range covers; articles counted lost by expiry wait again")
	fs.IntVar(&m.Store.RepairTries, "repair-tries", sqlstore.DefaultRepairTries,
		"with --reset: serve's --repair-tries; an article lost with fewer tries was lost by expiry")
	provider := providerFlag(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	const use = "group add NAME [--provider P] [--ordered] [--range-size N] [--chunk-size N] [--plan tail,history] [--history N] [--margin M] | group plan NAME [--provider P] --plan tail,history [--history N] [--margin M] | group plan NAME [--provider P] --reset [--repair-tries N]"
	if len(pos) != 2 || (pos[0] != "add" && pos[0] != "plan") || (*reset && pos[0] != "plan") {
		return usagef(use)
	}
	if pos[1], err = groupName(pos[1], *provider); err != nil {
		return err
	}
	var plan *grouplease.GroupPlan
	if *planLanes != "" || (pos[0] == "plan" && !*reset) {
		back, since, err := parseHistory(*history, time.Now())
		if err != nil {
			return usagef("%v", err)
		}
		p := grouplease.GroupPlan{HistoryBack: back, HistorySince: since, Margin: *margin}
		for _, lane := range strings.Split(*planLanes, ",") {
			switch lane {
			case "tail":
				p.Tail = true
			case "history":
				p.History = true
			default:
				return usagef("--plan %q: tail, history or tail,history", *planLanes)
			}
		}
		if err := p.Check(); err != nil {
			return usagef("%v", err)
		}
		plan = &p
	}
	store, err := m.open(ctx)
	if err != nil {
		return err
	}
	if pos[0] == "add" {
		g, err := store.AddGroup(ctx, grouplease.Group{Name: pos[1], Ordered: *ordered, RangeSize: *rangeSize, ChunkSize: *chunkSize})
		if err != nil {
			return err
		}
		fmt.Fprintf(m.Stdout, "group %d %s: ranges of %d, chunks of %d, ordered %t\n", g.ID, g.Name, g.RangeSize, g.ChunkSize, g.Ordered)
	}
	if plan != nil {
		if err := store.SetPlan(ctx, pos[1], *plan); err != nil {
			return err
		}
		fmt.Fprintf(m.Stdout, "group %s planned: tail %t, history %t (%s), margin %d\n", pos[1], plan.Tail, plan.History, historyReach(*plan), plan.Margin)
		if !plan.HistorySince.IsZero() {
			if err := m.printHistoryTarget(ctx, store, pos[1]); err != nil {
				return err
			}
		}
	}
	if *reset {
		revived, err := store.ResetPlan(ctx, pos[1])
		if err != nil {
			return err
		}
		fmt.Fprintf(m.Stdout, "group %s: cursors reset; the next poll plans it from the provider's watermarks; %d articles counted lost by expiry wait again\n",
			pos[1], revived)
	}
	return nil
}

// parseHistory parses --history: digits are an article count; Nd is N
// days before now, and a Go duration (36h) that long before now; a date
// is YYYY-MM-DD (UTC midnight) or RFC 3339. "" is none: history goes down
// to the low watermark.
func parseHistory(s string, now time.Time) (back int64, since time.Time, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, time.Time{}, nil
	}
	if strings.Trim(s, "0123456789") == "" {
		back, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, time.Time{}, fmt.Errorf("--history %q: an article count too large", s)
		}
		return back, time.Time{}, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok && days != "" && strings.Trim(days, "0123456789") == "" {
		n, err := strconv.Atoi(days)
		if err != nil || n < 1 || n > 100*366 {
			return 0, time.Time{}, fmt.Errorf("--history %q: 1 to %d days", s, 100*366)
		}
		return 0, now.AddDate(0, 0, -n).UTC(), nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return 0, time.Time{}, fmt.Errorf("--history %q: a duration must be positive", s)
		}
		return 0, now.Add(-d).UTC(), nil
	}
	for _, layout := range []string{time.DateOnly, time.RFC3339} {
		if t, err := time.Parse(layout, s); err == nil {
			return 0, t.UTC(), nil
		}
	}
	return 0, time.Time{}, fmt.Errorf("--history %q: an article count (1000000), days (30d), a duration (36h) or a date (2026-01-01, RFC 3339)", s)
}

// historyReach says how far back a plan's history goes.
func historyReach(p grouplease.GroupPlan) string {
	switch {
	case !p.HistorySince.IsZero():
		return "since " + p.HistorySince.UTC().Format(time.RFC3339)
	case p.HistoryBack > 0:
		return fmt.Sprintf("back %d", p.HistoryBack)
	}
	return "to the low watermark"
}

// historyTarget says where a plan's history starts, as status shows it:
// the article found for its date (and that article's Date), or why none
// is yet.
func historyTarget(p grouplease.PlanStatus) string {
	switch {
	case !p.History:
		return "-"
	case p.HistorySince.IsZero():
		if p.HistoryNext == 0 {
			return "at the first poll"
		}
		return historyReach(p.GroupPlan)
	case p.HistoryFrom > 0 && p.HistoryFromDate.IsZero():
		return fmt.Sprintf("none: every article older than %s", p.HistorySince.UTC().Format(time.RFC3339))
	case p.HistoryFrom > 0:
		return fmt.Sprintf("%d (%s)", p.HistoryFrom, p.HistoryFromDate.UTC().Format(time.RFC3339))
	case p.HistoryNext > 0:
		return fmt.Sprintf("since %s after --reset", p.HistorySince.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("since %s: searching", p.HistorySince.UTC().Format(time.RFC3339))
}

// printHistoryTarget prints where the group's history starts.
func (m *Main) printHistoryTarget(ctx context.Context, store *sqlstore.Store, group string) error {
	plans, err := store.Plans(ctx)
	if err != nil {
		return err
	}
	for _, p := range plans {
		if p.Group == group {
			fmt.Fprintf(m.Stdout, "group %s history starts at: %s\n", group, historyTarget(p))
		}
	}
	return nil
}

func (m *Main) rangeCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("range", flag.ContinueOnError)
	m.commonFlags(fs)
	laneName := fs.String("lane", "history", "history or tail")
	capture := fs.Bool("capture", false, "keep the range's chunks in the corpus")
	failed := fs.Bool("failed", false, "with retry: every failed range of the group")
	provider := providerFlag(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("range add GROUP FROM TO [--provider P] | range retry GROUP [--provider P] [--failed | ID...]")
	}
	if len(pos) > 1 {
		if pos[1], err = groupName(pos[1], *provider); err != nil {
			return err
		}
	}
	switch pos[0] {
	case "add":
		if len(pos) != 4 {
			return usagef("range add GROUP FROM TO [--provider P] [--lane history|tail] [--capture]")
		}
		from, err1 := strconv.ParseInt(pos[2], 10, 64)
		to, err2 := strconv.ParseInt(pos[3], 10, 64)
		if err1 != nil || err2 != nil {
			return usagef("range add: FROM and TO are article numbers, not %q %q", pos[2], pos[3])
		}
		ln, err := lease.ParseLane(*laneName)
		if err != nil {
			return usagef("%v", err)
		}
		store, err := m.open(ctx)
		if err != nil {
			return err
		}
		rs, err := store.AddRanges(ctx, grouplease.NewRanges{Group: pos[1], From: from, To: to, Lane: ln, Capture: *capture})
		if err != nil {
			return err
		}
		fmt.Fprintf(m.Stdout, "added %d ranges to %s (%s lane), %d..%d\n", len(rs), pos[1], ln, from, to)
		return nil
	case "retry":
		if len(pos) < 2 || (*failed == (len(pos) > 2)) {
			return usagef("range retry GROUP [--provider P] [--failed | ID...]: --failed or range ids")
		}
		var ids []int64
		for _, raw := range pos[2:] {
			id, err := strconv.ParseInt(raw, 10, 64)
			if err != nil {
				return usagef("range retry: %q is not a range id", raw)
			}
			ids = append(ids, id)
		}
		store, err := m.open(ctx)
		if err != nil {
			return err
		}
		n, err := store.Retry(ctx, pos[1], ids...)
		if err != nil {
			return err
		}
		fmt.Fprintf(m.Stdout, "%d ranges back to pending\n", n)
		return nil
	}
	return usagef("range add | range retry, not %q", pos[0])
}

// storage is where serve keeps chunks and snapshots.
type storage struct {
	spool  spool.Store
	corpus corpus.Store
	snaps  blobstore.Store
	// bucket is the spool when it is in a bucket: told of the chunks other
	// coordinators store.
	bucket *spool.Bucket
	close  func() error
}

// openStorage opens the spool, the corpus and the snapshots: under the
// data directory, or, with --storage s3://..., in the bucket's spool,
// corpus and snapshots parts.
func (m *Main) openStorage(ctx context.Context, log *slog.Logger) (st storage, err error) {
	var closers []func() error
	st.close = func() error {
		var err error
		for i := len(closers) - 1; i >= 0; i-- {
			err = errors.Join(err, closers[i]())
		}
		return err
	}
	defer func() {
		if err != nil {
			st.close()
		}
	}()
	if m.Storage == "" {
		sp, err := spool.Open(filepath.Join(m.Data, "spool"), spool.Config{})
		if err != nil {
			return st, err
		}
		closers = append(closers, sp.Close)
		cp, err := corpus.Open(filepath.Join(m.Data, "corpus"), corpus.Config{})
		if err != nil {
			return st, err
		}
		closers = append(closers, cp.Close)
		st.spool, st.corpus = sp, cp
		st.snaps, err = blobstore.OpenDir(filepath.Join(m.Data, "snapshots"))
		return st, err
	}
	root, err := m.bucket(ctx)
	if err != nil {
		return st, err
	}
	closers = append(closers, root.Close)
	sp, err := spool.OpenBucket(ctx, sub(root, "spool"), spool.BucketConfig{Logger: log})
	if err != nil {
		return st, fmt.Errorf("--storage %s: %w", blobstore.Redact(m.Storage), err)
	}
	closers = append(closers, sp.Close)
	cp, err := corpus.OpenBucket(sub(root, "corpus"), corpus.BucketConfig{})
	if err != nil {
		return st, err
	}
	closers = append(closers, cp.Close)
	st.spool, st.corpus, st.snaps, st.bucket = sp, cp, sub(root, "snapshots"), sp
	return st, nil
}

// bucket opens --storage, an s3:// URL.
func (m *Main) bucket(ctx context.Context) (*blobstore.S3, error) {
	if !strings.HasPrefix(m.Storage, "s3://") {
		return nil, usagef("--storage %q: s3://BUCKET/PREFIX, or none for the data directory", blobstore.Redact(m.Storage))
	}
	root, err := blobstore.OpenURL(ctx, m.Storage)
	if errors.Is(err, edgeindex.ErrInvalid) {
		return nil, usagef("--storage: %v", err)
	}
	return root, err
}

// sub is blobstore.Sub of a part whose name is a valid key.
func sub(root blobstore.Store, dir string) blobstore.Store {
	s, err := blobstore.Sub(root, dir)
	if err != nil {
		panic(err)
	}
	return s
}

// snapshots opens the lanes' snapshots, as serve keeps them: in
// <data>/snapshots, or in the snapshots part of --storage's bucket. The
// caller calls closeFn when done.
func (m *Main) snapshots(ctx context.Context) (_ blobstore.Store, closeFn func() error, _ error) {
	if m.Storage == "" {
		d, err := blobstore.OpenDir(filepath.Join(m.Data, "snapshots"))
		return d, func() error { return nil }, err
	}
	root, err := m.bucket(ctx)
	if err != nil {
		return nil, nil, err
	}
	return sub(root, "snapshots"), root.Close, nil
}

func (m *Main) snapshotCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("snapshot", flag.ContinueOnError)
	m.commonFlags(fs)
	m.storageFlag(fs)
	laneName := fs.String("lane", "history", "history or tail")
	provider := providerFlag(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	const use = "snapshot reset GROUP [--provider P] [--lane history|tail] [--storage s3://BUCKET/PREFIX]"
	if len(pos) != 2 || pos[0] != "reset" {
		return usagef(use)
	}
	if pos[1], err = groupName(pos[1], *provider); err != nil {
		return err
	}
	ln, err := lease.ParseLane(*laneName)
	if err != nil {
		return usagef("%v", err)
	}
	store, err := m.open(ctx)
	if err != nil {
		return err
	}
	g, err := store.Group(ctx, pos[1])
	if err != nil {
		return err
	}
	snaps, closeSnaps, err := m.snapshots(ctx)
	if err != nil {
		return err
	}
	defer closeSnaps()
	old, err := coordinator.ResetSnapshot(ctx, store, snaps, g.ID, ln)
	if err != nil {
		return err
	}
	if old == nil {
		fmt.Fprintf(m.Stdout, "%s %s lane had no snapshot\n", g.Name, ln)
		return nil
	}
	fmt.Fprintf(m.Stdout, "%s %s lane: snapshot at %d reset; the next upload may start anywhere\n", g.Name, ln, old.Next)
	return nil
}

func (m *Main) status(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	m.commonFlags(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	claimTTL := fs.Duration("claim-ttl", 2*time.Minute, "serve's --claim-ttl, to tell how long a fetch has run from a claim taken before the store kept that")
	stuckAfter := fs.Duration("stuck", time.Minute, "list the fetches that have run at least this long")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("status takes no arguments")
	}
	store, err := m.open(ctx)
	if err != nil {
		return err
	}
	lanes, err := store.Lanes(ctx, "")
	if err != nil {
		return err
	}
	plans, err := store.Plans(ctx)
	if err != nil {
		return err
	}
	// A fetch stuck on a provider holds its chunk claim, unfetched, for as
	// long as its coordinator tries (every try is cut at its deadline, and
	// the claim renewed before the next).
	claims, err := store.FetchingClaims(ctx, 1000)
	if err != nil {
		return err
	}
	stuck := []sqlstore.FetchingClaim{}
	for _, c := range claims {
		if c.RunningFor < 0 { // claimed before the store kept when
			c.RunningFor = *claimTTL - c.ExpiresIn
		}
		if c.RunningFor >= *stuckAfter {
			stuck = append(stuck, c)
		}
	}
	slots, err := store.Slots(ctx)
	if err != nil {
		return err
	}
	sizes, err := store.BudgetSizes(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return m.printJSON(map[string]any{"lanes": lanes, "plans": plans, "stuckFetches": stuck, "connSlots": slots, "connBudgets": sizes})
	}
	defer printSlots(m.Stdout, sizes, slots) // after the tables below
	tw := tabwriter.NewWriter(m.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tLANE\tHOLDER\tNEXT\tPENDING\tLEASED\tDONE\tFAILED\tHEADERS")
	for _, l := range lanes {
		holder := l.Holder
		if holder == "" {
			holder = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\n", l.Group, l.Lane, holder, l.Next,
			l.Ranges[lease.StatePending], l.Ranges[lease.StateLeased], l.Ranges[lease.StateDone], l.Ranges[lease.StateFailed], l.Headers)
	}
	if len(stuck) > 0 {
		fmt.Fprintln(tw, "")
		fmt.Fprintf(tw, "Fetches running for %s or more:\n", *stuckAfter)
		fmt.Fprintln(tw, "GROUP\tRANGE\tSPAN\tCOORDINATOR\tRUNNING FOR")
		for _, f := range stuck {
			fmt.Fprintf(tw, "%s\t%d\t%d-%d\t%s\t%s\n", f.Group, f.RangeID, f.Span.From, f.Span.To, f.Owner, f.RunningFor.Round(time.Second))
		}
	}
	if len(plans) == 0 {
		return tw.Flush()
	}
	fmt.Fprintln(tw, "")
	fmt.Fprintln(tw, "GROUP\tLOW\tHIGH\tLAG\tTAIL PLANNED TO\tHISTORY FROM\tHISTORY PLANNED\tMISSING (WAITING/REPAIRING/REPAIRED/LOST)\tPOLLED")
	for _, p := range plans {
		if !p.Polled {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t%s\t-\t-\tnot yet\n", p.Group, historyTarget(p))
			continue
		}
		history := "-"
		if p.History && p.HistoryNext > 0 {
			history = fmt.Sprintf("to %d of %d", p.HistoryNext-1, p.HistoryEnd)
		}
		ms := p.Missing
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t%d/%d/%d/%d\t%s\n", p.Group, p.Low, p.High, p.Lag, p.TailNext-1, historyTarget(p), history,
			ms.Waiting, ms.Repairing, ms.Repaired, ms.Lost, p.PolledAt.Format(time.RFC3339))
	}
	return tw.Flush()
}
