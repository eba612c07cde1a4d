package sqlstore_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// benchParallelism makes RunParallel start 32 goroutines, whatever GOMAXPROCS is.
func benchParallelism(b *testing.B) {
	b.SetParallelism(max(1, 32/runtime.GOMAXPROCS(0)))
}

// benchStore opens a new store with n ranges of size articles in one
// unordered group.
func benchStore(b *testing.B, url string, n int, size int64) *sqlstore.Store {
	b.Helper()
	s := open(b, url, sqlstore.Config{})
	ctx := b.Context()
	_, err := s.AddGroup(ctx, grouplease.Group{Name: "bench", RangeSize: size, ChunkSize: size})
	require.NoError(b, err)
	_, err = s.AddRanges(ctx, grouplease.NewRanges{Group: "bench", From: 1, To: int64(n) * size})
	require.NoError(b, err)
	return s
}

// benchItems returns n items with a value of about 190 bytes of JSON.
func benchItems(prefix string, n int) []batch.Item {
	out := make([]batch.Item, n)
	for i := range out {
		v, _ := json.Marshal(map[string]any{
			"subject": fmt.Sprintf(`[%02d/40] - "release.part%02d.rar" yEnc (1/50)`, i%40, i%40),
			"poster":  "poster@example.invalid", "parts": 50, "bytes": 37_500_000, "seen": i,
		})
		out[i] = batch.Item{Key: fmt.Sprintf("%s-%d", prefix, i), Value: v}
	}
	return out
}

// BenchmarkLeaseCycle: 32 workers each lease a range, post one batch of 100
// items and finish it. "store" goes through sqlstore; "rawsql" runs the
// same statements directly, the baseline measured in the same run.
func BenchmarkLeaseCycle(b *testing.B) {
	for _, be := range backends {
		for _, mode := range []string{"store", "rawsql"} {
			b.Run(be.Name+"/"+mode, func(b *testing.B) {
				s := benchStore(b, be.URL(b), b.N+64, 100)
				items := benchItems("k", 100)
				var raw *rawCycle
				if mode == "rawsql" {
					raw = newRawCycle(s)
				}
				var ids atomic.Int64
				benchParallelism(b)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					ctx := context.Background()
					name := fmt.Sprintf("n%d", ids.Add(1))
					for pb.Next() {
						var err error
						if raw != nil {
							err = raw.cycle(ctx, name, items)
						} else {
							err = storeCycle(ctx, s, name, items)
						}
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cycles/s")
			})
		}
	}
}

func storeCycle(ctx context.Context, s *sqlstore.Store, name string, items []batch.Item) error {
	l, err := s.Grant(ctx, name, time.Minute)
	if err != nil {
		return err
	}
	f := lease.Fence{Node: name, Token: l.Token}
	if _, err := s.Put(ctx, l.Range.ID, f, batch.Batch{From: l.Range.Start, To: l.Range.End, Headers: 100, Items: items}); err != nil {
		return err
	}
	return s.Finish(ctx, l.Range.ID, f)
}

// rawCycle is the baseline: the store's statements, written out and run
// directly with database/sql, no scanning into domain types, no checks in Go.
type rawCycle struct {
	db       *sqlx.DB
	postgres bool
	now      string
}

func newRawCycle(s *sqlstore.Store) *rawCycle {
	r := &rawCycle{db: s.DB(), postgres: s.Backend() == "postgres", now: "?"}
	if r.postgres {
		r.now = "COALESCE(CAST(? AS BIGINT), CAST(EXTRACT(EPOCH FROM now()) * 1000000 AS BIGINT))"
	}
	return r
}

func (r *rawCycle) q(s string) string {
	s = strings.ReplaceAll(s, "{now}", r.now)
	if r.postgres {
		s = strings.ReplaceAll(s, "{skiplocked}", "FOR NO KEY UPDATE SKIP LOCKED")
		s = strings.ReplaceAll(s, "{forupdate}", "FOR NO KEY UPDATE")
		s = strings.ReplaceAll(s, "{grantindex}", "")
		return sqlx.Rebind(sqlx.DOLLAR, s)
	}
	return strings.NewReplacer("{skiplocked}", "", "{forupdate}", "", "{grantindex}", "INDEXED BY ranges_grant").Replace(s)
}

func (r *rawCycle) nowArg() any {
	if r.postgres {
		return nil
	}
	return time.Now().UnixMicro()
}

func (r *rawCycle) cycle(ctx context.Context, name string, items []batch.Item) error {
	now := r.nowArg()
	var id, group, start, end, token int64
	err := r.db.QueryRowContext(ctx, r.q(`UPDATE ranges SET state = 'leased', token = token + 1, node = ?, lane_token = 0, expires_us = {now} + ?
		WHERE id = (SELECT id FROM ranges {grantindex} WHERE NOT ordered AND state IN ('pending', 'leased') AND (state = 'pending' OR expires_us < {now})
			ORDER BY lane_rank, start_n LIMIT 1 {skiplocked})
		RETURNING id, group_id, start_n, end_n, token`), name, now, int64(60e6), now).Scan(&id, &group, &start, &end, &token)
	if err != nil {
		return err
	}
	conn, err := r.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var next int64
	if err := tx.QueryRowContext(ctx, r.q("SELECT next_n FROM ranges WHERE id = ? AND state = 'leased' AND node = ? AND token = ? {forupdate}"), id, name, token).Scan(&next); err != nil {
		return err
	}
	xid := "0"
	if r.postgres {
		xid = "CAST(CAST(pg_current_xact_id() AS TEXT) AS BIGINT)"
	}
	var x int64
	if err := tx.QueryRowContext(ctx, r.q(`INSERT INTO batches (range_id, node, from_n, to_n, headers, items, at_us) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING `+xid),
		id, name, start, end, 100, len(items), time.Now().UnixMicro()).Scan(&x); err != nil {
		return err
	}
	if r.postgres {
		rows := make([][]any, len(items))
		for i, it := range items {
			rows[i] = []any{x, group, id, start, end, it.Key, string(it.Value)}
		}
		if err := rawCopy(ctx, conn, rows); err != nil {
			return err
		}
	} else {
		var sb strings.Builder
		sb.WriteString("INSERT INTO items (xid, group_id, range_id, from_n, to_n, key, value) VALUES ")
		args := make([]any, 0, len(items)*7)
		for i, it := range items {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString("(?,?,?,?,?,?,?)")
			args = append(args, x, group, id, start, end, it.Key, string(it.Value))
		}
		if _, err := tx.ExecContext(ctx, sb.String(), args...); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, r.q("UPDATE ranges SET next_n = ?, headers = headers + ? WHERE id = ?"), end+1, 100, id); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	tx, err = r.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var headers int64
	var lane string
	if err := tx.QueryRowContext(ctx, r.q(`UPDATE ranges SET state = 'done', node = NULL, expires_us = NULL
		WHERE id = ? AND state = 'leased' AND node = ? AND token = ? AND next_n > end_n RETURNING headers, lane`), id, name, token).Scan(&headers, &lane); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, r.q("UPDATE lanes SET headers = headers + ?, ranges_done = ranges_done + 1 WHERE group_id = ? AND lane = ?"), headers, group, lane); err != nil {
		return err
	}
	return tx.Commit()
}

// rawCopy COPYs rows into items with pgx's binary COPY on conn, in the
// transaction conn runs.
func rawCopy(ctx context.Context, conn *sql.Conn, rows [][]any) error {
	return conn.Raw(func(dc any) error {
		_, err := dc.(*stdlib.Conn).Conn().CopyFrom(ctx, pgx.Identifier{"items"},
			[]string{"xid", "group_id", "range_id", "from_n", "to_n", "key", "value"}, pgx.CopyFromRows(rows))
		return err
	})
}

// BenchmarkBatchIngest stores one batch of 10,000 items per iteration.
// "rawcopy" (PostgreSQL) is the baseline: a bare COPY of the same rows in
// one transaction, measured in the same run.
func BenchmarkBatchIngest(b *testing.B) {
	const n = 10_000
	items := benchItems("item", n)
	for _, be := range backends {
		b.Run(be.Name+"/store", func(b *testing.B) {
			s := benchStore(b, be.URL(b), b.N, n)
			ctx := b.Context()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				l, err := s.Grant(ctx, "bench", time.Hour)
				require.NoError(b, err)
				b.StartTimer()
				_, err = s.Put(ctx, l.Range.ID, lease.Fence{Node: "bench", Token: l.Token},
					batch.Batch{From: l.Range.Start, To: l.Range.End, Headers: n, Items: items})
				require.NoError(b, err)
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "items/s")
		})
		if be.Name != "postgres" {
			continue
		}
		b.Run(be.Name+"/rawcopy", func(b *testing.B) {
			s := benchStore(b, be.URL(b), 1, n)
			ctx := b.Context()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				conn, err := s.DB().Conn(ctx)
				require.NoError(b, err)
				tx, err := conn.BeginTx(ctx, nil)
				require.NoError(b, err)
				rows := make([][]any, len(items))
				for i, it := range items {
					rows[i] = []any{1, 1, 1, 1, n, it.Key, string(it.Value)}
				}
				require.NoError(b, rawCopy(ctx, conn, rows))
				require.NoError(b, tx.Commit())
				require.NoError(b, conn.Close())
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "items/s")
		})
	}
}
