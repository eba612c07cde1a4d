package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/edgeindex/edgeindex/release"
)

const deployedGroup = "alt.binaries.bench.deployed"

// deployedWaiting is how many ranges wait in deployed-1M (-deployed-1m).
const deployedWaiting = 1_000_000

// deployedConfig is one deployed line: N cycles of Workers workers in
// Mode, with Waiting ranges added before (at least N) and Results items
// stored before.
type deployedConfig struct {
	N, Workers, Waiting, Results int
	Mode                         cycleMode
}

// deployedMeasures are the lines of the deployed phase: River, the
// coordinator as a process of its own with the SDK's cycle and with the
// three-call one (and with a million ranges waiting, with -deployed-1m),
// then River again, so that the ratios take River's mean around them.
func (s *session) deployedMeasures(add addMeasure) {
	ctx, o := s.ctx, s.o
	river := func() (result, error) {
		return s.onPG("river", func(url string) (result, error) { return benchRiver(ctx, url, o.n, o.workers, o.riverCooldown) })
	}
	line := func(name string, cfg deployedConfig) {
		add("deployed", name, "cycles/s", func() (result, error) {
			return s.onPGDir("deployed", func(url, dir string) (result, error) { return benchDeployed(ctx, url, dir, cfg) })
		})
	}
	add("deployed", "river/before", "jobs/s", river)
	line("deployed/postgres", deployedConfig{N: o.n, Workers: o.workers, Mode: cycleMode{final: true, thenLease: true}})
	line("deployed-many/postgres", deployedConfig{N: o.n, Workers: o.workers,
		Mode: cycleMode{final: true, thenLease: true, ranges: o.ranges}})
	line("deployed-3call/postgres", deployedConfig{N: o.n, Workers: o.workers})
	line("deployed-3call-many/postgres", deployedConfig{N: o.n, Workers: o.workers, Mode: cycleMode{ranges: o.ranges}})
	if o.deployed1M {
		line("deployed-1M/postgres", deployedConfig{N: o.n, Workers: o.workers, Waiting: deployedWaiting, Results: o.deployedResults,
			Mode: cycleMode{final: true, thenLease: true}})
	}
	add("deployed", "river/after", "jobs/s", river)
}

// benchDeployed starts the built coordinator's serve as a process of its
// own on dbURL (prefetcher on, synthetic source), adds the ranges with its
// command line, and times the workers, in this process over loopback,
// doing cfg.N cycles.
func benchDeployed(ctx context.Context, dbURL, dir string, cfg deployedConfig) (_ result, err error) {
	p, err := startServe(ctx, serveConfig{DB: dbURL, Data: filepath.Join(dir, "data")})
	if err != nil {
		return result{}, err
	}
	defer func() {
		if stopErr := p.Stop(); err == nil {
			err = stopErr
		}
	}()
	// The nodes first, the ranges last, as runPipeline does. The cycles
	// stream nothing, so the prefetcher fetches only at its idle passes
	// (every 2 s): the leased ranges' chunks, and 4 ranges ahead. Adding
	// a million ranges takes about 20 s, and those passes meanwhile fetch
	// ahead for the 1M line too: 4 ranges a pass, next to nothing.
	clients, err := p.Clients(ctx, "w", cfg.Workers, 1)
	if err != nil {
		return result{}, err
	}
	waiting := max(cfg.Waiting, cfg.N)
	t := time.Now()
	if err := addDeployedRanges(ctx, p, dbURL, waiting); err != nil {
		return result{}, err
	}
	added := time.Since(t)
	var stored time.Duration
	if cfg.Results > 0 {
		t = time.Now()
		if err := storeResults(ctx, dbURL, cfg.Results); err != nil {
			return result{}, err
		}
		stored = time.Since(t)
	}
	profiled := p.profile(ctx, fmt.Sprintf("deployed-%d-%d-final%v", cfg.Workers, cfg.Waiting, cfg.Mode.final), 3)
	wal, err := startWAL(ctx, dbURL)
	if err != nil {
		return result{}, err
	}
	r, err := timeCycles(ctx, clients, cfg.N, cfg.Mode)
	if err != nil {
		return result{}, err
	}
	walPer, err := wal.per(ctx, int64(cfg.N), "cycle")
	if err != nil {
		return result{}, err
	}
	r.detail += "; " + walPer
	if err := <-profiled; err != nil {
		return result{}, err
	}
	if waiting == cfg.N {
		err = p.allDone(ctx, deployedGroup)
	} else {
		r.detail += fmt.Sprintf("; %d ranges waiting, added in %s", waiting, added.Round(time.Millisecond))
	}
	if cfg.Results > 0 {
		r.detail += fmt.Sprintf("; %d results stored before, in %s", cfg.Results, stored.Round(time.Millisecond))
	}
	if cfg.Mode.ranges > 1 {
		r.detail += fmt.Sprintf("; %d ranges a worker", cfg.Mode.ranges)
	}
	rss, _ := p.RSS()
	r.detail += fmt.Sprintf("; coordinator process, RSS %.0f MiB", mib(rss))
	return r, err
}

// addDeployedRanges adds the group, ranges and chunks of one article,
// and n ranges with the coordinator's command line, then takes
// PostgreSQL's statistics of them, as the in-process lines do.
func addDeployedRanges(ctx context.Context, p *serveProc, dbURL string, n int) error {
	if _, err := p.CLI(ctx, "group", "add", deployedGroup, "--range-size", "1", "--chunk-size", "1"); err != nil {
		return err
	}
	if _, err := p.CLI(ctx, "range", "add", deployedGroup, "1", fmt.Sprint(n)); err != nil {
		return err
	}
	return analyze(ctx, dbURL)
}

// analyze runs ANALYZE on dbURL's schema.
func analyze(ctx context.Context, dbURL string) error {
	return execOn(ctx, dbURL, "ANALYZE")
}

// storeResults stores n items of one article each in the deployed group,
// with SQL in one transaction, as if its earlier ranges had posted them,
// and moves the release builder's cursor past them in that transaction:
// they are results at rest, which the builder has read. The API would
// take hours to post as many.
func storeResults(ctx context.Context, dbURL string, n int) error {
	c, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	tx, err := c.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.Background())
	// Article numbers past the ranges', so nothing overlaps what the
	// workers post.
	_, err = tx.Exec(ctx, `INSERT INTO items (xid, group_id, range_id, from_n, to_n, key, value)
		SELECT CAST(CAST(pg_current_xact_id() AS TEXT) AS BIGINT), g.id, 0, 100000000 + a, 100000000 + a, CAST(a AS TEXT), $2
		FROM groups g, generate_series(1, $3::bigint) a WHERE g.name = $1`, deployedGroup, string(cycleValue), n)
	if err != nil {
		return fmt.Errorf("store results: %w", err)
	}
	_, err = tx.Exec(ctx, `INSERT INTO feed_cursors (consumer, feed_after, items, at_us)
		SELECT $1, CAST(max(xid) AS TEXT) || '.' || CAST(max(id) AS TEXT), count(*), 0 FROM items
		ON CONFLICT (consumer) DO UPDATE SET feed_after = excluded.feed_after, items = excluded.items`, release.DefaultConsumer)
	if err != nil {
		return fmt.Errorf("store results: release cursor: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	return analyze(ctx, dbURL)
}
