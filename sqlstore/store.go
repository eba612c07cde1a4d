package sqlstore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver
	"github.com/jmoiron/sqlx"
	sqlitedrv "modernc.org/sqlite" // the "sqlite" driver, pure Go

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/internal/backoff"
	"github.com/edgeindex/edgeindex/internal/redact"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/node"
)

// Compile-time checks: one Store implements every storage interface.
var (
	_ lease.Store              = (*Store)(nil)
	_ batch.Store              = (*Store)(nil)
	_ grouplease.Catalog       = (*Store)(nil)
	_ grouplease.Store         = (*Store)(nil)
	_ grouplease.SnapshotStore = (*Store)(nil)
	_ node.Store               = (*Store)(nil)
	_ grouplease.PlanStore     = (*Store)(nil)
)

// ErrUnsupportedURL means Open was given a URL that names no backend.
var ErrUnsupportedURL = errors.New("unsupported database URL")

// ErrForeign means Open, with Config.RefuseForeign, found a database that
// holds tables or views, none of them edgeindex's. It is an edgeindex.ErrNotFound:
// no edgeindex database is there.
var ErrForeign = fmt.Errorf("%w: the database holds tables or views, none of them edgeindex's", edgeindex.ErrNotFound)

// Defaults of Config.
const (
	// DefaultMaxAttempts is how many corrupt chunks a range survives before it fails.
	DefaultMaxAttempts = 5
	// DefaultRepairTries is how many times a missing article is fetched
	// again before it is counted lost.
	DefaultRepairTries = 3
	// DefaultRepairDelay is how long a missing article waits before it is
	// fetched again: long enough for a late article to propagate.
	DefaultRepairDelay = 5 * time.Minute
	// DefaultPlanAhead is how many unfinished ranges planning keeps in a
	// lane: it plans more as they finish.
	DefaultPlanAhead = 256
	// DefaultRetryDelay is how long a range whose chunk was found corrupt
	// waits before it is granted or fetched again, the first time; each
	// further attempt doubles it (10s, 20s, 40s, 80s before the fifth).
	DefaultRetryDelay = 10 * time.Second
	// DefaultFrontConns is how many database connections the front door
	// (searches, release pages, API key counts) holds at most.
	DefaultFrontConns = 4
)

// Config tunes a Store. The zero Config is ready to use.
type Config struct {
	// Clock is the one clock that decides expiry. When nil, PostgreSQL uses
	// the database's clock (now()), so every process sharing the database
	// agrees; SQLite, which only processes on one machine can share, uses
	// clock.Real.
	Clock clock.Clock
	// MaxAttempts is how many corrupt chunks a range survives before it
	// becomes failed. Zero means DefaultMaxAttempts.
	MaxAttempts int
	// RepairTries is how many times a missing article is fetched again
	// before it counts as lost. Zero means DefaultRepairTries.
	RepairTries int
	// RepairDelay is how long a missing article waits between tries. Zero
	// means DefaultRepairDelay.
	RepairDelay time.Duration
	// PlanAhead bounds the unfinished ranges planning keeps in a lane, and
	// the repair ranges of a group. Zero means DefaultPlanAhead.
	PlanAhead int
	// HighJump is how far above the trusted high watermark one GROUP
	// reply's high is trusted at once; a higher one waits for the next
	// poll to confirm it (see grouplease.PlanStore.PlanRanges). Zero means
	// 10 × the group's range size × PlanAhead: ten times what planning
	// keeps ahead, far more than a real group grows between polls.
	HighJump int64
	// RetryDelay is how long a range reported corrupt (by a worker, or by
	// the prefetcher when the source cannot make a chunk) waits before it
	// is granted or fetched again, doubling with each attempt, as River
	// schedules a job's retry. Zero means DefaultRetryDelay.
	RetryDelay time.Duration
	// RefuseForeign makes Open fail with ErrForeign, making nothing, when
	// the database (PostgreSQL's current schema, SQLite's main one) holds
	// tables or views but not edgeindex's migrations: a database of
	// something else, named by mistake. An empty database, or one
	// edgeindex made, opens as ever. False (the default) puts edgeindex's
	// tables beside any others, as a program that shares its own database
	// wants.
	RefuseForeign bool
	// FrontConns bounds the connections of the front door's own pool:
	// SearchReleases, ReleaseByID, ReleaseDetails, ReleaseFiles, UseKey
	// and Grab run there (on SQLite their writes take the one writer),
	// so however long they take, the coordination path (leases,
	// heartbeats, batches, tokens, Ping) never waits for one of its
	// connections. Zero means DefaultFrontConns.
	FrontConns int
}

// withDefaults returns c with every zero field that has a default set to it.
func (c Config) withDefaults() Config {
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.RepairTries == 0 {
		c.RepairTries = DefaultRepairTries
	}
	if c.RepairDelay == 0 {
		c.RepairDelay = DefaultRepairDelay
	}
	if c.PlanAhead == 0 {
		c.PlanAhead = DefaultPlanAhead
	}
	if c.RetryDelay == 0 {
		c.RetryDelay = DefaultRetryDelay
	}
	if c.FrontConns == 0 {
		c.FrontConns = DefaultFrontConns
	}
	return c
}

// validate checks a Config that has its defaults.
func (c Config) validate() error {
	if c.MaxAttempts < 1 || c.RepairTries < 1 || c.RepairDelay < 0 || c.PlanAhead < 1 {
		return edgeindex.Invalidf("sqlstore: MaxAttempts %d, RepairTries %d and PlanAhead %d must be at least 1, RepairDelay %s not negative",
			c.MaxAttempts, c.RepairTries, c.PlanAhead, c.RepairDelay)
	}
	if c.FrontConns < 1 || c.FrontConns > 64 {
		return edgeindex.Invalidf("sqlstore: FrontConns %d must be 1 to 64", c.FrontConns)
	}
	if c.HighJump < 0 || c.RetryDelay < 0 {
		return edgeindex.Invalidf("sqlstore: HighJump %d and RetryDelay %s must not be negative", c.HighJump, c.RetryDelay)
	}
	return nil
}

// Store implements the lease, group lane, batch, catalog and node stores on
// PostgreSQL or SQLite, with one schema.
type Store struct {
	cfg Config
	d   dialect
	db  *sqlx.DB // writes; on SQLite, the one writer connection
	rdb *sqlx.DB // reads; the same pool on PostgreSQL
	// fdb is the front door's pool (Config.FrontConns): its reads, and
	// on PostgreSQL its writes (frontWriter).
	fdb *sqlx.DB

	queries sync.Map // raw query -> query in the dialect
	stmts   sync.Map // raw query -> *sqlx.Stmt (PostgreSQL; see prepared)

	url     string // the PostgreSQL URL, for ListenChunks' connection
	channel string // the PostgreSQL channel of chunk notifications

	groupsMu sync.RWMutex
	groups   map[int64]grouplease.Group // groups never change once added

	authMu   sync.Mutex
	auth     map[string]authEntry // by token hash: tokens Authenticate found
	authGen  int64                // counts forgetAuth calls
	seen     map[string]int64     // last-seen times noted and not written yet (seen.go)
	seenKick chan struct{}        // a write of seen is due

	// Concurrent Puts and Grants are written in rounds (committer).
	puts    *committer[putReq, batch.Result]
	grants  *committer[grantReq, lease.Lease]
	claims  *committer[chunkReq, bool]
	fetched *committer[chunkReq, struct{}]
	// finishes runs Finish's fenced statement in rounds (PostgreSQL).
	finishes *committer[rangeFence, bool]
	// heartbeats renews leases in rounds (PostgreSQL).
	heartbeats *committer[heartbeatReq, sql.NullInt64]
	stop       context.CancelFunc
	loops      sync.WaitGroup

	known knownRanges // see putOptimistic

	testHookWrite func()        // tests: runs before putOptimistic's write
	searchTimeout time.Duration // tests: a search's bound; 0: SearchTimeout
}

// Open opens the database that url names and applies the migrations:
// "sqlite://PATH" (the directory is created) or "postgres://..." (also
// "postgresql://").
func Open(ctx context.Context, rawURL string, cfg Config) (*Store, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg, groups: map[int64]grouplease.Group{}, auth: map[string]authEntry{}, seenKick: make(chan struct{}, 1)}
	switch {
	case strings.HasPrefix(rawURL, "sqlite://"):
		s.d = sqlite
		if err := s.openSQLite(ctx, strings.TrimPrefix(rawURL, "sqlite://")); err != nil {
			return nil, err
		}
	case strings.HasPrefix(rawURL, "postgres://"), strings.HasPrefix(rawURL, "postgresql://"):
		s.d = postgres
		if _, err := url.Parse(rawURL); err != nil {
			// A driver's parse error may hold the whole URL, password
			// and all.
			return nil, fmt.Errorf("%w: %s: %v", ErrUnsupportedURL, redact.URL(rawURL), errors.Unwrap(err))
		}
		// What url.Parse takes and pgx does not (a port past 65535,
		// sslmode=bogus) is refused here, not at the first query as a
		// failed migration.
		if _, err := pgx.ParseConfig(pgxURL(rawURL)); err != nil {
			return nil, fmt.Errorf("%w: %s: %s", ErrUnsupportedURL, redact.URL(rawURL), parseReason(err))
		}
		db, err := openPostgres(rawURL, 64)
		if err != nil {
			return nil, err
		}
		front, err := openPostgres(rawURL, cfg.FrontConns)
		if err != nil {
			db.Close()
			return nil, err
		}
		s.db, s.rdb, s.fdb, s.url = db, db, front, rawURL
	default:
		return nil, fmt.Errorf("%w: %q: want sqlite://PATH or postgres://", ErrUnsupportedURL, redact.URL(rawURL))
	}
	if cfg.RefuseForeign {
		if err := s.refuseForeign(ctx); err != nil {
			s.Close()
			return nil, err
		}
	}
	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.indexOld(ctx); err != nil {
		s.Close()
		return nil, err
	}
	if s.d.notifies() {
		var schema string
		if err := s.db.GetContext(ctx, &schema, "SELECT current_schema()"); err != nil {
			s.Close()
			return nil, fmt.Errorf("sqlstore: %w", err)
		}
		s.channel = chunkChannel(schema)
	}
	s.startCommitters()
	return s, nil
}

// startCommitters starts the loops that write Puts, Grants, chunk claims,
// Finishes and Heartbeats in rounds, one of each (a second loop of a kind
// halves the rounds it makes, and measured slower: cd bench && go run .
// -only edgeindex), and the one that writes nodes' last-seen times
// (seenLoop), and the one that re-reads node tokens (authLoop).
func (s *Store) startCommitters() {
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	s.puts = startCommitter(ctx, &s.loops, s.putRound)
	s.grants = startCommitter(ctx, &s.loops, s.grantRound)
	s.claims = startCommitter(ctx, &s.loops, s.claimRound)
	s.fetched = startCommitter(ctx, &s.loops, s.fetchedRound)
	s.finishes = startCommitter(ctx, &s.loops, s.finishRound)
	s.heartbeats = startCommitter(ctx, &s.loops, s.heartbeatRound)
	s.loops.Add(2)
	go func() {
		defer s.loops.Done()
		s.seenLoop(ctx)
	}()
	go func() {
		defer s.loops.Done()
		s.authLoop(ctx)
	}()
}

// parseReason is what pgx's parse error says is wrong, without the URL
// it quotes first ("cannot parse `URL`: reason"), which only hides the
// password as best it can.
func parseReason(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, "`: "); i >= 0 {
		return msg[i+len("`: "):]
	}
	return "pgx cannot parse it"
}

// openPostgres opens a pool of at most conns connections to rawURL.
func openPostgres(rawURL string, conns int) (*sqlx.DB, error) {
	db, err := sqlx.Open("pgx", pgxURL(rawURL))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: open postgres: %w", err)
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	return db, nil
}

// pgxURL is rawURL for pgx. It drops binary_parameters, which lib/pq (the
// driver until issue 30) read and pgx would send to the server as a
// setting the server refuses. Unless the URL says otherwise it sets
// default_query_exec_mode=cache_describe: pgx then sends a query with its
// arguments in one round trip, unnamed, and PostgreSQL plans it for its
// arguments each time, as it did under lib/pq. pgx's own default prepares
// each query by name, and after five runs PostgreSQL may plan it once for
// any arguments: the release builder's read of the releases it extends
// (set_key IN (...) AND posted_us <= ?) went from 4 s to 28 s of the
// 1,000-worker load so.
// The statements the store prepares itself (Store.prepared) stay named.
// A URL without sslmode (and no PGSSLMODE) gets lib/pq's default,
// sslmode=require, rather than pgx's (libpq's) prefer, which would go on
// in plain text where the server offers no TLS.
func pgxURL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL // pgx reports a bad URL itself
	}
	q := u.Query()
	q.Del("binary_parameters")
	if !q.Has("default_query_exec_mode") {
		q.Set("default_query_exec_mode", "cache_describe")
	}
	if !q.Has("sslmode") && os.Getenv("PGSSLMODE") == "" {
		q.Set("sslmode", "require")
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// frontWriter is where the front door writes (the Newznab users'
// counts): its own pool on PostgreSQL, SQLite's one writer.
func (s *Store) frontWriter() *sqlx.DB {
	if s.d.isPostgres() {
		return s.fdb
	}
	return s.db
}

func (s *Store) openSQLite(ctx context.Context, path string) error {
	if path == "" {
		return fmt.Errorf("%w: sqlite:// needs a path", ErrUnsupportedURL)
	}
	// The owner's only: the database holds the hashes of node tokens and
	// API keys, and the users.
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("sqlstore: %w", err)
	}
	// WAL lets readers run beside the one writer; the busy timeout covers
	// other processes; immediate transactions take the write lock up front,
	// so a transaction never fails half-way to upgrade its lock.
	pragmas := "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)"
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + pragmas
	w, err := sqlx.Open("sqlite", dsn+"&_txlock=immediate")
	if err != nil {
		return fmt.Errorf("sqlstore: open sqlite: %w", err)
	}
	w.SetMaxOpenConns(1) // one writer
	if err := firstConn(ctx, w); err != nil {
		w.Close()
		return fmt.Errorf("sqlstore: open sqlite: %w", err)
	}
	// Readers: the coordination path's, and the front door's own.
	reader := func(conns int) (*sqlx.DB, error) {
		r, err := sqlx.Open("sqlite", dsn+"&_pragma=query_only(1)")
		if err != nil {
			return nil, fmt.Errorf("sqlstore: open sqlite: %w", err)
		}
		r.SetMaxOpenConns(conns)
		return r, nil
	}
	r, err := reader(8)
	if err != nil {
		w.Close()
		return err
	}
	f, err := reader(s.cfg.FrontConns)
	if err != nil {
		w.Close()
		r.Close()
		return err
	}
	s.db, s.rdb, s.fdb = w, r, f
	return nil
}

// firstConn opens w's first connection, again while SQLite answers
// SQLITE_BUSY, up to 50 tries, waiting as internal/backoff says (10 ms
// doubled, at most 250 ms, jittered: 6 to 12 seconds in all). The first connection of each
// process that opens a new database turns its journal to WAL (the DSN's
// pragma), which takes the database's exclusive lock; SQLite answers one
// that waits for it while holding a shared lock at once, whatever the
// busy timeout, so that the two do not deadlock. Processes that start
// together on a new database then all open it.
func firstConn(ctx context.Context, w *sqlx.DB) error {
	const sqliteBusy = 5 // SQLITE_BUSY, the primary code of an extended one
	for try := 1; ; try++ {
		err := w.PingContext(ctx)
		var e *sqlitedrv.Error
		if err == nil || !errors.As(err, &e) || e.Code()&0xff != sqliteBusy || try == 50 {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff.Wait(try, 10*time.Millisecond, 250*time.Millisecond, rand.Float64())):
		}
	}
}

// Close stops the committers (calls after it fail) and closes the
// database.
func (s *Store) Close() error {
	if s.stop != nil {
		s.stop()
		s.loops.Wait()
	}
	s.stmts.Range(func(_, v any) bool {
		v.(*sqlx.Stmt).Close()
		return true
	})
	err := s.db.Close()
	if s.rdb != s.db {
		err = errors.Join(err, s.rdb.Close())
	}
	return errors.Join(err, s.fdb.Close())
}

// Backend names the dialect: "postgres" or "sqlite".
func (s *Store) Backend() string { return s.d.name }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.rdb.PingContext(ctx) }

// DB returns the writing pool, for tools and benchmarks.
func (s *Store) DB() *sqlx.DB { return s.db }

// q returns a query in the store's dialect: {now}, {forupdate}, {skiplocked},
// {xid} and {visible} replaced, placeholders rebound.
func (s *Store) q(raw string) string {
	if v, ok := s.queries.Load(raw); ok {
		return v.(string)
	}
	v := s.bind(raw)
	s.queries.Store(raw, v)
	return v
}

// bind is q without the cache, for queries built at run time.
func (s *Store) bind(raw string) string {
	r := strings.NewReplacer("{now}", s.d.now, "{forupdate}", s.d.forUpdate, "{skiplocked}", s.d.skip,
		"{xid}", s.d.xid, "{visible}", s.d.visible, "{sumheaders}", s.d.sumHeads)
	return sqlx.Rebind(s.d.bind, r.Replace(raw))
}

// prepared returns the statement of query raw (q's form) prepared once per
// store, so that PostgreSQL plans it once per connection rather than at
// every call (the grant's plan cost a third of its execution): for the
// statements of the hot path, whose text does not change with the number
// of rows they write.
func (s *Store) prepared(ctx context.Context, raw string) (*sqlx.Stmt, error) {
	if v, ok := s.stmts.Load(raw); ok {
		return v.(*sqlx.Stmt), nil
	}
	st, err := s.db.PreparexContext(ctx, s.q(raw))
	if err != nil {
		return nil, err
	}
	if v, loaded := s.stmts.LoadOrStore(raw, st); loaded {
		st.Close()
		return v.(*sqlx.Stmt), nil
	}
	return st, nil
}

// now returns the argument for a {now} placeholder: the injected clock in
// microseconds, clock.Real on SQLite, or NULL so PostgreSQL uses its own
// clock.
func (s *Store) now() any {
	switch {
	case s.cfg.Clock != nil:
		return s.cfg.Clock.Now().UnixMicro()
	case !s.d.hasClock():
		return clock.Real.Now().UnixMicro()
	}
	return nil
}

//go:embed migrations/*.sql
var migrations embed.FS

// refuseForeign fails with ErrForeign when the database holds tables or
// views but not edgeindex's schema_migrations (see Config.RefuseForeign).
// Other tools name their table schema_migrations too (Rails,
// golang-migrate); edgeindex's is the one with a name column.
func (s *Store) refuseForeign(ctx context.Context) error {
	query := `SELECT
		(SELECT COUNT(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v', 'm', 'f')),
		(SELECT COUNT(*) FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name = 'schema_migrations' AND column_name = 'name')`
	if s.d.name == "sqlite" {
		query = `SELECT
			(SELECT COUNT(*) FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\_%' ESCAPE '\'),
			(SELECT COUNT(*) FROM pragma_table_info('schema_migrations') WHERE name = 'name')`
	}
	var relations, ours int
	if err := s.db.QueryRowxContext(ctx, query).Scan(&relations, &ours); err != nil {
		return fmt.Errorf("sqlstore: %w", err)
	}
	if relations > 0 && ours == 0 {
		return fmt.Errorf("sqlstore: %w (%d of them)", ErrForeign, relations)
	}
	return nil
}

// migrate applies the embedded migrations that are not applied yet, in
// order, each in its own transaction. On PostgreSQL the transaction first
// takes an advisory lock, so processes that start together do not race.
func (s *Store) migrate(ctx context.Context) error {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return fmt.Errorf("sqlstore: migrations: %w", err)
	}
	versions, err := migrationVersions(names)
	if err != nil {
		return err
	}
	for i, name := range names {
		version := versions[i]
		body, err := migrations.ReadFile(name)
		if err != nil {
			return fmt.Errorf("sqlstore: migrations: %w", err)
		}
		ddl := strings.NewReplacer("{{ID}}", s.d.id, "{{BLOB}}", s.d.blob).Replace(forDialect(string(body), s.d.name))
		if err := s.tx(ctx, func(tx *sqlx.Tx) error {
			if s.d.advisoryLocks() {
				if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtext(current_schema()))"); err != nil {
					return err
				}
			}
			if _, err := tx.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL)"); err != nil {
				return err
			}
			var n int
			if err := tx.GetContext(ctx, &n, s.q("SELECT COUNT(*) FROM schema_migrations WHERE version = ?"), version); err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			if _, err := tx.ExecContext(ctx, ddl); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, s.q("INSERT INTO schema_migrations (version, name) VALUES (?, ?)"), version, name)
			return err
		}); err != nil {
			return fmt.Errorf("sqlstore: migration %s: %w", name, err)
		}
	}
	return nil
}

// forDialect keeps the lines of a migration that are for the dialect
// named: a line "-- dialect: NAME" starts lines for that dialect only,
// "-- dialect: all" lines for both again.
func forDialect(body, name string) string {
	var out strings.Builder
	keep := true
	for line := range strings.Lines(body) {
		if d, ok := strings.CutPrefix(strings.TrimSpace(line), "-- dialect:"); ok {
			d = strings.TrimSpace(d)
			keep = d == "all" || d == name
			continue
		}
		if keep {
			out.WriteString(line)
		}
	}
	return out.String()
}

// migrationVersions sorts names and reads each one's version from its file
// name (NNNN_what.sql): the versions must run 1, 2, 3... with none repeated
// or missing, so a file added later never renumbers one already applied.
func migrationVersions(names []string) ([]int, error) {
	sort.Strings(names)
	versions := make([]int, len(names))
	for i, name := range names {
		base := path.Base(name)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("sqlstore: migration %s: the name must start with its number and _", base)
		}
		if v != i+1 {
			return nil, fmt.Errorf("sqlstore: migration %s: number %d, want %d: a number repeats or is missing", base, v, i+1)
		}
		versions[i] = v
	}
	return versions, nil
}

// tx runs fn in a transaction on the writing pool, committing when fn
// returns nil.
func (s *Store) tx(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	return s.txWith(ctx, nil, fn)
}

// txWith is tx with opts.
func (s *Store) txWith(ctx context.Context, opts *sql.TxOptions, fn func(tx *sqlx.Tx) error) error {
	return txOn(ctx, s.db, opts, fn)
}

// connTx is tx on one connection of the writing pool that fn is given as
// well, for what only the driver does (pgx's COPY: copyItems).
func (s *Store) connTx(ctx context.Context, fn func(conn *sql.Conn, tx *sqlx.Tx) error) error {
	conn, err := s.db.Connx(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return txOn(ctx, conn, nil, func(tx *sqlx.Tx) error { return fn(conn.Conn, tx) })
}

// txOn runs fn in a transaction of db (a pool or one of its connections)
// with opts, and commits it unless fn fails.
func txOn(ctx context.Context, db interface {
	BeginTxx(context.Context, *sql.TxOptions) (*sqlx.Tx, error)
}, opts *sql.TxOptions, fn func(tx *sqlx.Tx) error) error {
	tx, err := db.BeginTxx(ctx, opts)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// maxSnapshotTries bounds how often txSnapshot runs fn when PostgreSQL
// refuses its commit as not serializable.
const maxSnapshotTries = 5

// txSnapshot runs fn in a transaction that reads one snapshot (repeatable
// read on PostgreSQL), so that what fn counted is what it writes over: a
// row another transaction changed meanwhile fails the write, and fn runs
// again from the start, up to maxSnapshotTries times.
func (s *Store) txSnapshot(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	for try := 1; ; try++ {
		err := s.txWith(ctx, s.d.snapshotWrite(), fn)
		pe, ok := errors.AsType[*pgconn.PgError](err)
		if err == nil || try == maxSnapshotTries || !ok || pe.Code != "40001" {
			return err
		}
	}
}

func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(us sql.NullInt64) time.Time {
	if !us.Valid {
		return time.Time{}
	}
	return time.UnixMicro(us.Int64).UTC()
}

func ttlMicros(ttl time.Duration) (int64, error) {
	if ttl <= 0 {
		return 0, edgeindex.Invalidf("ttl %s must be positive", ttl)
	}
	return ttl.Microseconds(), nil
}
