package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/edge"
	"github.com/edgeindex/edgeindex/lease"
)

type loadConfig struct {
	Workers  int
	Duration time.Duration
	Think    time.Duration // mean pause after each call, jittered ±50%
	Items    int           // items per batch
}

// Ranges of the load group: 100 articles, one chunk, one batch.
const (
	loadGroup     = "alt.binaries.bench.load"
	loadRangeSize = 100
	loadRefill    = 10_000 // ranges added at a time
)

// op is a timed call of the load.
type op int

const (
	opLease op = iota
	opHeartbeat
	opBatch
	opFinish
	nOps
)

var opNames = [nOps]string{"lease", "heartbeat", "batch", "finish"}

// runLoad is deliverable 5: cfg.Workers goroutines, each with an
// edge.Client of its own, against coordinator serve as a process of its
// own on PostgreSQL for cfg.Duration. Each worker leases a range,
// heartbeats it, posts one batch and finishes it, pausing about cfg.Think
// after each call. It prints the latency quantiles of each call, the
// errors and the coordinator's resident memory at the start, its peak
// and at the end.
func runLoad(ctx context.Context, out io.Writer, dbURL, dir string, cfg loadConfig) (err error) {
	p, err := startServe(ctx, serveConfig{DB: dbURL, Data: filepath.Join(dir, "data")})
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := p.Stop(); err == nil {
			err = stopErr
		}
	}()
	// The load generator is not what is measured, but it runs on the cores
	// serve and PostgreSQL use: its collector, scanning a thousand
	// goroutines' stacks, ran about a tenth of its CPU. Collecting four
	// times less often leaves those cores to what is measured.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	l := &loadRun{cfg: cfg, p: p, out: out}
	clients, err := l.prepare(ctx, dbURL)
	if err != nil {
		return err
	}
	if statements { // what -statements prints is the load's, not its setup's (each node add runs the migrations)
		if err := execOn(ctx, dbURL, "SELECT public.pg_stat_statements_reset()"); err != nil {
			return err
		}
	}
	if l.rssStart, err = p.RSS(); err != nil {
		return err
	}
	l.rssPeak.Store(l.rssStart)
	fmt.Fprintf(out, "load: %d workers, %s, think %s per call, batches of %d items, %d ranges of %d articles; coordinator pid %d, RSS at start %.1f MiB\n",
		cfg.Workers, cfg.Duration, cfg.Think, cfg.Items, l.added.Load()/loadRangeSize, loadRangeSize, p.PID, mib(l.rssStart))
	lctx, stop := context.WithTimeout(ctx, cfg.Duration)
	defer stop()
	l.ctx = lctx
	var wg sync.WaitGroup
	start := time.Now()
	for i, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.work(cl, rand.New(rand.NewPCG(uint64(i), 7)))
		}()
	}
	// The profile is of the run's last 10 s (or all of a shorter one):
	// what the load costs once its tables have grown.
	profiled := make(chan error, 1)
	go func() {
		span := min(cfg.Duration, 10*time.Second)
		if clock.Sleep(lctx, clock.Real, cfg.Duration-span) != nil {
			profiled <- nil
			return
		}
		profiled <- <-p.profile(ctx, "load", int(span/time.Second))
	}()
	refillErr := l.watch(ctx, start)
	wg.Wait()
	if perr := <-profiled; refillErr == nil {
		refillErr = perr
	}
	elapsed := time.Since(start)
	if err := ctx.Err(); err != nil {
		return err
	}
	if refillErr != nil {
		return refillErr
	}
	l.summary(ctx, elapsed)
	return nil
}

// prepare adds the load group and all the ranges the run can take, and a
// node and a client for each worker.
func (l *loadRun) prepare(ctx context.Context, dbURL string) ([]*edge.Client, error) {
	cfg := l.cfg
	if _, err := l.p.CLI(ctx, "group", "add", loadGroup, "--range-size", fmt.Sprint(loadRangeSize), "--chunk-size", fmt.Sprint(loadRangeSize)); err != nil {
		return nil, err
	}
	// Add all the ranges the run can take up front, so that adding more
	// does not land in the measurement: a cycle pauses four times, so a
	// worker does at most Duration/(4×Think) cycles. Without a think time
	// there is no bound, and ranges are added as the workers go.
	initial := int64(loadRefill)
	if cfg.Think > 0 {
		bound := float64(cfg.Workers) * cfg.Duration.Seconds() / (4 * cfg.Think.Seconds())
		initial = max(initial, min(int64(bound*1.2)+1, 500_000))
	}
	if err := l.refill(ctx, initial); err != nil {
		return nil, err
	}
	if err := analyze(ctx, dbURL); err != nil {
		return nil, err
	}
	t := time.Now()
	clients, err := l.p.Clients(ctx, "load-", cfg.Workers, 1)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(l.out, "load: %d nodes added with coordinator node add in %s\n", cfg.Workers, time.Since(t).Round(time.Millisecond))
	return clients, nil
}

// loadRun is the state a load run's workers share.
type loadRun struct {
	cfg loadConfig
	p   *serveProc
	out io.Writer
	ctx context.Context // ends with the run

	added     atomic.Int64 // articles planned: ranges are added from 1 on
	hists     [nOps]hist
	errCount  [nOps]atomic.Int64
	idle      atomic.Int64
	cycles    atomic.Int64
	firstErrs sync.Map // op -> first error

	rssStart uint64        // the coordinator's, before the workers start
	rssPeak  atomic.Uint64 // the most watch saw, sampled every second
}

// refill adds ranges more ranges to the load group, with coordinator
// range add.
func (l *loadRun) refill(ctx context.Context, ranges int64) error {
	from := l.added.Load() + 1
	if _, err := l.p.CLI(ctx, "range", "add", loadGroup, fmt.Sprint(from), fmt.Sprint(from+ranges*loadRangeSize-1)); err != nil {
		return err
	}
	l.added.Add(ranges * loadRangeSize)
	return nil
}

// pause waits about the think time; false when the run ended.
func (l *loadRun) pause(rng *rand.Rand) bool {
	if l.cfg.Think <= 0 {
		return l.ctx.Err() == nil
	}
	d := l.cfg.Think/2 + time.Duration(rng.Int64N(int64(l.cfg.Think)+1))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-l.ctx.Done():
		return false
	}
}

// timed runs the call f of o, counting its time and its error.
func (l *loadRun) timed(o op, f func() error) error {
	start := time.Now()
	err := f()
	if err != nil && l.ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
		return err // the run's end, not an error of the call
	}
	l.hists[o].add(time.Since(start))
	if err != nil {
		l.errCount[o].Add(1)
		l.firstErrs.LoadOrStore(o, err)
	}
	return err
}

// work is one worker's loop: lease, heartbeat, batch, finish, until the
// run ends.
func (l *loadRun) work(cl *edge.Client, rng *rand.Rand) {
	// Start spread over one think time, not all at once.
	if l.cfg.Think > 0 && !l.pause(rng) {
		return
	}
	ctx := l.ctx
	for ctx.Err() == nil {
		var ls lease.Lease
		var ok bool
		if l.timed(opLease, func() (err error) { ls, ok, err = cl.Lease(ctx); return err }) != nil {
			if !l.pause(rng) {
				return
			}
			continue
		}
		if !ok {
			l.idle.Add(1)
			if !l.pause(rng) {
				return
			}
			continue
		}
		r := ls.Range
		if !l.pause(rng) || l.timed(opHeartbeat, func() error { _, err := cl.Heartbeat(ctx, r.ID, ls.Token); return err }) != nil {
			continue
		}
		// Binaries of their own a range, as a real group's are: the same
		// items in every batch would make every release merge the parts of
		// all of them, a cost that grows with the run.
		items, _, _, _ := ingestItemsAt(l.cfg.Items, int(r.ID)*l.cfg.Items)
		if !l.pause(rng) || l.timed(opBatch, func() error {
			_, err := cl.PostBatch(ctx, r.ID, ls.Token, batch.Batch{From: r.Next, To: r.End, Headers: r.End - r.Next + 1, Items: items})
			return err
		}) != nil {
			continue
		}
		if !l.pause(rng) || l.timed(opFinish, func() error { return cl.Finish(ctx, r.ID, ls.Token) }) != nil {
			continue
		}
		l.cycles.Add(1)
		l.pause(rng)
	}
}

// watch keeps ranges ahead of the workers, samples the coordinator's RSS
// every second and reports every 10 s (5 s in a short run) until the run
// ends. It returns an error of adding ranges.
func (l *loadRun) watch(ctx context.Context, start time.Time) (refillErr error) {
	every := time.NewTicker(time.Second)
	defer every.Stop()
	interval := 10 * time.Second
	if l.cfg.Duration <= 20*time.Second {
		interval = 5 * time.Second
	}
	var lastCycles int64
	lastReport := start
	for {
		select {
		case <-l.ctx.Done():
			return refillErr
		case <-every.C:
		}
		if refillErr == nil && l.added.Load()/loadRangeSize-l.hists[opLease].count.Load() < loadRefill/2 {
			refillErr = l.refill(ctx, loadRefill)
		}
		rss := l.sampleRSS()
		if time.Since(lastReport) >= interval {
			n := l.cycles.Load()
			fmt.Fprintf(l.out, "  %5.0fs  %6.0f cycles/s  errors %d  coordinator RSS %.1f MiB\n", time.Since(start).Seconds(),
				float64(n-lastCycles)/time.Since(lastReport).Seconds(), l.errors(), mib(rss))
			lastCycles, lastReport = n, time.Now()
		}
	}
}

// sampleRSS reads the coordinator's RSS, keeping the peak; 0 when it
// cannot be read.
func (l *loadRun) sampleRSS() uint64 {
	rss, err := l.p.RSS()
	if err != nil {
		return 0
	}
	for {
		peak := l.rssPeak.Load()
		if rss <= peak || l.rssPeak.CompareAndSwap(peak, rss) {
			return rss
		}
	}
}

// errors counts the errors of every call.
func (l *loadRun) errors() int64 {
	var errs int64
	for o := range nOps {
		errs += l.errCount[o].Load()
	}
	return errs
}

// summary prints the LOAD lines: each call's quantiles and errors, the
// coordinator's own view of them (serveLatency), the cycles, the
// coordinator's RSS and the first error of each call.
func (l *loadRun) summary(ctx context.Context, elapsed time.Duration) {
	rssEnd := l.sampleRSS()
	for o := range nOps {
		h := &l.hists[o]
		fmt.Fprintf(l.out, "LOAD %-9s n=%-7d p50=%-9s p99=%-9s max=%-9s errors=%d\n", opNames[o], h.count.Load(),
			round(h.quantile(0.50)), round(h.quantile(0.99)), round(time.Duration(h.max.Load())), l.errCount[o].Load())
	}
	l.serveLatency(ctx)
	cycles := l.cycles.Load()
	fmt.Fprintf(l.out, "LOAD cycles=%d (%.0f/s) idle-leases=%d errors=%d\n", cycles, float64(cycles)/elapsed.Seconds(), l.idle.Load(), l.errors())
	fmt.Fprintf(l.out, "LOAD coordinator RSS (VmRSS, sampled every second): start %.1f MiB, peak %.1f MiB, end %.1f MiB (pid %d)\n",
		mib(l.rssStart), mib(l.rssPeak.Load()), mib(rssEnd), l.p.PID)
	for o := range nOps {
		if e, ok := l.firstErrs.Load(o); ok {
			fmt.Fprintf(l.out, "LOAD first %s error: %v\n", opNames[o], e)
		}
	}
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}
