package main

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/edgeindex/edgeindex/collate"
	"github.com/edgeindex/edgeindex/edge"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/sources"
)

const pipelineGroup = "alt.binaries.edgeindex.demo"

// pipelineRun is what one pipeline run did, to compare both sides.
type pipelineRun struct {
	headers, items int64
}

// benchPipeline is the demo's pipeline on PostgreSQL: the coordinator
// with its spool and prefetcher on the Synthetic source, and workers
// edge.Workers, each with a collate.Collator, over loopback HTTP. It times
// from the workers' start until every range is done.
func benchPipeline(ctx context.Context, dbURL, dir string, articles, rangeSize int64, workers int) (result, pipelineRun, error) {
	c, err := startCoord(ctx, coordConfig{DB: dbURL, Dir: dir, Prefetch: true})
	if err != nil {
		return result{}, pipelineRun{}, err
	}
	defer c.Close()
	return runPipeline(ctx, []*coord{c}, articles, rangeSize, workers)
}

// benchPipelineFleet is benchPipeline against k coordinators on one
// database and one chunk store (startFleet), the workers spread over them.
func benchPipelineFleet(ctx context.Context, dbURL, dir string, articles, rangeSize int64, workers, k int) (result, error) {
	cs, err := startFleet(ctx, dbURL, dir, k)
	if err != nil {
		return result{}, err
	}
	defer closeFleet(cs)
	r, _, err := runPipeline(ctx, cs, articles, rangeSize, workers)
	r.detail += fmt.Sprintf(", %d coordinators", k)
	return r, err
}

// runPipeline times the pipeline against the coordinators cs, worker i
// beginning at coordinator i mod len(cs).
func runPipeline(ctx context.Context, cs []*coord, articles, rangeSize int64, workers int) (result, pipelineRun, error) {
	c := cs[0]
	if _, err := c.store.AddGroup(ctx, grouplease.Group{Name: pipelineGroup, RangeSize: rangeSize}); err != nil {
		return result{}, pipelineRun{}, err
	}
	ws, err := pipelineWorkers(ctx, cs, workers)
	if err != nil {
		return result{}, pipelineRun{}, err
	}
	// Ranges come last, just before the timer starts: the prefetcher's
	// first pass is over, and it fetches nothing until a stream kicks it
	// (or its idle pass 2 s later), so no chunk is fetched before the
	// timer starts. The baseline's fetches are timed too.
	rs, err := c.store.AddRanges(ctx, grouplease.NewRanges{Group: pipelineGroup, From: 1, To: articles})
	if err != nil {
		return result{}, pipelineRun{}, err
	}
	st, elapsed, err := runWorkers(ctx, ws, int64(len(rs)))
	if err != nil {
		return result{}, pipelineRun{}, err
	}
	if st.Headers != articles {
		return result{}, pipelineRun{}, fmt.Errorf("pipeline: %d headers for %d articles", st.Headers, articles)
	}
	if err := allDone(ctx, c, pipelineGroup); err != nil {
		return result{}, pipelineRun{}, err
	}
	return result{rate: float64(articles) / elapsed.Seconds(), elapsed: elapsed,
			detail: fmt.Sprintf("%d articles, %d ranges, %d items, %d workers", articles, len(rs), st.Items, workers)},
		pipelineRun{headers: st.Headers, items: st.Items}, nil
}

// pipelineWorkers makes workers collating workers, worker i beginning at
// coordinator i mod len(cs).
func pipelineWorkers(ctx context.Context, cs []*coord, workers int) ([]*edge.Worker, error) {
	ws := make([]*edge.Worker, workers)
	for i := range ws {
		cl, err := fleetClient(ctx, cs, i, fmt.Sprintf("worker-%d", i+1), 0)
		if err != nil {
			return nil, err
		}
		h, err := collate.New(collate.Config{})
		if err != nil {
			return nil, err
		}
		if ws[i], err = edge.NewWorker(edge.WorkerConfig{Client: cl, Handler: h, Idle: 50 * time.Millisecond}); err != nil {
			return nil, err
		}
	}
	return ws, nil
}

// runWorkers runs ws until they have done ranges ranges between them,
// and returns their summed stats and how long that took.
func runWorkers(ctx context.Context, ws []*edge.Worker, ranges int64) (edge.Stats, time.Duration, error) {
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	var g errgroup.Group
	start := time.Now()
	for _, w := range ws {
		g.Go(func() error { return w.Run(wctx) })
	}
	st, err := waitStats(ctx, ws, func(st edge.Stats) bool { return st.Ranges >= ranges })
	if err != nil {
		stop()
		g.Wait()
		return st, 0, err
	}
	elapsed := time.Since(start)
	stop()
	if err := g.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		return st, elapsed, err
	}
	return st, elapsed, nil
}

// waitStats polls ws every 5 ms until their summed stats are done, and
// returns those stats.
func waitStats(ctx context.Context, ws []*edge.Worker, done func(edge.Stats) bool) (edge.Stats, error) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		var st edge.Stats
		for _, w := range ws {
			s := w.Stats()
			st.Ranges += s.Ranges
			st.Headers += s.Headers
			st.Items += s.Items
		}
		if done(st) {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-tick.C:
		}
	}
}

// benchBaseline is the pipeline's fair one-process baseline: the same
// ranges and chunks, from the same Synthetic source, inflated, parsed and
// collated by the same collate.Collator, and the same items stored in the
// same database with one COPY per chunk, into a table of the items
// table's shape (feedItemsTable, as ingest's baseline); workers goroutines
// take ranges as the workers do. No HTTP, no leases, no spool. Until issue
// 30 the table was raw_items, with the primary key only: our side alone
// kept the two indexes that serve the feed.
func benchBaseline(ctx context.Context, dbURL string, articles, rangeSize int64, workers int) (result, pipelineRun, error) {
	pool, err := baselineDB(ctx, dbURL, workers)
	if err != nil {
		return result{}, pipelineRun{}, err
	}
	defer pool.Close()
	src, err := sources.NewSynthetic(sources.SyntheticConfig{})
	if err != nil {
		return result{}, pipelineRun{}, err
	}
	ranges := lease.Spans(1, articles, rangeSize)
	var next, xid atomic.Int64
	var headers, items atomic.Int64
	elapsed, err := parallel(ctx, workers, func(int) error {
		col, err := collate.New(collate.Config{})
		if err != nil {
			return err
		}
		for {
			i := next.Add(1) - 1
			if i >= int64(len(ranges)) || ctx.Err() != nil {
				return nil
			}
			h, n, err := baselineRange(ctx, src, col, pool, &xid, i+1, ranges[i])
			headers.Add(h)
			items.Add(n)
			if err != nil {
				return err
			}
		}
	})
	if err != nil {
		return result{}, pipelineRun{}, err
	}
	var stored int64
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM feed_items").Scan(&stored); err != nil {
		return result{}, pipelineRun{}, err
	}
	if headers.Load() != articles || stored != items.Load() {
		return result{}, pipelineRun{}, fmt.Errorf("baseline: %d headers for %d articles, %d items stored of %d", headers.Load(), articles, stored, items.Load())
	}
	return result{rate: float64(articles) / elapsed.Seconds(), elapsed: elapsed,
			detail: fmt.Sprintf("%d articles, %d ranges, %d items, %d goroutines", articles, len(ranges), items.Load(), workers)},
		pipelineRun{headers: headers.Load(), items: items.Load()}, nil
}

// baselineDB opens a pool of workers+1 connections to dbURL and makes
// the baseline's table.
func baselineDB(ctx context.Context, dbURL string, workers int) (*pgxpool.Pool, error) {
	pool, err := openPool(ctx, dbURL, workers+1)
	if err != nil {
		return nil, err
	}
	if _, err := pool.Exec(ctx, feedItemsTable); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// baselineRange is the baseline's work on range id of articles rs: each
// chunk fetched from src, collated by col and its items stored with one
// COPY, numbered by xid as transactions are. It returns the headers read
// and the items stored.
func baselineRange(ctx context.Context, src *sources.Synthetic, col *collate.Collator, pool *pgxpool.Pool, xid *atomic.Int64, id int64, rs lease.Span) (headers, items int64, err error) {
	r := lease.Range{ID: id, Group: pipelineGroup, GroupID: 1, Lane: lease.LaneHistory, Start: rs.From, End: rs.To, Next: rs.From}
	for _, span := range lease.Spans(rs.From, rs.To, grouplease.DefaultChunkSize) {
		data, err := src.Fetch(ctx, pipelineGroup, span)
		if err != nil {
			return headers, items, err
		}
		out, err := col.HandleChunk(ctx, edge.Chunk{Range: r, From: span.From, To: span.To, Data: data})
		if err != nil {
			return headers, items, err
		}
		if len(out.Items) > 0 {
			if err := copyFeedItems(ctx, pool, xid.Add(1), 1, r.ID, span.From, span.To, out.Items); err != nil {
				return headers, items, err
			}
		}
		headers += out.Headers
		items += int64(len(out.Items))
	}
	return headers, items, nil
}
