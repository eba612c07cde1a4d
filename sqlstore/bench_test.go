package sqlstore_test

import (
	"bytes"
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
	"github.com/edgeindex/edgeindex/edgeframe"
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
// items and finish it. "store" goes through sqlstore; "rawsql" is a job
// queue written the obvious way (rawCycle), the baseline measured in the
// same run. The bench's River line is the other baseline (cd bench && go
// run . -only river,edgeindex).
func BenchmarkLeaseCycle(b *testing.B) {
	for _, be := range backends {
		for _, mode := range []string{"store", "rawsql"} {
			b.Run(be.Name+"/"+mode, func(b *testing.B) {
				s := benchStore(b, be.URL(b), b.N+64, 100)
				items := benchItems("k", 100)
				var raw *rawCycle
				if mode == "rawsql" {
					raw = newRawCycle(b, s, b.N+64)
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

// rawCycle is the baseline: a job queue written the obvious way, on
// tables of its own, as one would without this design: a job is claimed
// with one UPDATE of the first pending row (SKIP LOCKED on PostgreSQL),
// and its results are written and the job marked done, fenced by its
// worker and attempt, in one transaction. It keeps no batch record, no
// resume point, no lane progress and no feed order; the store's cycle
// does, so the ratio is what those cost.
type rawCycle struct {
	db       *sqlx.DB
	postgres bool
}

// rawTables are the baseline's queue and results.
const rawTables = `CREATE TABLE raw_jobs (id BIGINT PRIMARY KEY, state TEXT NOT NULL, worker TEXT, attempt BIGINT NOT NULL, locked_until BIGINT);
CREATE INDEX raw_jobs_pending ON raw_jobs (id) WHERE state = 'pending';
CREATE TABLE raw_results (job_id BIGINT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL)`

// newRawCycle makes the baseline's tables in s's database, with n jobs.
func newRawCycle(b *testing.B, s *sqlstore.Store, n int) *rawCycle {
	r := &rawCycle{db: s.DB(), postgres: s.Backend() == "postgres"}
	for _, stmt := range strings.Split(rawTables, ";\n") {
		_, err := r.db.ExecContext(b.Context(), stmt)
		require.NoError(b, err)
	}
	_, err := r.db.ExecContext(b.Context(), r.db.Rebind(`WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < ?)
		INSERT INTO raw_jobs (id, state, attempt) SELECT i, 'pending', 0 FROM seq`), n)
	require.NoError(b, err)
	return r
}

func (r *rawCycle) cycle(ctx context.Context, name string, items []batch.Item) error {
	skipLocked := ""
	if r.postgres {
		skipLocked = "FOR UPDATE SKIP LOCKED"
	}
	var id, attempt int64
	err := r.db.QueryRowContext(ctx, r.db.Rebind(`UPDATE raw_jobs SET state = 'running', worker = ?, attempt = attempt + 1, locked_until = ?
		WHERE id = (SELECT id FROM raw_jobs WHERE state = 'pending' ORDER BY id LIMIT 1 `+skipLocked+`)
		RETURNING id, attempt`), name, time.Now().Add(time.Minute).UnixMicro()).Scan(&id, &attempt)
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
	if r.postgres {
		rows := make([][]any, len(items))
		for i, it := range items {
			rows[i] = []any{id, it.Key, string(it.Value)}
		}
		if err := rawCopy(ctx, conn, "raw_results", []string{"job_id", "key", "value"}, rows); err != nil {
			return err
		}
	} else {
		var sb strings.Builder
		sb.WriteString("INSERT INTO raw_results (job_id, key, value) VALUES ")
		args := make([]any, 0, len(items)*3)
		for i, it := range items {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString("(?,?,?)")
			args = append(args, id, it.Key, string(it.Value))
		}
		if _, err := tx.ExecContext(ctx, sb.String(), args...); err != nil {
			return err
		}
	}
	res, err := tx.ExecContext(ctx, r.db.Rebind("UPDATE raw_jobs SET state = 'done', locked_until = NULL WHERE id = ? AND worker = ? AND attempt = ?"), id, name, attempt)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("raw: job %d not done (%d rows): %v", id, n, err)
	}
	return tx.Commit()
}

// itemColumns are the columns of the items table that rawCopy fills.
var itemColumns = []string{"xid", "group_id", "range_id", "from_n", "to_n", "key", "value"}

// rawCopy COPYs rows into table's cols with pgx's binary COPY on conn, in
// the transaction conn runs.
func rawCopy(ctx context.Context, conn *sql.Conn, table string, cols []string, rows [][]any) error {
	return conn.Raw(func(dc any) error {
		_, err := dc.(*stdlib.Conn).Conn().CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromRows(rows))
		return err
	})
}

// BenchmarkBatchIngest stores one batch of 10,000 items per iteration.
// "rawcopy" (PostgreSQL) is the baseline: a bare COPY of the same rows in
// one transaction, measured in the same run.
func BenchmarkBatchIngest(b *testing.B) {
	items := benchItems("item", 10_000)
	for _, be := range backends {
		b.Run(be.Name+"/store", func(b *testing.B) { benchPut(b, be.URL(b), items, false) })
		if be.Name == "postgres" {
			b.Run(be.Name+"/rawcopy", func(b *testing.B) { benchRawCopy(b, be.URL(b), items) })
		}
	}
}

// BenchmarkBodyIngest is the coordinator's side of the bench's ingest
// line on PostgreSQL: per iteration, one body of 10,000 items of a
// collator item's size (some 2.2 KB of JSON, 22 MB in all) decoded as the
// coordinator decodes it (edgeframe.DecodeBatch) and stored. "rawcopy",
// the baseline, is a bare COPY of the same rows.
func BenchmarkBodyIngest(b *testing.B) {
	benchAgainstCopy(b, "decoded", collatorItems(b, 10_000), true)
}

// BenchmarkRoundIngest stores one batch of 100 items of a collator
// item's size per iteration, the pipeline's batch: fewer items than take
// the COPY, so one statement writes them with the range's update (the
// optimistic put). "rawcopy", the baseline, is a bare COPY of the same
// rows in a transaction of its own.
func BenchmarkRoundIngest(b *testing.B) {
	benchAgainstCopy(b, "store", collatorItems(b, 100), false)
}

// benchAgainstCopy runs benchPut of items (from a body with body) as
// postgres/name, and benchRawCopy of them as postgres/rawcopy.
func benchAgainstCopy(b *testing.B, name string, items []batch.Item, body bool) {
	for _, be := range backends {
		if be.Name == "postgres" {
			b.Run(be.Name+"/"+name, func(b *testing.B) { benchPut(b, be.URL(b), items, body) })
			b.Run(be.Name+"/rawcopy", func(b *testing.B) { benchRawCopy(b, be.URL(b), items) })
		}
	}
}

// collatorItems returns n items of a collator item's size: some 2.2 KB of
// JSON each.
func collatorItems(b *testing.B, n int) []batch.Item {
	items := make([]batch.Item, n)
	for i := range items {
		v, err := json.Marshal(map[string]any{"subject": fmt.Sprintf(`[%02d/40] - "release.part%02d.rar" yEnc (1/50)`, i%40, i%40),
			"parts": strings.Repeat(`{"n":1,"article":1000001,"message_id":"<1000001@alt.binaries.bench>","bytes":739123},`, 24)})
		require.NoError(b, err)
		items[i] = batch.Item{Key: fmt.Sprintf("k%d", i), Value: v}
	}
	return items
}

// benchPut Puts items as one batch per iteration, each to a range of its
// own; with body, from the batch's body, decoded inside the timer.
func benchPut(b *testing.B, url string, items []batch.Item, body bool) {
	n := int64(len(items))
	s := benchStore(b, url, b.N, n)
	ctx := b.Context()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		l, err := s.Grant(ctx, "bench", time.Hour)
		require.NoError(b, err)
		bt := batch.Batch{From: l.Range.Start, To: l.Range.End, Headers: n, Items: items}
		var raw []byte
		if body {
			raw, err = edgeframe.MarshalBatch(bt)
			require.NoError(b, err)
			b.SetBytes(int64(len(raw)))
		}
		b.StartTimer()
		if body {
			bt, err = edgeframe.DecodeBatch(bytes.NewReader(raw), 0)
			require.NoError(b, err)
		}
		_, err = s.Put(ctx, l.Range.ID, lease.Fence{Node: "bench", Token: l.Token}, bt)
		require.NoError(b, err)
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "items/s")
}

// benchRawCopy COPYs items' rows into the items table per iteration, in
// a transaction of its own, and nothing else.
func benchRawCopy(b *testing.B, url string, items []batch.Item) {
	n := len(items)
	s := benchStore(b, url, 1, int64(n))
	ctx := b.Context()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		conn, err := s.DB().Conn(ctx)
		require.NoError(b, err)
		tx, err := conn.BeginTx(ctx, nil)
		require.NoError(b, err)
		rows := make([][]any, n)
		for i, it := range items {
			rows[i] = []any{1, 1, 1, 1, n, it.Key, string(it.Value)}
		}
		require.NoError(b, rawCopy(ctx, conn, "items", itemColumns, rows))
		require.NoError(b, tx.Commit())
		require.NoError(b, conn.Close())
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "items/s")
}
