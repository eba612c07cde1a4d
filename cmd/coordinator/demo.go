package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/collate"
	"github.com/edgeindex/edgeindex/edge"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/newznab"
	"github.com/edgeindex/edgeindex/node"
	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/sqlstore"
	"github.com/edgeindex/edgeindex/usenet"
)

// DemoGroup is the synthetic group the demo indexes.
const DemoGroup = "alt.binaries.edgeindex.demo"

// DemoResult is what a demo run did.
type DemoResult struct {
	Articles int64
	Ranges   int64
	Headers  int64
	Items    int64 // items stored: binaries, or parts of one split by a range boundary
	Binaries int   // distinct binaries once items are merged by key
	Complete int   // of them, with every part seen
	Elapsed  time.Duration
}

var demoCommand = command{name: "demo", summary: "index a synthetic group end to end in a temporary directory and show a summary",
	about: "With --serve, it then serves the Newznab API and the search page over what it indexed until interrupted.",
	setup: (*Main).demoFlags}

// demoFlags adds the demo's flags: it runs the whole pipeline embedded:
// SQLite in a temporary directory, the synthetic source, the coordinator
// on a free loopback port, and workers in this process that collate
// binaries; it shows progress and a summary.
func (m *Main) demoFlags(fs *flag.FlagSet) func(context.Context, []string) error {
	var o demoOptions
	fs.Int64Var(&o.articles, "articles", 200_000, "articles in the synthetic group")
	fs.IntVar(&o.workers, "workers", 4, "workers in this process")
	fs.Int64Var(&o.rangeSize, "range-size", 10_000, "articles per range")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary data directory")
	fs.BoolVar(&o.serve, "serve", false, "after the summary, serve the Newznab API and the search page over what was indexed until interrupted")
	fs.StringVar(&o.newznab, "newznab", "127.0.0.1:5076", "with --serve: the address of the API and the search page")
	return func(ctx context.Context, pos []string) error {
		if len(pos) > 0 || o.articles < 1 || o.workers < 1 || o.rangeSize < 1 {
			return usagef("demo [--articles N] [--workers N] [--range-size N] [--keep] [--serve] [--newznab ADDR]: positive numbers, no arguments")
		}
		return m.demo(ctx, o)
	}
}

// demoOptions are the demo's flags.
type demoOptions struct {
	articles, rangeSize int64
	workers             int
	keep, serve         bool
	newznab             string
}

// demo runs the demo in a new temporary directory.
func (m *Main) demo(ctx context.Context, o demoOptions) error {
	dir, err := os.MkdirTemp("", "edgeindex-demo-")
	if err != nil {
		return err
	}
	if !o.keep {
		defer os.RemoveAll(dir)
	}
	res, err := m.runDemo(ctx, dir, o.articles, o.workers, o.rangeSize, m.Stdout, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(m.Stdout, "\nindexed %d articles of %s in %s: %d ranges, %d headers, %d items, %d binaries (%d complete), %.0f articles/s\n",
		res.Articles, DemoGroup, res.Elapsed.Round(time.Millisecond), res.Ranges, res.Headers, res.Items, res.Binaries, res.Complete,
		float64(res.Articles)/res.Elapsed.Seconds())
	store, err := m.open(ctx)
	if err != nil {
		return err
	}
	rels, complete, err := buildDemoReleases(ctx, store)
	if err != nil {
		return err
	}
	fmt.Fprintf(m.Stdout, "built %d releases (%d complete) from them\n", rels, complete)
	if o.keep {
		fmt.Fprintf(m.Stdout, "data kept in %s\n", dir)
	}
	if o.serve {
		return serveDemo(ctx, store, o.newznab, m.Stdout)
	}
	return nil
}

// buildDemoReleases builds releases from the whole results feed and
// counts them.
func buildDemoReleases(ctx context.Context, store *sqlstore.Store) (all, complete int, err error) {
	b, err := release.NewBuilder(release.Config{Store: store})
	if err != nil {
		return 0, 0, err
	}
	if _, err := b.Pass(ctx); err != nil {
		return 0, 0, err
	}
	q := release.Query{Limit: release.MaxQueryLimit}
	for {
		page, err := store.Releases(ctx, q)
		if err != nil {
			return 0, 0, err
		}
		for _, r := range page.Releases {
			all++
			if r.Complete {
				complete++
			}
		}
		if len(page.Releases) < q.Limit {
			return all, complete, nil
		}
		q.After = page.Next
	}
}

// serveDemo adds a user "demo" and serves the Newznab API and the search
// page over store on addr until ctx ends, printing where and the key.
func serveDemo(ctx context.Context, store *sqlstore.Store, addr string, out io.Writer) error {
	key, err := newznab.NewKey()
	if err != nil {
		return err
	}
	if err := store.AddUser(ctx, newznab.User{Name: "demo", KeyHash: newznab.HashKey(key)}); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h, err := newznab.New(newznab.Config{Store: store, Logger: log})
	if err != nil {
		return err
	}
	l, err := bindNewznab(addr)
	if err != nil {
		return err
	}
	srv := newznabServer(h, log)
	base := "http://" + l.Addr().String()
	fmt.Fprintf(out, "\nsearch page: %s/?apikey=%s\nNewznab API: %s/api?t=search&apikey=%s\nAPI key of user demo: %s\nserving until interrupted (Ctrl-C)\n",
		base, key, base, key, key)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

// runDemo indexes articles 1..n with workers, writing progress to out.
// Each worker runs a handler from newHandler; nil means a collator.
func (m *Main) runDemo(ctx context.Context, dir string, n int64, workers int, rangeSize int64, out io.Writer,
	newHandler func() (edge.Handler, error)) (DemoResult, error) {
	collating := newHandler == nil
	if collating {
		newHandler = func() (edge.Handler, error) { return collate.New(collate.Config{}) }
	}
	m.Data, m.DB, m.Sources, m.Addr = dir, "", nil, "127.0.0.1:0"
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	store, err := m.create(ctx)
	if err != nil {
		return DemoResult{}, err
	}
	if _, err := store.AddGroup(ctx, grouplease.Group{Name: DemoGroup, RangeSize: rangeSize}); err != nil {
		return DemoResult{}, err
	}
	rs, err := store.AddRanges(ctx, grouplease.NewRanges{Group: DemoGroup, From: 1, To: n})
	if err != nil {
		return DemoResult{}, err
	}
	addr := make(chan string, 1)
	m.Ready = func(a string) { addr <- a }
	srv, err := m.start(ctx, log)
	if err != nil {
		return DemoResult{}, err
	}
	defer srv.stop()
	base := "http://" + <-addr

	start := time.Now()
	ws, err := demoWorkers(ctx, store, base, workers, newHandler)
	if err != nil {
		return DemoResult{}, err
	}
	wctx, stopWorkers := context.WithCancel(ctx)
	defer stopWorkers()
	var g errgroup.Group
	for _, w := range ws {
		g.Go(func() error { return w.Run(wctx) })
	}
	st, err := watchDemo(ctx, ws, n, int64(len(rs)), start, out)
	if err != nil {
		stopWorkers()
		g.Wait()
		return DemoResult{}, err
	}
	res := DemoResult{Articles: n, Ranges: st.Ranges, Headers: st.Headers, Items: st.Items}
	res.Elapsed = time.Since(start)
	stopWorkers()
	if err := g.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		return res, err
	}
	if !collating {
		return res, nil
	}
	res.Binaries, res.Complete, err = countBinaries(ctx, store, res.Items)
	return res, err
}

// demoWorkers adds a node for each of n workers and makes the workers,
// each a client of base with a handler from newHandler.
func demoWorkers(ctx context.Context, store *sqlstore.Store, base string, n int, newHandler func() (edge.Handler, error)) ([]*edge.Worker, error) {
	ws := make([]*edge.Worker, n)
	for i := range ws {
		token, err := node.NewToken()
		if err != nil {
			return nil, err
		}
		if _, err := store.AddNode(ctx, fmt.Sprintf("demo-%d", i+1), node.HashToken(token)); err != nil {
			return nil, err
		}
		client, err := edge.NewClient(edge.Config{BaseURL: base, Token: token})
		if err != nil {
			return nil, err
		}
		h, err := newHandler()
		if err != nil {
			return nil, err
		}
		if ws[i], err = edge.NewWorker(edge.WorkerConfig{Client: client, Handler: h, Idle: 50 * time.Millisecond}); err != nil {
			return nil, err
		}
	}
	return ws, nil
}

// watchDemo waits until the workers have finished total ranges, drawing
// their progress through n articles to out, and returns their stats summed;
// or ctx's error.
func watchDemo(ctx context.Context, ws []*edge.Worker, n, total int64, start time.Time, out io.Writer) (edge.Stats, error) {
	// Look often, so the time taken is measured closely; draw less often.
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var drawn time.Time
	for {
		var st edge.Stats
		for _, w := range ws {
			s := w.Stats()
			st.Ranges += s.Ranges
			st.Headers += s.Headers
			st.Items += s.Items
		}
		done := st.Ranges >= total
		if done || time.Since(drawn) >= 200*time.Millisecond {
			progress(out, st.Headers, n, st.Ranges, total, time.Since(start))
			drawn = time.Now()
		}
		if done {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return edge.Stats{}, ctx.Err()
		case <-tick.C:
		}
	}
}

// countBinaries reads the results feed and merges items by key.
func countBinaries(ctx context.Context, store interface {
	Results(context.Context, batch.Query) (batch.Page, error)
}, items int64) (int, int, error) {
	binaries := map[string]usenet.Binary{}
	cursor := ""
	var read int64
	for read < items {
		p, err := store.Results(ctx, batch.Query{Group: DemoGroup, After: cursor, Limit: 10000})
		if err != nil {
			return 0, 0, err
		}
		if len(p.Results) == 0 {
			return 0, 0, fmt.Errorf("the results feed shows %d of %d items", read, items)
		}
		for _, it := range p.Results {
			var b usenet.Binary
			if err := json.Unmarshal(it.Value, &b); err != nil {
				return 0, 0, fmt.Errorf("item %s: %w", it.Key, err)
			}
			if prev, ok := binaries[it.Key]; ok {
				b = usenet.Merge(prev, b)
			}
			binaries[it.Key] = b
		}
		read += int64(len(p.Results))
		cursor = p.Next
	}
	complete := 0
	for _, b := range binaries {
		if b.Complete {
			complete++
		}
	}
	return len(binaries), complete, nil
}

// progress draws one line: a bar, articles, ranges, articles/s.
func progress(out io.Writer, done, total, ranges, rangesTotal int64, elapsed time.Duration) {
	const width = 30
	filled := int(min(done, total) * width / max(total, 1))
	rate := float64(done) / max(elapsed.Seconds(), 0.001)
	fmt.Fprintf(out, "\r[%s%s] %d/%d articles  %d/%d ranges  %.0f articles/s ",
		strings.Repeat("#", filled), strings.Repeat(".", width-filled), done, total, ranges, rangesTotal, rate)
}
