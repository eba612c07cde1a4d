package main

import (
	"context"
	"fmt"
	"io"
	"regexp"

	"github.com/jackc/pgx/v5"
)

// statements is -statements: PostgreSQL runs with pg_stat_statements, and
// each PostgreSQL line prints the statements that took the most of the
// server's time, its setup's included.
var statements bool

// resetStatements creates pg_stat_statements on base's database when it is
// not there and empties it.
func resetStatements(ctx context.Context, base string) error {
	err := execOn(ctx, base, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements SCHEMA public",
		"SELECT public.pg_stat_statements_reset()")
	if err != nil {
		return fmt.Errorf("pg_stat_statements: %w", err)
	}
	return nil
}

var spaces = regexp.MustCompile(`\s+`)

// printStatements prints the ten statements of name's run that took the
// most execution time, with their calls, mean time and rows.
func printStatements(ctx context.Context, out io.Writer, base, name string) error {
	c, err := pgx.Connect(ctx, base)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	rows, err := c.Query(ctx, `SELECT calls, total_exec_time, rows, query FROM public.pg_stat_statements
		WHERE query NOT LIKE '%pg_stat_statements%' ORDER BY total_exec_time DESC LIMIT 10`)
	if err != nil {
		return err
	}
	defer rows.Close()
	fmt.Fprintf(out, "  statements of %s (calls, total ms, mean ms, rows):\n", name)
	for rows.Next() {
		var calls, n int64
		var total float64
		var q string
		if err := rows.Scan(&calls, &total, &n, &q); err != nil {
			return err
		}
		q = spaces.ReplaceAllString(q, " ")
		fmt.Fprintf(out, "    %8d %9.0f %7.3f %9d  %.110s\n", calls, total, total/float64(max(calls, 1)), n, q)
	}
	return rows.Err()
}
