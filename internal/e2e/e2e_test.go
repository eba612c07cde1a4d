package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/blobstore"
	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/coordinator"
	"github.com/edgeindex/edgeindex/edge"
	"github.com/edgeindex/edgeindex/edgeframe"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/internal/pgtest"
	"github.com/edgeindex/edgeindex/internal/testmain"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/node"
	"github.com/edgeindex/edgeindex/overview"
	"github.com/edgeindex/edgeindex/prefetch"
	"github.com/edgeindex/edgeindex/sources"
	"github.com/edgeindex/edgeindex/spool"
	"github.com/edgeindex/edgeindex/sqlstore"
	"github.com/edgeindex/edgeindex/storetest"
)

func TestMain(m *testing.M) { testmain.Main(m) }

var backends = pgtest.Backends

const group = "alt.binaries.e2e"

// cluster is a coordinator with its prefetcher over real HTTP.
type cluster struct {
	t     *testing.T
	store *sqlstore.Store
	url   string
	clock *clock.Manual
}

func newCluster(t *testing.T, dbURL string, articles, rangeSize, chunkSize int64) *cluster {
	t.Helper()
	ctx := t.Context()
	clock := storetest.NewClock()
	st, err := sqlstore.Open(ctx, dbURL, sqlstore.Config{Clock: clock})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	sp, err := spool.Open(t.TempDir(), spool.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { sp.Close() })
	src, err := sources.NewSynthetic(sources.SyntheticConfig{})
	require.NoError(t, err)
	pf, err := prefetch.New(prefetch.Config{Source: src, Spool: sp, Claims: st, Targets: st, Concurrency: 2,
		Idle: 20 * time.Millisecond})
	require.NoError(t, err)
	snaps, err := blobstore.OpenDir(t.TempDir())
	require.NoError(t, err)
	svc, err := coordinator.NewService(coordinator.Config{Store: st, Spool: sp, Snapshots: snaps, Prefetcher: pf})
	require.NoError(t, err)
	srv := coordinator.NewServer(svc)
	pctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { pf.Run(pctx); close(done) }()
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		srv.Drain()
		hs.Close()
		stop()
		<-done
	})
	_, err = st.AddGroup(ctx, grouplease.Group{Name: group, RangeSize: rangeSize, ChunkSize: chunkSize})
	require.NoError(t, err)
	_, err = st.AddRanges(ctx, grouplease.NewRanges{Group: group, From: 1, To: articles})
	require.NoError(t, err)
	return &cluster{t: t, store: st, url: hs.URL, clock: clock}
}

func (c *cluster) client(name string) *edge.Client {
	c.t.Helper()
	tok, err := node.NewToken()
	require.NoError(c.t, err)
	_, err = c.store.AddNode(c.t.Context(), name, node.HashToken(tok))
	require.NoError(c.t, err)
	cl, err := edge.NewClient(edge.Config{BaseURL: c.url, Token: tok})
	require.NoError(c.t, err)
	return cl
}

// chunkKeys is a handler that counts the lines of each batch and posts one
// item keyed by the batch's span.
func chunkKeys() edge.Handler {
	return edge.HandlerFunc(func(ctx context.Context, c edge.Chunk) (edge.Output, error) {
		var n int64
		err := overview.ReadChunk(c.Data, func(o overview.Overview) error {
			if o.Number >= c.From && o.Number <= c.To {
				n++
			}
			return nil
		})
		if err != nil {
			return edge.Output{}, err
		}
		key := fmt.Sprintf("%d-%d", c.From, c.To)
		return edge.Output{Headers: n, Items: []batch.Item{{Key: key, Value: []byte(fmt.Sprint(n))}}}, nil
	})
}

// feed counts the keys of the results feed, which has want items.
func (c *cluster) feed(want int) map[string]int {
	c.t.Helper()
	seen := map[string]int{}
	for _, it := range storetest.ReadFeed(c.t, c.store, group, 1000, want) {
		seen[it.Key]++
	}
	return seen
}

// checkDone checks every range is done with next = end + 1, and the feed
// has one item per chunk, each once.
func (c *cluster) checkDone(articles, chunkSize int64) {
	c.t.Helper()
	rs, err := c.store.Ranges(c.t.Context(), grouplease.RangeFilter{Group: group, Limit: 10000})
	require.NoError(c.t, err)
	for _, r := range rs {
		require.Equal(c.t, lease.StateDone, r.State, "range %d", r.ID)
		require.Equal(c.t, r.End+1, r.Next, "range %d", r.ID)
		require.Equal(c.t, r.End-r.Start+1, r.Headers, "range %d: one header per synthetic article", r.ID)
	}
	chunks := lease.Spans(1, articles, chunkSize)
	seen := c.feed(len(chunks))
	require.Len(c.t, seen, len(chunks))
	for _, s := range chunks {
		require.Equal(c.t, 1, seen[fmt.Sprintf("%d-%d", s.From, s.To)], "chunk %v", s)
	}
}

// waitDone polls until every range is done.
func (c *cluster) waitDone(ranges int64) {
	c.t.Helper()
	require.Eventually(c.t, func() bool {
		lanes, err := c.store.Lanes(c.t.Context(), group)
		require.NoError(c.t, err)
		return len(lanes) == 1 && lanes[0].Ranges[lease.StateDone] == ranges
	}, 3*time.Minute, 20*time.Millisecond)
}

func TestIndex(t *testing.T) {
	t.Parallel()
	const articles, rangeSize, chunkSize = 100_000, 5_000, 1_000
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			c := newCluster(t, b.URL(t), articles, rangeSize, chunkSize)
			ctx, cancel := context.WithCancel(t.Context())
			var g errgroup.Group
			workers := make([]*edge.Worker, 8)
			for i := range workers {
				w, err := edge.NewWorker(edge.WorkerConfig{Client: c.client(fmt.Sprintf("w%d", i)), Handler: chunkKeys(), Idle: 20 * time.Millisecond})
				require.NoError(t, err)
				workers[i] = w
				g.Go(func() error { return w.Run(ctx) })
			}
			stats := func() edge.Stats {
				var st edge.Stats
				for _, w := range workers {
					s := w.Stats()
					st.Ranges += s.Ranges
					st.Headers += s.Headers
					st.Lost += s.Lost
				}
				return st
			}
			// The workers count a range once its finish is answered.
			require.Eventually(t, func() bool { return stats().Ranges == articles/rangeSize }, 3*time.Minute, 20*time.Millisecond)
			cancel()
			err := g.Wait()
			if err != nil {
				require.ErrorIs(t, err, context.Canceled)
			}
			c.checkDone(articles, chunkSize)
			st := stats()
			require.Equal(t, int64(articles), st.Headers)
			require.Zero(t, st.Lost)
		})
	}
}

// abandon is a worker killed mid-range: it leases, stores the first chunk's
// batch, and dies without a word.
func abandon(t *testing.T, cl *edge.Client) lease.Lease {
	t.Helper()
	ctx := t.Context()
	l, ok, err := cl.Lease(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	s, err := cl.Stream(ctx, l.Range.ID, l.Token)
	require.NoError(t, err)
	defer s.Close()
	for {
		f, err := s.Next()
		require.NoError(t, err)
		if f.Type != edgeframe.TypeChunk {
			continue
		}
		out, err := chunkKeys().HandleChunk(ctx, edge.Chunk{Range: l.Range, From: f.From, To: f.To, Data: f.Data})
		require.NoError(t, err)
		_, err = cl.PostBatch(ctx, l.Range.ID, l.Token, batch.Batch{From: f.From, To: f.To, Headers: out.Headers, Items: out.Items})
		require.NoError(t, err)
		return l
	}
}

func TestKilledWorkerResumed(t *testing.T) {
	t.Parallel()
	const articles, rangeSize, chunkSize = 4_000, 2_000, 500
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			c := newCluster(t, b.URL(t), articles, rangeSize, chunkSize)
			dead := abandon(t, c.client("killed"))
			got, err := c.store.Range(t.Context(), dead.Range.ID)
			require.NoError(t, err)
			require.Equal(t, dead.Range.Start+chunkSize, got.Next)

			c.clock.Advance(coordinator.DefaultLeaseTTL + time.Second) // the dead worker's lease expires
			ctx, cancel := context.WithCancel(t.Context())
			w, err := edge.NewWorker(edge.WorkerConfig{Client: c.client("survivor"), Handler: chunkKeys(), Idle: 20 * time.Millisecond})
			require.NoError(t, err)
			done := make(chan error, 1)
			go func() { done <- w.Run(ctx) }()
			c.waitDone(articles / rangeSize)
			cancel()
			<-done
			c.checkDone(articles, chunkSize)
			require.Equal(t, int64(articles-chunkSize), w.Stats().Headers, "the survivor resumed from next")
		})
	}
}

func TestPausedWorkerFenced(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			c := newCluster(t, b.URL(t), 2_000, 2_000, 500)
			paused := c.client("paused")
			l := abandon(t, paused) // then it pauses past its TTL
			c.clock.Advance(coordinator.DefaultLeaseTTL + time.Second)
			other := c.client("other")
			l2, ok, err := other.Lease(t.Context())
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, l.Range.ID, l2.Range.ID)
			require.Greater(t, l2.Token, l.Token)

			// The paused worker wakes up and tries to go on: refused, 409.
			late := batch.Batch{From: 501, To: 1000, Headers: 500, Items: []batch.Item{{Key: "late", Value: []byte("1")}}}
			_, err = paused.PostBatch(t.Context(), l.Range.ID, l.Token, late)
			require.ErrorIs(t, err, edgeindex.ErrLeaseLost)
			var he *edge.HTTPError
			require.True(t, errors.As(err, &he))
			require.Equal(t, 409, he.Status)
			require.ErrorIs(t, paused.Finish(t.Context(), l.Range.ID, l.Token), edgeindex.ErrLeaseLost)
			_, err = paused.Heartbeat(t.Context(), l.Range.ID, l.Token)
			require.ErrorIs(t, err, edgeindex.ErrLeaseLost)

			_, err = other.PostBatch(t.Context(), l.Range.ID, l2.Token, late)
			require.NoError(t, err)
			seen := c.feed(2)
			require.Equal(t, map[string]int{"1-500": 1, "late": 1}, seen, "only the holder's batch is stored")
		})
	}
}
