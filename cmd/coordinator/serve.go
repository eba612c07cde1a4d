package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/edgeindex/edgeindex/blobstore"
	"github.com/edgeindex/edgeindex/coordinator"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/internal/redact"
	"github.com/edgeindex/edgeindex/postproc"
	"github.com/edgeindex/edgeindex/prefetch"
	"github.com/edgeindex/edgeindex/sqlstore"
)

var serveCommand = command{
	name:    "serve",
	summary: "run the coordinator: the node API, the planner, the prefetcher, the release builder (the default command)",
	about: `It makes the data directory and the database when they are not there.
--source is synthetic (the default) or nntp://[user:pass@]host[:port] (nntps:// for TLS). Repeat it as NAME=URL
(--source eweka=nntps://news.eweka.example:563 --source news2=nntp://news2.example), one provider each, each with its
own connections (the URL's ?conns=N, else --nntp-conns, else 4: a URL's conns wins over the flag); one source may be
unnamed, the default provider. That count is the account's total, shared by the coordinators on one database.
--storage puts the spool, the corpus and the snapshots in an S3-compatible bucket that coordinators on several
machines share, s3://BUCKET[/PREFIX][?endpoint=HOST:PORT&region=R&tls=false&path-style=true], instead of the data
directory; the credentials come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.`,
	setup: (*Main).serveFlags,
}

// serveFlags adds serve's flags.
func (m *Main) serveFlags(fs *flag.FlagSet) func(context.Context, []string) error {
	m.commonFlags(fs)
	fs.StringVar(&m.Addr, "addr", "127.0.0.1:7070", "address to listen on")
	m.addSourceFlags(fs)
	fs.DurationVar(&m.TTL, "lease-ttl", coordinator.DefaultLeaseTTL, "lease TTL; workers heartbeat at TTL/3")
	fs.DurationVar(&m.Poll, "poll", time.Minute, "how often to read the provider's watermarks and plan ranges")
	fs.IntVar(&m.Store.RepairTries, "repair-tries", sqlstore.DefaultRepairTries, "how often a missing article is fetched again before it counts as lost")
	fs.DurationVar(&m.Store.RepairDelay, "repair-delay", sqlstore.DefaultRepairDelay, "how long a missing article waits between tries")
	fs.DurationVar(&m.Store.RetryDelay, "retry-delay", sqlstore.DefaultRetryDelay, "how long a range with a corrupt chunk waits before it is granted again, doubling with each attempt")
	fs.StringVar(&m.ID, "id", "", "this coordinator's identity as the owner of chunk claims (default: kept in <data>/coordinator.id)")
	fs.DurationVar(&m.ClaimTTL, "claim-ttl", prefetch.DefaultClaimTTL, "how long a chunk claim holds unrenewed (it is renewed every third of it while its fetch runs): a coordinator that dies leaves its chunks to the others after it")
	fs.StringVar(&m.Pprof, "pprof", "", "address to serve Go's profiles on, /debug/pprof/ (empty: off); they need no token and show the process's internals, so keep it on loopback")
	m.storageFlag(fs)
	m.releaseFlags(fs)
	m.newznabFlags(fs)
	return m.serve
}

func (m *Main) serve(ctx context.Context, pos []string) error {
	if err := noArgs("serve", pos); err != nil {
		return err
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
	nzl      net.Listener // --newznab's, or nil
	served   chan error
	bg       chan error // the prefetcher, the planner, the release builder, post-processing and the chunk listener
	cancel   context.CancelFunc
	log      *slog.Logger
	storage  storage
	source   chunkSource
	store    *sqlstore.Store
	pf       *prefetch.Prefetcher
	planner  *grouplease.Planner
	postproc *postproc.Processor // nil: no post-processing
	owner    string
	pprof    *http.Server // --pprof's, or nil
	ppl      net.Listener // --pprof's, or nil
}

// start opens everything, binds the address (so a busy port fails at
// once) and serves in the background.
func (m *Main) start(ctx context.Context, log *slog.Logger) (_ *running, err error) {
	r := &running{log: log, served: make(chan error, 2), bg: make(chan error, 5)}
	var closers []func() error
	defer func() {
		if err != nil {
			for i := len(closers) - 1; i >= 0; i-- {
				closers[i]()
			}
		}
	}()
	token, err := m.openState(ctx, r)
	if err != nil {
		return nil, err
	}
	// The store is open before the source is made: every connection, the
	// source's start-up check's too, holds a slot of its provider's budget.
	bud := newBudgets(r.store, r.owner, log)
	if r.source, err = m.sources(ctx, bud.budget); err != nil {
		bud.close()
		return nil, err
	}
	r.source.close = andThen(r.source.close, bud.close) // the slots go back once the connections are closed
	closers = append(closers, r.source.close)
	if r.storage, err = m.openStorage(ctx, log); err != nil {
		return nil, err
	}
	closers = append(closers, r.storage.close)
	if r.listener, err = coordinator.Listen(m.Addr); err != nil {
		return nil, err
	}
	closers = append(closers, r.listener.Close)
	if err := m.build(r, token); err != nil {
		return nil, err
	}
	if m.Pprof != "" {
		if r.ppl, err = net.Listen("tcp", m.Pprof); err != nil {
			return nil, fmt.Errorf("--pprof: %w", err)
		}
		closers = append(closers, r.ppl.Close)
	}
	if r.newznab, r.nzl, err = m.listenNewznab(r.store, log); err != nil {
		return nil, err
	}
	m.launch(ctx, r)
	return r, nil
}

// pprofMux serves net/http/pprof's handlers under /debug/pprof/, but for
// cmdline: the command line may hold a database's or a provider's
// password.
func pprofMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// openState checks --id, reads the admin token and the owner id (making
// them on the first start) and opens the database, making it when it is
// not there. It returns the admin token.
func (m *Main) openState(ctx context.Context, r *running) (token string, err error) {
	if m.ID != "" {
		if err := checkID(m.ID); err != nil {
			return "", err
		}
	}
	if token, err = m.adminToken(); err != nil {
		return "", err
	}
	if r.owner, err = m.ownerID(); err != nil {
		return "", err
	}
	r.store, err = m.create(ctx)
	return token, err
}

// build makes the prefetcher, the planner and the node API over what
// start opened.
func (m *Main) build(r *running, token string) error {
	src, store, st := r.source, r.store, r.storage
	pf, err := prefetch.New(prefetch.Config{Source: src, Spool: st.spool, Corpus: st.corpus, Claims: store, Targets: store,
		Owner: r.owner, Concurrency: src.conns, ClaimTTL: m.ClaimTTL, Logger: r.log})
	if err != nil {
		return err
	}
	planner, err := grouplease.NewPlanner(grouplease.PlannerConfig{Store: store, Source: src, Interval: m.Poll, Planned: pf.Kick, Logger: r.log,
		Dates: dateFinder(src)})
	if err != nil {
		return err
	}
	metrics := coordinator.NewMetrics(func() map[string]float64 { return rangeStates(store) })
	if len(src.nntp) > 0 {
		// A stuck fetch shows as an old oldest fetch, then as a cut one;
		// with several providers, summed over them.
		metrics.WatchFetches(src.fetchStats)
	}
	if r.postproc, err = m.newPostProc(store, src.bodies(), metrics, r.log); err != nil {
		return err
	}
	cfg := coordinator.Config{Store: store, Spool: st.spool, Corpus: st.corpus, Snapshots: st.snaps,
		Prefetcher: pf, AdminToken: token, LeaseTTL: m.TTL, Logger: r.log, Metrics: metrics}
	if st.bucket != nil {
		cfg.Shared = st.bucket
	}
	svc, err := coordinator.NewService(cfg)
	if err != nil {
		return err
	}
	api := coordinator.NewServer(svc)
	r.pf, r.planner, r.api, r.http = pf, planner, api, api.HTTPServer()
	return nil
}

// launch runs the background work and the servers, and says where they
// listen.
func (m *Main) launch(ctx context.Context, r *running) {
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancel = cancel
	go func() { r.bg <- r.pf.Run(pctx) }()
	go func() { r.bg <- r.planner.Run(pctx) }()
	go func() { r.bg <- m.runReleases(pctx, r.store, r.log) }()
	go func() { r.bg <- runPostProc(pctx, r.postproc, r.log) }()
	go func() { r.bg <- listenChunks(pctx, r.api.Service(), r.log) }()
	go func() { r.served <- r.http.Serve(r.listener) }()
	if r.ppl != nil {
		r.pprof = &http.Server{Handler: pprofMux(), ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := r.pprof.Serve(r.ppl); !errors.Is(err, http.ErrServerClosed) {
				r.log.Warn("profiles stopped", "err", err)
			}
		}()
		r.log.Info("profiles listening", "addr", r.ppl.Addr().String())
	}
	if r.newznab != nil {
		go func() { r.served <- r.newznab.Serve(r.nzl) }()
		r.log.Info("newznab API and search page listening", "addr", r.nzl.Addr().String(), "min_completion", m.MinCompletion)
		if m.NewznabReady != nil {
			m.NewznabReady(r.nzl.Addr().String())
		}
	}
	addr := r.listener.Addr().String()
	r.log.Info("coordinator listening", "addr", addr, "db", redact.URL(m.DB), "data", m.Data,
		"storage", cmp.Or(blobstore.Redact(m.Storage), "data directory"), "id", r.owner)
	if m.Ready != nil {
		m.Ready(addr)
	}
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
	if r.pprof != nil {
		r.pprof.Close()
	}
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
