package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// noopArgs is River's job: it does nothing.
type noopArgs struct{}

func (noopArgs) Kind() string { return "noop" }

// benchRiver inserts n no-op jobs with InsertMany, then starts a River
// client with MaxWorkers workers and times from its start until every job's
// completion has been reported (River reports a completion once its
// completer has stored it).
//
// cooldown is River's FetchCooldown, and the poll interval is ten times
// it: River's own benchmark (river bench) uses 2 ms and 20 ms, "much
// better than the client's default values". With the defaults (100 ms,
// 1 s) a client fetches at most MaxWorkers jobs per 100 ms, so 32 workers
// top out at 320 jobs/s whatever the database can do.
func benchRiver(ctx context.Context, dbURL string, n, workers int, cooldown time.Duration) (result, error) {
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return result{}, err
	}
	defer pool.Close()
	client, err := newRiverClient(ctx, pool, workers, cooldown)
	if err != nil {
		return result{}, err
	}
	if err := insertNoops(ctx, client, n); err != nil {
		return result{}, err
	}
	if _, err := pool.Exec(ctx, "ANALYZE river_job"); err != nil {
		return result{}, err
	}
	events, cancel := client.SubscribeConfig(&river.SubscribeConfig{Kinds: []river.EventKind{river.EventKindJobCompleted}, ChanSize: n + 1})
	defer cancel()

	wal, err := startWAL(ctx, dbURL)
	if err != nil {
		return result{}, err
	}
	if err := client.Start(ctx); err != nil {
		return result{}, err
	}
	start := time.Now() // after Start, as River's own benchmark times it
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		client.Stop(sctx)
	}()
	if err := awaitCompleted(ctx, events, n); err != nil {
		return result{}, err
	}
	elapsed := time.Since(start)
	var completed int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE state = 'completed'").Scan(&completed); err != nil {
		return result{}, err
	}
	if completed != n {
		return result{}, fmt.Errorf("river: %d completion events but %d completed jobs in the table, want %d", n, completed, n)
	}
	walPer, err := wal.per(ctx, int64(n), "job")
	if err != nil {
		return result{}, err
	}
	return result{rate: float64(n) / elapsed.Seconds(), elapsed: elapsed, detail: fmt.Sprintf("%d jobs, FetchCooldown %s, %s", n, cooldown, walPer)}, nil
}

// newRiverClient migrates River's schema and makes a client of workers
// no-op workers; cooldown is its FetchCooldown (see benchRiver).
func newRiverClient(ctx context.Context, pool *pgxpool.Pool, workers int, cooldown time.Duration) (*river.Client[pgx.Tx], error) {
	driver := riverpgxv5.New(pool)
	mig, err := rivermigrate.New(driver, nil)
	if err != nil {
		return nil, err
	}
	if _, err := mig.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return nil, fmt.Errorf("river migrate: %w", err)
	}
	ws := river.NewWorkers()
	river.AddWorker(ws, river.WorkFunc(func(context.Context, *river.Job[noopArgs]) error { return nil }))
	return river.NewClient(driver, &river.Config{
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: workers}},
		Workers:           ws,
		FetchCooldown:     cooldown,
		FetchPollInterval: 10 * cooldown,
		Logger:            slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
}

// insertNoops inserts n no-op jobs, 5000 an InsertMany.
func insertNoops(ctx context.Context, client *river.Client[pgx.Tx], n int) error {
	for i := 0; i < n; i += 5000 {
		params := make([]river.InsertManyParams, min(5000, n-i))
		for j := range params {
			params[j] = river.InsertManyParams{Args: noopArgs{}}
		}
		if _, err := client.InsertMany(ctx, params); err != nil {
			return fmt.Errorf("river insert: %w", err)
		}
	}
	return nil
}

// awaitCompleted waits for n completion events, until ctx ends or a
// timeout that grows with n passes.
func awaitCompleted(ctx context.Context, events <-chan *river.Event, n int) error {
	timeout := time.NewTimer(10*time.Minute + time.Duration(n)*time.Millisecond)
	defer timeout.Stop()
	for done := 0; done < n; {
		select {
		case <-events:
			done++
		case <-ctx.Done():
			return ctx.Err()
		case <-timeout.C:
			return fmt.Errorf("river: %d of %d jobs completed before the timeout", done, n)
		}
	}
	return nil
}
