package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/edge"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
)

// benchCycles adds n ranges of one article (range and chunk size 1) to an
// unordered group, then times workers goroutines, each with an edge.Client
// of its own, doing lease → one batch of one item → finish through the
// HTTP API until no range is left.
func benchCycles(ctx context.Context, dbURL, dir string, n, workers int, prefetch bool) (result, error) {
	c, err := startCoord(ctx, coordConfig{DB: dbURL, Dir: dir, Prefetch: prefetch})
	if err != nil {
		return result{}, err
	}
	defer c.Close()
	return runCycles(ctx, []*coord{c}, n, workers)
}

// benchCyclesFleet is benchCycles against k coordinators on one database
// and one chunk store (startFleet), the workers spread over them.
func benchCyclesFleet(ctx context.Context, dbURL, dir string, n, workers, k int) (result, error) {
	cs, err := startFleet(ctx, dbURL, dir, k)
	if err != nil {
		return result{}, err
	}
	defer closeFleet(cs)
	r, err := runCycles(ctx, cs, n, workers)
	r.detail += fmt.Sprintf("; %d coordinators", k)
	return r, err
}

// runCycles times the cycles against the coordinators cs, worker i
// beginning at coordinator i mod len(cs).
func runCycles(ctx context.Context, cs []*coord, n, workers int) (result, error) {
	c := cs[0]
	const group = "alt.binaries.bench.cycles"
	if err := addCycleRanges(ctx, c, group, n); err != nil {
		return result{}, err
	}
	clients := make([]*edge.Client, workers)
	for i := range clients {
		var err error
		if clients[i], err = fleetClient(ctx, cs, i, fmt.Sprintf("w%d", i+1), 1); err != nil {
			return result{}, err
		}
	}
	r, err := timeCycles(ctx, clients, n, flagMode())
	if err != nil {
		return result{}, err
	}
	if err := allDone(ctx, c, group); err != nil {
		return result{}, err
	}
	return r, nil
}

// timeCycles times the clients, one goroutine each, doing at least n
// cycles in mode between them (a few more when more ranges wait, each
// worker's last hand-over left leased); it fails when the ranges run out
// first.
func timeCycles(ctx context.Context, clients []*edge.Client, n int, mode cycleMode) (result, error) {
	var cycles atomic.Int64
	var hists [nOps]hist
	elapsed, err := parallel(ctx, len(clients), func(w int) error {
		if mode.ranges > 1 {
			return manyCycles(ctx, clients[w], &cycles, int64(n), &hists, mode)
		}
		var then *lease.Lease
		for ctx.Err() == nil && cycles.Load() < int64(n) {
			ok, next, err := cycle(ctx, clients[w], then, &hists, mode)
			if err != nil {
				return err
			}
			if !ok {
				return nil
			}
			then = next
			cycles.Add(1)
		}
		return nil
	})
	if err != nil {
		return result{}, err
	}
	got := cycles.Load()
	if got < int64(n) {
		return result{}, fmt.Errorf("%d cycles for %d ranges", got, n)
	}
	p50 := func(o op) time.Duration { return round(hists[o].quantile(0.5)) }
	return result{rate: float64(got) / elapsed.Seconds(), elapsed: elapsed,
		detail: fmt.Sprintf("%d ranges; p50 lease %s, batch %s, finish %s", got, p50(opLease), p50(opBatch), p50(opFinish))}, nil
}

// addCycleRanges adds group with n ranges of one article each, and
// takes PostgreSQL's statistics of them.
func addCycleRanges(ctx context.Context, c *coord, group string, n int) error {
	if _, err := c.store.AddGroup(ctx, grouplease.Group{Name: group, RangeSize: 1, ChunkSize: 1}); err != nil {
		return err
	}
	if _, err := c.store.AddRanges(ctx, grouplease.NewRanges{Group: group, From: 1, To: int64(n)}); err != nil {
		return err
	}
	if c.store.Backend() == "postgres" {
		if _, err := c.store.DB().ExecContext(ctx, "ANALYZE"); err != nil {
			return err
		}
	}
	return nil
}

// finalBatches makes a cycle's batch final, so that it finishes the range
// (two calls and two commits a cycle, as edge.Worker works), rather than
// being followed by a finish (-final=false: three of each).
var finalBatches = true

// cycleValue is the one item's value of a cycle's batch.
var cycleValue = json.RawMessage(`{"subject":"bench","parts":1}`)

// handOver makes a cycle's final batch ask for the next lease in its
// answer (?then=lease), as edge.Worker does: the next cycle then makes no
// lease call (-then-lease=false: every cycle calls Lease).
var handOver = true

// cycleMode is how a cycle posts its batch: final or followed by a
// finish, and a final one asking for the next lease or not; with ranges
// above 1, the many-range cycle of edge.Worker's Ranges (manyCycles).
type cycleMode struct {
	final, thenLease bool
	ranges           int
}

// flagMode is the mode -final and -then-lease set.
func flagMode() cycleMode { return cycleMode{final: finalBatches, thenLease: handOver} }

// cycle leases a range with cl, unless the last cycle's answer handed one
// over (then), posts one batch of one item and finishes it as mode says, adding each
// call's time to hists; false when no range is left. It returns the lease
// its answer handed over, if any.
func cycle(ctx context.Context, cl *edge.Client, then *lease.Lease, hists *[nOps]hist, mode cycleMode) (bool, *lease.Lease, error) {
	var l lease.Lease
	if then != nil {
		l = *then
	} else {
		t := time.Now()
		var ok bool
		var err error
		l, ok, err = cl.Lease(ctx)
		if err != nil {
			return false, nil, fmt.Errorf("lease: %w", err)
		}
		if !ok {
			return false, nil, nil
		}
		hists[opLease].add(time.Since(t))
	}
	r := l.Range
	t := time.Now()
	post := cl.PostBatch
	if mode.thenLease && mode.final {
		post = cl.PostBatchThenLease
	}
	res, err := post(ctx, r.ID, l.Token, batch.Batch{From: r.Next, To: r.End, Headers: r.End - r.Next + 1,
		Items: []batch.Item{{Key: fmt.Sprint(r.ID), Value: cycleValue}}, Final: mode.final})
	if err != nil {
		return false, nil, fmt.Errorf("batch: %w", err)
	}
	hists[opBatch].add(time.Since(t))
	if res.Done { // the final batch finished the range, as edge.Worker sends it
		return true, res.Lease, nil
	}
	t = time.Now()
	if err := cl.Finish(ctx, r.ID, l.Token); err != nil {
		return false, nil, fmt.Errorf("finish: %w", err)
	}
	hists[opFinish].add(time.Since(t))
	return true, nil, nil
}

// manyCycles is the cycle of an edge.Worker holding mode.ranges ranges at
// once: it leases up to that many in one call (POST /v1/leases), then posts
// one final batch of one item for each in one call (POST /v1/batches
// ?then=lease), whose answers hand over the next ranges; the ranges the
// answers do not hand over are leased again in one call, until no range is
// left or n cycles are done between all the workers. Without mode.final it
// is the three-call cycle of many: leases, batches that are not final,
// then one POST /v1/finishes. Each range done is a cycle.
func manyCycles(ctx context.Context, cl *edge.Client, cycles *atomic.Int64, n int64, hists *[nOps]hist, mode cycleMode) error {
	var held []lease.Lease
	for ctx.Err() == nil && cycles.Load() < n {
		if len(held) < mode.ranges {
			t := time.Now()
			more, err := cl.LeaseMany(ctx, mode.ranges-len(held))
			if err != nil {
				return fmt.Errorf("leases: %w", err)
			}
			hists[opLease].add(time.Since(t))
			held = append(held, more...)
			if len(held) == 0 {
				return nil
			}
		}
		bs := make([]api.RangeBatch, len(held))
		rs := make([]api.RangeToken, len(held))
		for i, l := range held {
			r := l.Range
			bs[i] = api.RangeBatch{Range: r.ID, Token: l.Token, Batch: batch.Batch{From: r.Next, To: r.End, Headers: r.End - r.Next + 1,
				Items: []batch.Item{{Key: fmt.Sprint(r.ID), Value: cycleValue}}, Final: mode.final}}
			rs[i] = api.RangeToken{Range: r.ID, Token: l.Token}
		}
		t := time.Now()
		reps, err := cl.PostBatches(ctx, bs, mode.final)
		if err != nil {
			return fmt.Errorf("batches: %w", err)
		}
		hists[opBatch].add(time.Since(t))
		held = held[:0]
		for _, rep := range reps {
			if err := rep.Err(); err != nil {
				return fmt.Errorf("batches: %w", err)
			}
			if rep.Lease != nil {
				held = append(held, *rep.Lease)
			}
		}
		if !mode.final {
			t = time.Now()
			fins, err := cl.FinishMany(ctx, rs)
			if err != nil {
				return fmt.Errorf("finishes: %w", err)
			}
			for _, f := range fins {
				if err := f.Err(); err != nil {
					return fmt.Errorf("finishes: %w", err)
				}
			}
			hists[opFinish].add(time.Since(t))
		} else {
			for _, rep := range reps {
				if !rep.Done {
					return fmt.Errorf("batches: range %d not done", rep.Range)
				}
			}
		}
		cycles.Add(int64(len(reps)))
	}
	return nil
}

// allDone checks that no range of group is left pending or leased.
func allDone(ctx context.Context, c *coord, group string) error {
	for _, st := range []lease.State{lease.StatePending, lease.StateLeased} {
		rs, err := c.store.Ranges(ctx, grouplease.RangeFilter{Group: group, State: st, Limit: 1})
		if err != nil {
			return err
		}
		if len(rs) > 0 {
			return fmt.Errorf("range %d of %s is still %s", rs[0].ID, group, st)
		}
	}
	return nil
}
