package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/edgeindex/edgeindex/collate"
	"github.com/edgeindex/edgeindex/edge"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/internal/inntest"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// innGroup is the group the inn lines post to and index.
const innGroup = "alt.binaries.edgeindex.inn"

// innConns is the NNTP connections of both sides of the inn lines. The
// source fetches on at most innConns-1 of them, keeping one for the
// watermarks; the baseline reads on all of them.
const innConns = 4

// innBench is what the inn lines share: one throwaway INN, its articles
// posted once, the coordinator binary, and what the last edgeindex run
// read, for the baseline to read the same.
type innBench struct {
	s       *session
	srv     *inntest.Server
	tb      *innTB
	err     error // why INN is not there, once tried
	high    int64 // the group's articles are 1..high
	bin     string
	spans   []lease.Span // the OVER spans of the last edgeindex run
	indexed int64        // the articles of those spans
	ranges  int          // the ranges of the last edgeindex run
	items   int64        // the items its workers stored
	latency time.Duration
	// pp is what serve's post-processing did in the last edgeindex run.
	pp postProcRun
}

// postProcRun is what post-processing did in one run: the releases it
// finished, the bodies they cost, and when the last was done, from
// serve's start.
type postProcRun struct {
	releases, bodies int64
	elapsed          time.Duration
	busy             time.Duration // its passes' time at work (edgeindex_postproc_seconds_total)
}

// postProcBusy reads edgeindex_postproc_seconds_total off serve's metrics.
func postProcBusy(ctx context.Context, base, admin string) (time.Duration, error) {
	b, err := adminGet(ctx, base, admin, "/metrics")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "edgeindex_postproc_seconds_total "); ok {
			s, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return time.Duration(s * float64(time.Second)), err
		}
	}
	return 0, errors.New("inn: serve's metrics have no edgeindex_postproc_seconds_total")
}

// innState is the run's innBench, stopped by closeINN.
var innState *innBench

// closeINN stops the run's INN, if one was started.
func closeINN() {
	if innState != nil && innState.tb != nil {
		innState.tb.close()
	}
}

// innFlags adds the inn lines' flags.
func innFlags(fs *flag.FlagSet, o *options) {
	fs.IntVar(&o.innArticles, "inn-articles", 200_000, "articles posted to the throwaway INN the inn lines index (20000 with -quick)")
	fs.DurationVar(&o.innPoll, "inn-poll", time.Second, "serve's --poll in the inn lines: how soon the tail plans a new post")
	fs.Int64Var(&o.innRangeSize, "inn-range-size", grouplease.DefaultRangeSize, "the inn lines' group add --range-size: articles per range")
	fs.StringVar(&o.innCompress, "inn-compress", "none", "the inn lines' ?compress= on serve's --source: none (the default: plain, as the bare OVER baseline reads), auto (as deployed: COMPRESS DEFLATE, which INN offers, against a plain baseline), deflate or gzip")
}

// innMeasures are the inn lines: edgeindex indexing a real INN, the post
// to result latency through the tail, and the bare OVER baseline.
func (s *session) innMeasures(add addMeasure) {
	b := &innBench{s: s}
	innState = b
	add("inn", "inn/edgeindex", "articles/s", func() (result, error) {
		if err := b.setup(); err != nil {
			return notMeasured(err)
		}
		return s.onPGDir("inn", b.edgeRun)
	})
	add("inn", "inn/post-to-result", "ms", func() (result, error) {
		if b.latency == 0 {
			return result{detail: "not measured"}, nil
		}
		return result{rate: float64(b.latency) / float64(time.Millisecond), elapsed: b.latency,
			detail: fmt.Sprintf("one article posted after the backfill, to its item in GET /v1/results, --poll %s", s.o.innPoll)}, nil
	})
	add("inn", "inn/postproc", "releases/s", func() (result, error) {
		pp := b.pp
		if pp.releases == 0 {
			return result{detail: "not measured"}, nil
		}
		return result{rate: float64(pp.releases) / pp.busy.Seconds(), elapsed: pp.busy,
			detail: fmt.Sprintf("serve's post-processing during inn/edgeindex: %d releases done, %d article bodies (%.2f a release, %.0f bodies/s), on --body-conns 1 of the %d connections; its passes worked %s, the last release done %s after serve's start (passes wait 5 s when idle)",
				pp.releases, pp.bodies, float64(pp.bodies)/float64(pp.releases), float64(pp.bodies)/pp.busy.Seconds(), innConns,
				pp.busy.Round(time.Millisecond), pp.elapsed.Round(time.Millisecond))}, nil
	})
	add("inn", "inn/over", "articles/s", func() (result, error) {
		if b.err != nil || len(b.spans) == 0 {
			return result{detail: "not measured"}, nil
		}
		return b.over()
	})
}

// notMeasured is a line's answer when INN cannot run here.
func notMeasured(err error) (result, error) {
	if errors.Is(err, errNoINN) {
		return result{detail: "not measured (" + err.Error() + ")"}, nil
	}
	return result{}, err
}

// setup starts INN, posts the articles and builds the coordinator, once.
func (b *innBench) setup() error {
	if b.srv != nil || b.err != nil {
		return b.err
	}
	n := b.s.o.innArticles
	began := time.Now()
	arts := inntest.Generate(n, innGroup)
	made := time.Since(began)
	b.srv, b.tb, b.err = startINN(innGroup)
	if b.err != nil {
		return b.err
	}
	began = time.Now()
	if b.err = postStream(b.srv.Addr(), arts); b.err != nil {
		return b.err
	}
	took := time.Since(began)
	b.high = int64(n)
	fmt.Fprintf(b.s.out, "bench: inn: %d articles made in %s, posted in %s (%.0f/s): MODE STREAM, TAKETHIS pipelined on one connection\n",
		n, made.Round(time.Millisecond), took.Round(time.Millisecond), float64(n)/took.Seconds())
	b.bin, b.err = coordinatorBinary(b.s.ctx)
	return b.err
}

// edgeRun is one inn/edgeindex run on a new schema and data directory:
// the group added with --plan tail,history, then serve started with the
// INN as its source and, once it is ready, -pipeline-workers workers,
// timed from serve's start (its first poll plans the ranges from the
// watermarks) until they have stored a header for every article. Then one
// article is posted and timed to its result.
func (b *innBench) edgeRun(db, data string) (result, error) {
	ctx, o := b.s.ctx, b.s.o
	source := fmt.Sprintf("nntp://%s?conns=%d", b.srv.Addr(), innConns)
	if o.innCompress != "auto" {
		source += "&compress=" + url.QueryEscape(o.innCompress)
	}
	tokens, err := b.prepare(db, data, source)
	if err != nil {
		return result{}, err
	}
	inn0 := b.innCPU()
	start := time.Now() // the timer runs from serve's start: its first poll plans the group
	srv, err := startServe(ctx, serveConfig{DB: db, Data: data, Sources: []string{source}, Args: []string{"--poll", o.innPoll.String()}})
	if err != nil {
		return result{}, err
	}
	profiled := srv.profile(ctx, "inn", 2)
	r, err := b.index(srv.URL, srv.AdminToken, db, tokens, start)
	if perr := <-profiled; err == nil {
		err = perr
	}
	if err == nil {
		b.pp, err = waitPostProc(ctx, db, b.items, start)
	}
	if err == nil {
		b.pp.busy, err = postProcBusy(ctx, srv.URL, srv.AdminToken)
	}
	if serr := srv.Stop(); err == nil {
		err = serr
	}
	if err == nil {
		r.detail += fmt.Sprintf(", serve's CPU %s in all, INN's %s (its readers', the post's included)",
			srv.CPU().Round(time.Millisecond), (b.innCPU() - inn0).Round(time.Millisecond))
	}
	return r, err
}

// waitPostProc waits until serve's release builder has read items items
// of the feed and its post-processing has no release left pending (two
// reads a second apart), at most 10 minutes, and returns what it did,
// timed from start.
func waitPostProc(ctx context.Context, db string, items int64, start time.Time) (postProcRun, error) {
	store, err := sqlstore.Open(ctx, db, sqlstore.Config{})
	if err != nil {
		return postProcRun{}, err
	}
	defer store.Close()
	var run postProcRun
	deadline := time.Now().Add(10 * time.Minute)
	for calm := 0; calm < 2; {
		pending, _, err := store.PostProcCounts(ctx)
		if err != nil {
			return run, err
		}
		cur, err := store.ReleaseCursor(ctx, release.DefaultConsumer)
		if err != nil {
			return run, err
		}
		if pending > 0 || cur.Items < items {
			calm = 0
			run.elapsed = 0
		} else {
			if run.elapsed == 0 {
				run.elapsed = time.Since(start)
			}
			calm++
		}
		if time.Now().After(deadline) {
			return run, fmt.Errorf("inn: %d releases still pending post-processing after 10 minutes", pending)
		}
		if calm < 2 {
			time.Sleep(time.Second)
		}
	}
	err = store.DB().QueryRowContext(ctx, "SELECT COUNT(*), COALESCE(SUM(pp_bodies), 0) FROM releases WHERE pp_state = 1").Scan(&run.releases, &run.bodies)
	return run, err
}

// prepare adds the planned group and one node a worker, with the CLI, and
// returns the workers' tokens.
func (b *innBench) prepare(db, data, source string) ([]string, error) {
	ctx := b.s.ctx
	cli := coordinatorCLI{bin: b.bin, env: os.Environ(), db: db, data: data}
	if _, err := cli.run(ctx, "group", "add", innGroup, "--plan", "tail,history", "--range-size", fmt.Sprint(b.s.o.innRangeSize),
		"--source", source); err != nil {
		return nil, err
	}
	tokens := make([]string, b.s.o.pipeWorkers)
	for i := range tokens {
		var err error
		if tokens[i], err = cli.addNode(ctx, fmt.Sprintf("worker-%d", i+1)); err != nil {
			return nil, err
		}
	}
	return tokens, nil
}

// index runs the workers against serve at base until every article has a
// stored header, checks the store has settled, keeps the ranges' OVER
// spans for the baseline, and times one new post to its result.
func (b *innBench) index(base, admin, db string, tokens []string, start time.Time) (result, error) {
	ctx := b.s.ctx
	ready := time.Since(start)
	ws, err := innWorkers(base, tokens)
	if err != nil {
		return result{}, err
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	var g errgroup.Group
	cpu0 := processCPU()
	for _, w := range ws {
		g.Go(func() error { return w.Run(wctx) })
	}
	st, err := waitHeaders(ctx, ws, b.high)
	elapsed := time.Since(start)
	workersCPU := processCPU() - cpu0
	if err == nil {
		err = b.settle(db)
	}
	if err == nil {
		b.latency, err = postToResult(ctx, base, admin, func(a inntest.Article) error { return postOne(b.srv, b.tb, a) }, b.high+1)
	}
	stop()
	if werr := g.Wait(); err == nil && werr != nil && !errors.Is(werr, context.Canceled) {
		err = werr
	}
	if err != nil {
		return result{}, err
	}
	indexed := b.high
	b.indexed, b.items = indexed, st.Items
	b.high++ // the article postToResult posted
	return result{rate: float64(indexed) / elapsed.Seconds(), elapsed: elapsed,
		detail: fmt.Sprintf("%d articles, %d ranges, %d OVER spans, %d items, %d workers, %d NNTP connections (%d fetching), compress %s, serve ready after %s, the workers' CPU %s",
			indexed, b.ranges, len(b.spans), st.Items, len(ws), innConns, max(1, innConns-1), b.s.o.innCompress, ready.Round(time.Millisecond), workersCPU.Round(time.Millisecond))}, nil
}

// innWorkers makes one collating edge.Worker a token, working plain
// ranges and both lanes, as cmd/edgeworker does.
func innWorkers(base string, tokens []string) ([]*edge.Worker, error) {
	ws := make([]*edge.Worker, len(tokens))
	for i, token := range tokens {
		cl, err := nodeClient(base, token, 0)
		if err != nil {
			return nil, err
		}
		h, err := collate.New(collate.Config{})
		if err != nil {
			return nil, err
		}
		ws[i], err = edge.NewWorker(edge.WorkerConfig{Client: cl, Handler: h, Idle: 50 * time.Millisecond,
			Lanes: []lease.Lane{lease.LaneTail, lease.LaneHistory}})
		if err != nil {
			return nil, err
		}
	}
	return ws, nil
}

// waitHeaders waits until ws have stored headers headers between them,
// and returns their summed stats.
func waitHeaders(ctx context.Context, ws []*edge.Worker, headers int64) (edge.Stats, error) {
	return waitStats(ctx, ws, func(st edge.Stats) bool { return st.Headers >= headers })
}

// settle waits until the store's plan has seen b.high with no lag and no
// range of the group is pending or leased, then keeps the OVER spans its
// ranges were fetched in.
func (b *innBench) settle(db string) error {
	ctx := b.s.ctx
	store, err := sqlstore.Open(ctx, db, sqlstore.Config{})
	if err != nil {
		return err
	}
	defer store.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		rs, done, err := settled(ctx, store, b.high)
		if err != nil {
			return err
		}
		if done {
			b.spans, b.ranges = overSpans(rs, b.high), len(rs)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("inn: the group did not settle at %d in 30 s after the last header", b.high)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// settled reports whether the group's plan has seen high with no lag and
// every range is done, with the ranges.
func settled(ctx context.Context, store *sqlstore.Store, high int64) ([]lease.Range, bool, error) {
	plans, err := store.Plans(ctx)
	if err != nil || len(plans) != 1 || plans[0].High != high || plans[0].Lag != 0 {
		return nil, false, err
	}
	rs, err := allRanges(ctx, store)
	if err != nil {
		return nil, false, err
	}
	for _, r := range rs {
		if r.State != lease.StateDone {
			return nil, false, nil
		}
	}
	return rs, true, nil
}

// allRanges pages through the group's ranges.
func allRanges(ctx context.Context, store *sqlstore.Store) ([]lease.Range, error) {
	var all []lease.Range
	for {
		f := grouplease.RangeFilter{Group: innGroup, Limit: 10_000}
		if len(all) > 0 {
			f.After = all[len(all)-1].ID
		}
		rs, err := store.Ranges(ctx, f)
		if err != nil || len(rs) == 0 {
			return all, err
		}
		all = append(all, rs...)
	}
}

// overSpans are the chunks of the ranges up to high, as the prefetcher
// fetches them: one OVER each.
func overSpans(rs []lease.Range, high int64) []lease.Span {
	var spans []lease.Span
	for _, r := range rs {
		if r.Start <= high {
			spans = append(spans, lease.Spans(r.Start, min(r.End, high), grouplease.DefaultChunkSize)...)
		}
	}
	return spans
}

// over is the inn/over line: the same spans over bare connections.
func (b *innBench) over() (result, error) {
	inn0 := b.innCPU()
	lines, elapsed, err := overBaseline(b.s.ctx, b.srv.Addr(), innGroup, b.spans, innConns)
	if err != nil {
		return result{}, err
	}
	inn := b.innCPU() - inn0
	if want := b.indexed; lines != want {
		return result{}, fmt.Errorf("inn/over: %d overview lines for %d articles", lines, want)
	}
	return result{rate: float64(lines) / elapsed.Seconds(), elapsed: elapsed,
		detail: fmt.Sprintf("%d articles, %d OVER spans, %d bare connections into io.Discard, INN's CPU %s", lines, len(b.spans), innConns,
			inn.Round(time.Millisecond))}, nil
}

// innCPU is the CPU time innd and its readers that have exited used so
// far: utime, stime, cutime and cstime of /proc/PID/stat, in clock ticks
// of 10 ms (Linux's USER_HZ). It waits 200 ms first, so that readers
// whose connections just closed are reaped; 0 when it cannot be read.
func (b *innBench) innCPU() time.Duration {
	time.Sleep(200 * time.Millisecond)
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", b.srv.Pid()))
	if err != nil {
		return 0
	}
	// The fields after the command, which is in parentheses and may hold spaces.
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	if len(f) < 15 {
		return 0
	}
	var ticks int64
	for _, i := range []int{11, 12, 13, 14} { // utime, stime, cutime, cstime: fields 14 to 17
		n, _ := strconv.ParseInt(f[i], 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// processCPU is the user and system CPU time this process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
