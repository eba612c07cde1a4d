package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/blobstore"
	"github.com/edgeindex/edgeindex/coordinator"
	"github.com/edgeindex/edgeindex/edgeframe"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/internal/miniotest"
	"github.com/edgeindex/edgeindex/internal/pgtest"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/prefetch"
	"github.com/edgeindex/edgeindex/sources"
	"github.com/edgeindex/edgeindex/spool"
	"github.com/edgeindex/edgeindex/sqlstore"
)

var _ coordinator.Store = (*sqlstore.Store)(nil)

// Issue 12, deliverable 2: a chunk that coordinator A fetches into the
// bucket it shares with coordinator B wakes a stream waiting for it on B
// at once, through PostgreSQL's NOTIFY. B lists the bucket and sends
// keepalives once an hour, and its prefetcher never runs, so nothing else
// could bring the chunk to its stream within the test.
func TestSharedBucketWakesStreams(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url, bucket := pgtest.URL(t), miniotest.Store(t)
	openStore := func() *sqlstore.Store {
		st, err := sqlstore.Open(ctx, url, sqlstore.Config{})
		require.NoError(t, err)
		t.Cleanup(func() { st.Close() })
		return st
	}
	openSpool := func() *spool.Bucket {
		part, err := blobstore.Sub(bucket, "spool")
		require.NoError(t, err)
		sp, err := spool.OpenBucket(ctx, part, spool.BucketConfig{Refresh: time.Hour})
		require.NoError(t, err)
		t.Cleanup(func() { sp.Close() })
		return sp
	}
	stA, stB := openStore(), openStore()
	spA, spB := openSpool(), openSpool()

	// A fetches from a source that waits for the gate.
	synth, err := sources.NewSynthetic(sources.SyntheticConfig{})
	require.NoError(t, err)
	gate := make(chan struct{})
	var fetchedA atomic.Int32
	srcA := sources.Funcs{FetchFunc: func(ctx context.Context, group string, span lease.Span) ([]byte, error) {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		fetchedA.Add(1)
		return synth.Fetch(ctx, group, span)
	}}
	pfA, err := prefetch.New(prefetch.Config{Source: srcA, Spool: spA, Claims: stA, Targets: stA, Owner: "coord-a"})
	require.NoError(t, err)
	srcB := sources.Funcs{FetchFunc: func(context.Context, string, lease.Span) ([]byte, error) {
		t.Error("B's prefetcher fetched")
		return nil, errors.New("B does not fetch")
	}}
	pfB, err := prefetch.New(prefetch.Config{Source: srcB, Spool: spB, Claims: stB, Targets: stB, Owner: "coord-b"})
	require.NoError(t, err)
	snaps, err := blobstore.Sub(bucket, "snapshots")
	require.NoError(t, err)
	h := newHarnessOn(t, stB, func(c *coordinator.Config) {
		c.Spool, c.Shared, c.Corpus, c.Snapshots, c.Prefetcher, c.Keepalive = spB, spB, nil, snaps, pfB, time.Hour
	}, nil)
	lctx, stopListening := context.WithCancel(context.Background())
	listened := make(chan error, 1)
	go func() { listened <- h.srv.Service().ListenChunks(lctx) }()
	t.Cleanup(func() {
		stopListening()
		require.ErrorIs(t, <-listened, context.Canceled)
	})

	h.group("shared", false, 1, 50, lease.LaneHistory) // two chunks of 25
	l := h.lease(h.token)

	// Until B listens, a notification is lost: A stores a warm-up chunk
	// and marks it fetched until B has learned it.
	h.group("warmup", false, 1, 25, lease.LaneHistory)
	rs, err := stA.Ranges(ctx, grouplease.RangeFilter{Group: "warmup", Limit: 1})
	require.NoError(t, err)
	warm, span := rs[0].ID, lease.Span{From: 1, To: 25}
	require.NoError(t, spA.Put(warm, span, []byte("warm-up")))
	claimed, err := stA.ClaimChunk(ctx, warm, span, "coord-a", time.Hour)
	require.NoError(t, err)
	require.True(t, claimed)
	require.Eventually(t, func() bool {
		require.NoError(t, stA.ChunkFetched(ctx, warm, span, "coord-a"))
		time.Sleep(20 * time.Millisecond)
		return spB.Has(warm, span)
	}, 30*time.Second, time.Millisecond, "B learns a chunk A stored")

	pctx, stopPrefetch := context.WithCancel(context.Background())
	prefetched := make(chan error, 1)
	go func() { prefetched <- pfA.Run(pctx) }()
	t.Cleanup(func() { stopPrefetch(); <-prefetched })

	// B's stream answers once it waits for its first chunk.
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(sctx, "GET", fmt.Sprintf("%s/v1/ranges/%d/stream", h.http.URL, l.Range.ID), nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+h.token)
	req.Header.Set("Lease-Token", fmt.Sprint(l.Token))
	resp, err := h.http.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Zero(t, fetchedA.Load(), "the stream waits: no chunk is fetched yet")

	close(gate)
	rd, err := edgeframe.NewReader(resp.Body, edgeframe.Config{})
	require.NoError(t, err)
	var got []lease.Span
	for {
		f, err := rd.Next()
		require.NoError(t, err, "the stream on B gets the chunks A fetched, within a minute when its keepalive and listing are an hour away")
		if f.Type == edgeframe.TypeEnd {
			break
		}
		require.Equal(t, edgeframe.TypeChunk, f.Type)
		got = append(got, lease.Span{From: f.From, To: f.To})
	}
	require.Equal(t, []lease.Span{{From: 1, To: 25}, {From: 26, To: 50}}, got)
	require.EqualValues(t, 2, fetchedA.Load(), "A fetched each chunk once")
	for _, s := range got { // learned after the stream was woken
		require.Eventually(t, func() bool { return spB.Has(l.Range.ID, s) }, 30*time.Second, time.Millisecond,
			"B's index learns chunk %v without listing the bucket", s)
	}
}
