package main

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// benchRawSQL is the floor of what the database does for a cycle, written
// the obvious way and sharing nothing with edgeindex's schema or
// statements: one table of n rows; workers goroutines each claim the
// lowest pending row with SKIP LOCKED, insert one result row, and mark the
// row done: three autocommitted statements, three transactions, as the
// edgeindex cycle has; no counters.
func benchRawSQL(ctx context.Context, dbURL string, n, workers int) (result, error) {
	pool, err := openPool(ctx, dbURL, workers+2)
	if err != nil {
		return result{}, err
	}
	defer pool.Close()
	if err := createRawJobs(ctx, pool, n); err != nil {
		return result{}, err
	}
	var cycles atomic.Int64
	elapsed, err := parallel(ctx, workers, func(w int) error {
		for ctx.Err() == nil {
			done, err := rawCycle(ctx, pool, w)
			if done || err != nil {
				return err
			}
			cycles.Add(1)
		}
		return nil
	})
	if err != nil {
		return result{}, err
	}
	var done int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM raw_jobs WHERE state = 'done'`).Scan(&done); err != nil {
		return result{}, err
	}
	if done != int64(n) || cycles.Load() != int64(n) {
		return result{}, fmt.Errorf("raw sql: %d cycles, %d rows done, want %d", cycles.Load(), done, n)
	}
	return result{rate: float64(n) / elapsed.Seconds(), elapsed: elapsed, detail: fmt.Sprintf("%d rows", n)}, nil
}

// createRawJobs makes benchRawSQL's tables, with n pending jobs.
func createRawJobs(ctx context.Context, pool *pgxpool.Pool, n int) error {
	for _, q := range []string{
		`CREATE TABLE raw_jobs (id BIGSERIAL PRIMARY KEY, state TEXT NOT NULL DEFAULT 'pending', worker INT)`,
		`CREATE INDEX raw_jobs_pending ON raw_jobs (id) WHERE state = 'pending'`,
		`CREATE TABLE raw_results (id BIGSERIAL PRIMARY KEY, job_id BIGINT NOT NULL, value TEXT NOT NULL)`,
		fmt.Sprintf(`INSERT INTO raw_jobs (state) SELECT 'pending' FROM generate_series(1, %d)`, n),
		`ANALYZE raw_jobs`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// rawCycle is one cycle of worker w: claim the lowest pending job, store
// its result, mark it done. It reports done when no job is pending.
func rawCycle(ctx context.Context, pool *pgxpool.Pool, w int) (done bool, err error) {
	var id int64
	err = pool.QueryRow(ctx, `UPDATE raw_jobs SET state = 'leased', worker = $1
		WHERE id = (SELECT id FROM raw_jobs WHERE state = 'pending' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
		RETURNING id`, w).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if _, err := pool.Exec(ctx, `INSERT INTO raw_results (job_id, value) VALUES ($1, $2)`, id, `{"subject":"bench","parts":1}`); err != nil {
		return false, err
	}
	if _, err := pool.Exec(ctx, `UPDATE raw_jobs SET state = 'done' WHERE id = $1 AND state = 'leased' AND worker = $2`, id, w); err != nil {
		return false, err
	}
	return false, nil
}
