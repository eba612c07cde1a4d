package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/usenet"
)

const ingestGroup = "alt.binaries.bench.ingest"

// ingestItems returns n items whose values are collator items (a binary
// with 2 to 33 parts): about 500 B to 4 KiB of JSON each.
func ingestItems(n int) (items []batch.Item, minSize, maxSize, total int64) {
	return ingestItemsAt(n, 0)
}

// ingestItemsAt is ingestItems numbering its binaries from first, so that
// items made with different firsts are different binaries. The values are
// the bytes json.Marshal writes for the usenet.Binary (appendBinary;
// TestAppendBinary checks it), written without reflection: the load makes
// ten a cycle on the cores it measures.
func ingestItemsAt(n, first int) (items []batch.Item, minSize, maxSize, total int64) {
	rng := rand.New(rand.NewPCG(1, 2))
	items = make([]batch.Item, n)
	minSize = 1 << 62
	// 40 article numbers a binary, more than its 33 parts at most: the
	// binaries of different firsts share no article.
	article := int64(1_000_000) + int64(first)*40
	for j := range items {
		b := ingestBinary(first+j, rng, &article)
		v := appendBinary(nil, &b)
		items[j] = batch.Item{Key: b.Key(), Value: v}
		size := int64(len(v))
		minSize, maxSize, total = min(minSize, size), max(maxSize, size), total+size
	}
	return items, minSize, maxSize, total
}

// ingestBinary is binary i of the ingest items, of 2 to 33 parts from
// *article on.
func ingestBinary(i int, rng *rand.Rand, article *int64) usenet.Binary {
	parts := 2 + rng.IntN(32)
	n := strconv.Itoa(i)
	part := fmt.Sprintf("%02d", i%27+1)
	b := usenet.Binary{
		Subject: "Quiet.River." + n + ".1080p.WEB-DL.x264-SYN [" + part + `/27] - "Quiet.River.` + n + ".part" + part + `.rar" yEnc`,
		Name:    "Quiet.River." + n + ".part" + part + ".rar",
		Poster:  "poster <poster@example.invalid>", Group: ingestGroup,
		Date: "Mon, 01 Jan 2024 12:00:00 +0000", Total: parts, Complete: true,
		Parts: make([]usenet.Part, 0, parts),
	}
	for p := 1; p <= parts; p++ {
		*article++
		b.Parts = append(b.Parts, usenet.Part{N: p, Article: *article,
			MessageID: "<" + strconv.FormatInt(*article, 10) + "@" + ingestGroup + ".synthetic>", Bytes: 739_000 + int64(rng.IntN(2000))})
	}
	return b
}

// appendBinary appends b as json.Marshal encodes it.
func appendBinary(dst []byte, b *usenet.Binary) []byte {
	dst = append(dst, `{"subject":`...)
	dst = appendJSONString(dst, b.Subject)
	dst = append(dst, `,"name":`...)
	dst = appendJSONString(dst, b.Name)
	dst = append(dst, `,"poster":`...)
	dst = appendJSONString(dst, b.Poster)
	dst = append(dst, `,"group":`...)
	dst = appendJSONString(dst, b.Group)
	dst = append(dst, `,"date":`...)
	dst = appendJSONString(dst, b.Date)
	dst = append(dst, `,"total":`...)
	dst = strconv.AppendInt(dst, int64(b.Total), 10)
	dst = append(dst, `,"complete":`...)
	dst = strconv.AppendBool(dst, b.Complete)
	dst = append(dst, `,"parts":`...)
	if b.Parts == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i, p := range b.Parts {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"n":`...)
			dst = strconv.AppendInt(dst, int64(p.N), 10)
			dst = append(dst, `,"article":`...)
			dst = strconv.AppendInt(dst, p.Article, 10)
			dst = append(dst, `,"messageId":`...)
			dst = appendJSONString(dst, p.MessageID)
			dst = append(dst, `,"bytes":`...)
			dst = strconv.AppendInt(dst, p.Bytes, 10)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

// appendJSONString appends s as json.Marshal encodes a string: printable
// ASCII as it is but for the escapes of ", \\, <, > and &; a string with
// anything else is left to json.Marshal.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] >= 0x80 {
			q, _ := json.Marshal(s) // a string always encodes
			return append(dst, q...)
		}
	}
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '<', '>', '&':
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

// benchIngest posts batches batches of the items through the batch
// endpoint, one after another, each to a range of its own leased first;
// only the POST is timed. No prefetcher runs: nobody streams.
func benchIngest(ctx context.Context, dbURL, dir string, batches int, items []batch.Item) (result, error) {
	c, err := startCoord(ctx, coordConfig{DB: dbURL, Dir: dir})
	if err != nil {
		return result{}, err
	}
	defer c.Close()
	size := int64(len(items))
	if _, err := c.store.AddGroup(ctx, grouplease.Group{Name: ingestGroup, RangeSize: size, ChunkSize: size}); err != nil {
		return result{}, err
	}
	if _, err := c.store.AddRanges(ctx, grouplease.NewRanges{Group: ingestGroup, From: 1, To: int64(batches) * size}); err != nil {
		return result{}, err
	}
	cl, err := c.client(ctx, "ingest", 1)
	if err != nil {
		return result{}, err
	}
	var posting time.Duration
	for range batches {
		l, ok, err := cl.Lease(ctx)
		if err != nil || !ok {
			return result{}, fmt.Errorf("lease: %v (granted %v)", err, ok)
		}
		r := l.Range
		start := time.Now()
		res, err := cl.PostBatch(ctx, r.ID, l.Token, batch.Batch{From: r.Next, To: r.End, Headers: r.End - r.Next + 1, Items: items})
		posting += time.Since(start)
		if err != nil {
			return result{}, fmt.Errorf("batch: %w", err)
		}
		if res.Duplicate || res.Next != r.End+1 {
			return result{}, fmt.Errorf("batch: answered %+v", res)
		}
		if err := cl.Finish(ctx, r.ID, l.Token); err != nil {
			return result{}, fmt.Errorf("finish: %w", err)
		}
	}
	n := batches * len(items)
	return result{rate: float64(n) / posting.Seconds(), elapsed: posting, detail: fmt.Sprintf("%d batches of %d items", batches, len(items))}, nil
}

// benchCopy is ingest's baseline: the same rows, batches times, each a
// COPY (pgx CopyFrom, binary) in a transaction of its own into a table of
// the items table's shape (feedItemsTable), and nothing else: no fence, no
// batch record, no HTTP, no JSON.
func benchCopy(ctx context.Context, dbURL string, batches int, items []batch.Item) (result, error) {
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return result{}, err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, feedItemsTable); err != nil {
		return result{}, err
	}
	var copying time.Duration
	for b := range batches {
		start := time.Now()
		if err := copyFeedItems(ctx, pool, int64(b+1), 1, int64(b+1), int64(b*len(items)+1), int64((b+1)*len(items)), items); err != nil {
			return result{}, err
		}
		copying += time.Since(start)
	}
	n := batches * len(items)
	return result{rate: float64(n) / copying.Seconds(), elapsed: copying, detail: fmt.Sprintf("%d COPYs of %d rows", batches, len(items))}, nil
}

// feedItemsTable is the items table of sqlstore/migrations/0001_init.sql
// on PostgreSQL, its columns and indexes: the feed's two indexes are what
// any table serving the feed keeps up, so the baseline pays for them too.
// Until issue 11 ingest's baseline was raw_items (and the pipeline's until
// issue 30): the primary key only and no xid column, so the ratio made
// our side alone pay for two indexes. Since issue 30 its values are
// compressed with lz4 where the server has it, as the items table's are
// (migration 16): the ratios then measure the design, not the setting.
const feedItemsTable = `CREATE TABLE feed_items (id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
	xid BIGINT NOT NULL, group_id BIGINT NOT NULL, range_id BIGINT NOT NULL,
	from_n BIGINT NOT NULL, to_n BIGINT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL);
CREATE INDEX feed_items_feed ON feed_items (xid, id);
CREATE INDEX feed_items_group_feed ON feed_items (group_id, xid, id);
DO $$
BEGIN
	IF EXISTS (SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN
		EXECUTE 'ALTER TABLE feed_items ALTER COLUMN value SET COMPRESSION lz4';
	END IF;
END
$$`

// copyFeedItems stores items with one COPY into feed_items, in a
// transaction of its own. xid stands for the transaction's id, which the
// items table's rows carry: one number a batch, rising from batch to batch
// as transaction ids do.
func copyFeedItems(ctx context.Context, pool *pgxpool.Pool, xid, group, rangeID, from, to int64, items []batch.Item) error {
	return copyRows(ctx, pool, "feed_items", []string{"xid", "group_id", "range_id", "from_n", "to_n", "key", "value"},
		items, func(it batch.Item) []any { return []any{xid, group, rangeID, from, to, it.Key, string(it.Value)} })
}

// copyRows COPYs one row per item, row(item) in the columns cols, into
// table, and checks that every row went in.
func copyRows(ctx context.Context, pool *pgxpool.Pool, table string, cols []string, items []batch.Item, row func(batch.Item) []any) error {
	rows := make([][]any, len(items))
	for i, it := range items {
		rows[i] = row(it)
	}
	n, err := pool.CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromRows(rows))
	if err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	if n != int64(len(items)) {
		return fmt.Errorf("copy: %d rows of %d", n, len(items))
	}
	return nil
}
