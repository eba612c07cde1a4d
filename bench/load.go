package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/edge"
	"github.com/edgeindex/edgeindex/grouplease"
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

// heapInUse returns the Go heap in use after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// runLoad is deliverable 5: cfg.Workers goroutines, each with an
// edge.Client of its own, against one coordinator on PostgreSQL for
// cfg.Duration. Each worker leases a range, heartbeats it, posts one batch
// and finishes it, pausing about cfg.Think after each call. It prints the
// latency quantiles of each call, the errors and the Go heap in use
// (coordinator and load generator: one process) at the start and the end.
func runLoad(ctx context.Context, out io.Writer, dbURL, dir string, cfg loadConfig) error {
	c, err := startCoord(ctx, coordConfig{DB: dbURL, Dir: dir, Prefetch: true})
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.store.AddGroup(ctx, grouplease.Group{Name: loadGroup, RangeSize: loadRangeSize, ChunkSize: loadRangeSize}); err != nil {
		return err
	}
	var added atomic.Int64 // articles planned: ranges are added from 1 on
	refill := func(ranges int64) error {
		from := added.Load() + 1
		if _, err := c.store.AddRanges(ctx, grouplease.NewRanges{Group: loadGroup, From: from, To: from + ranges*loadRangeSize - 1}); err != nil {
			return fmt.Errorf("add ranges: %w", err)
		}
		added.Add(ranges * loadRangeSize)
		return nil
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
	if err := refill(initial); err != nil {
		return err
	}
	if _, err := c.store.DB().ExecContext(ctx, "ANALYZE"); err != nil {
		return err
	}
	clients := make([]*edge.Client, cfg.Workers)
	for i := range clients {
		if clients[i], err = c.client(ctx, fmt.Sprintf("load-%d", i+1), 1); err != nil {
			return err
		}
	}
	items, _, _, _ := ingestItems(cfg.Items)

	var hists [nOps]hist
	var errCount [nOps]atomic.Int64
	var idle, cycles atomic.Int64
	var firstErrs sync.Map // op -> first error
	fail := func(o op, err error) {
		errCount[o].Add(1)
		firstErrs.LoadOrStore(o, err)
	}

	heapStart := heapInUse()
	fmt.Fprintf(out, "load: %d workers, %s, think %s per call, batches of %d items, %d ranges of %d articles; Go heap in use at start: %.1f MiB\n",
		cfg.Workers, cfg.Duration, cfg.Think, cfg.Items, added.Load()/loadRangeSize, loadRangeSize, mib(heapStart))

	lctx, stop := context.WithTimeout(ctx, cfg.Duration)
	defer stop()
	pause := func(rng *rand.Rand) bool {
		if cfg.Think <= 0 {
			return lctx.Err() == nil
		}
		d := cfg.Think/2 + time.Duration(rng.Int64N(int64(cfg.Think)+1))
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-lctx.Done():
			return false
		}
	}
	timed := func(o op, f func() error) error {
		start := time.Now()
		err := f()
		if err != nil && lctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
			return err // the run's end, not an error of the call
		}
		hists[o].add(time.Since(start))
		if err != nil {
			fail(o, err)
		}
		return err
	}
	var wg sync.WaitGroup
	start := time.Now()
	for i, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			// Start spread over one think time, not all at once.
			if cfg.Think > 0 && !pause(rng) {
				return
			}
			for lctx.Err() == nil {
				var l lease.Lease
				var ok bool
				if timed(opLease, func() (err error) { l, ok, err = cl.Lease(lctx); return err }) != nil {
					if !pause(rng) {
						return
					}
					continue
				}
				if !ok {
					idle.Add(1)
					if !pause(rng) {
						return
					}
					continue
				}
				r := l.Range
				if !pause(rng) || timed(opHeartbeat, func() error { _, err := cl.Heartbeat(lctx, r.ID, l.Token); return err }) != nil {
					continue
				}
				if !pause(rng) || timed(opBatch, func() error {
					_, err := cl.PostBatch(lctx, r.ID, l.Token, batch.Batch{From: r.Next, To: r.End, Headers: r.End - r.Next + 1, Items: items})
					return err
				}) != nil {
					continue
				}
				if !pause(rng) || timed(opFinish, func() error { return cl.Finish(lctx, r.ID, l.Token) }) != nil {
					continue
				}
				cycles.Add(1)
				pause(rng)
			}
		}()
	}

	// Keep ranges ahead of the workers and report every 10 s (5 s in a short run).
	every := time.NewTicker(time.Second)
	defer every.Stop()
	interval := 10 * time.Second
	if cfg.Duration <= 20*time.Second {
		interval = 5 * time.Second
	}
	var lastCycles int64
	var heapWarm uint64 // at the first report: connections and buffers made
	lastReport := start
	var refillErr error
loop:
	for {
		select {
		case <-lctx.Done():
			break loop
		case <-every.C:
		}
		if refillErr == nil && added.Load()/loadRangeSize-hists[opLease].count.Load() < loadRefill/2 {
			refillErr = refill(loadRefill)
		}
		if time.Since(lastReport) >= interval {
			n := cycles.Load()
			var errs int64
			for o := range nOps {
				errs += errCount[o].Load()
			}
			heap := heapInUse()
			if heapWarm == 0 {
				heapWarm = heap
			}
			fmt.Fprintf(out, "  %5.0fs  %6.0f cycles/s  errors %d  Go heap in use %.1f MiB\n", time.Since(start).Seconds(),
				float64(n-lastCycles)/time.Since(lastReport).Seconds(), errs, mib(heap))
			lastCycles, lastReport = n, time.Now()
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := ctx.Err(); err != nil {
		return err
	}
	if refillErr != nil {
		return refillErr
	}
	heapEnd := heapInUse()
	var errs int64
	for o := range nOps {
		h := &hists[o]
		errs += errCount[o].Load()
		fmt.Fprintf(out, "LOAD %-9s n=%-7d p50=%-9s p99=%-9s max=%-9s errors=%d\n", opNames[o], h.count.Load(),
			round(h.quantile(0.50)), round(h.quantile(0.99)), round(time.Duration(h.max.Load())), errCount[o].Load())
	}
	fmt.Fprintf(out, "LOAD cycles=%d (%.0f/s) idle-leases=%d errors=%d\n", cycles.Load(), float64(cycles.Load())/elapsed.Seconds(), idle.Load(), errs)
	fmt.Fprintf(out, "LOAD Go heap in use after GC: start %.1f MiB, warm (%s) %.1f MiB, end %.1f MiB (coordinator and load generator: one process)\n",
		mib(heapStart), interval, mib(heapWarm), mib(heapEnd))
	for o := range nOps {
		if e, ok := firstErrs.Load(o); ok {
			fmt.Fprintf(out, "LOAD first %s error: %v\n", opNames[o], e)
		}
	}
	return nil
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
