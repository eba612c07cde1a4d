package sqlstore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"

	"github.com/edgeindex/edgeindex/internal/pgtest"
	"github.com/edgeindex/edgeindex/internal/testmain"
	"github.com/edgeindex/edgeindex/sqlstore"
	"github.com/edgeindex/edgeindex/storetest"
)

func TestMain(m *testing.M) { testmain.Main(m) }

var backends = pgtest.Backends

func opener(url func(testing.TB) string) storetest.Open {
	return func(t *testing.T, c clock.Clock) storetest.Backend {
		return open(t, url(t), sqlstore.Config{Clock: c})
	}
}

func open(t testing.TB, url string, cfg sqlstore.Config) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.Open(t.Context(), url, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			storetest.Run(t, opener(b.URL))
		})
	}
}

func TestConcurrent(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			storetest.RunConcurrent(t, opener(b.URL), storetest.ConcurrentConfig{})
		})
	}
}

func TestFencingRace(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			storetest.RunFencingRace(t, opener(b.URL))
		})
	}
}

func TestMigrationsOnce(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			url := b.URL(t)
			// Processes that start together: every Open migrates, none fails,
			// and the schema is applied once.
			var g errgroup.Group
			for range 4 {
				g.Go(func() error {
					s, err := sqlstore.Open(t.Context(), url, sqlstore.Config{})
					if err != nil {
						return err
					}
					return s.Close()
				})
			}
			require.NoError(t, g.Wait())
			s := open(t, url, sqlstore.Config{})
			files, err := filepath.Glob("migrations/*.sql")
			require.NoError(t, err)
			var n int
			require.NoError(t, s.DB().Get(&n, "SELECT COUNT(*) FROM schema_migrations"))
			require.Equal(t, len(files), n, "each migration applied once")
			require.NoError(t, s.Ping(t.Context()))
		})
	}
}

func TestOpenBadInput(t *testing.T) {
	t.Parallel()
	for _, url := range []string{"", "mysql://x", "sqlite://", "/tmp/x.db"} {
		_, err := sqlstore.Open(t.Context(), url, sqlstore.Config{})
		require.ErrorIs(t, err, sqlstore.ErrUnsupportedURL, url)
	}
	_, err := sqlstore.Open(t.Context(), "sqlite://"+t.TempDir()+"/x.db", sqlstore.Config{MaxAttempts: -1})
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
	_, err = sqlstore.Open(t.Context(), "postgres://u:secret@127.0.0.1:1/db?connect_timeout=1&sslmode=disable", sqlstore.Config{})
	require.Error(t, err)
	require.NotContains(t, err.Error(), "secret", "errors never show a password")
}

func TestMaxAttempts(t *testing.T) {
	t.Parallel()
	s := open(t, "sqlite://"+filepath.Join(t.TempDir(), "x.db"), sqlstore.Config{MaxAttempts: 1})
	ctx := t.Context()
	_, err := s.AddGroup(ctx, grouplease.Group{Name: "g", RangeSize: 10, ChunkSize: 5})
	require.NoError(t, err)
	_, err = s.AddRanges(ctx, grouplease.NewRanges{Group: "g", From: 1, To: 10})
	require.NoError(t, err)
	l, err := s.Grant(ctx, "n", time.Minute)
	require.NoError(t, err)
	r, err := s.Corrupt(ctx, l.Range.ID, lease.Fence{Node: "n", Token: l.Token}, 6, "")
	require.NoError(t, err)
	require.Equal(t, lease.StateFailed, r.State)
	require.Equal(t, "chunk 6: corrupt chunk", r.Reason)
}

func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	s, err := sqlstore.Open(ctx, "sqlite://"+filepath.Join(dir, "edgeindex.db"), sqlstore.Config{})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	s.AddGroup(ctx, grouplease.Group{Name: "alt.binaries.test"})
	s.AddRanges(ctx, grouplease.NewRanges{Group: "alt.binaries.test", From: 1, To: 50000})
	l, _ := s.Grant(ctx, "edge-1", time.Minute)
	fmt.Println(l.Range.Start, l.Range.End, l.ChunkSize, l.Token)
	f := lease.Fence{Node: "edge-1", Token: l.Token}
	res, _ := s.Put(ctx, l.Range.ID, f, batch.Batch{From: 1, To: 20000, Headers: 20000,
		Items: []batch.Item{{Key: "abc", Value: []byte(`{"subject":"x"}`)}}})
	fmt.Println(res.Next, s.Finish(ctx, l.Range.ID, f))
	// Output:
	// 1 20000 2000 1
	// 20001 <nil>
}

// A chunk claim being inserted holds a KEY SHARE lock on its range (the
// foreign key check). A grant must not skip the range for it: that would
// answer "no work" while the range waits.
func TestGrantNotHiddenByClaims(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.URL(t), sqlstore.Config{})
	ctx := t.Context()
	_, err := s.AddGroup(ctx, grouplease.Group{Name: "g", RangeSize: 100, ChunkSize: 10})
	require.NoError(t, err)
	rs, err := s.AddRanges(ctx, grouplease.NewRanges{Group: "g", From: 1, To: 100})
	require.NoError(t, err)
	tx, err := s.DB().BeginTx(ctx, nil)
	require.NoError(t, err)
	defer tx.Rollback()
	_, err = tx.ExecContext(ctx, `INSERT INTO chunk_claims (range_id, from_n, to_n, owner, expires_us) VALUES ($1, 1, 10, 'c', 0)`, rs[0].ID)
	require.NoError(t, err)
	l, err := s.Grant(ctx, "n", time.Minute)
	require.NoError(t, err, "the range is granted while its chunk's claim is being written")
	require.Equal(t, rs[0].ID, l.Range.ID)
}

// Concurrent Puts are stored in rounds. A batch the database refuses (a
// NUL byte, which PostgreSQL's TEXT cannot hold) fails alone: every other
// batch of its round is stored, and nothing of the bad one is.
func TestRoundPutFailsAlone(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.URL(t), sqlstore.Config{})
	ctx := t.Context()
	_, err := s.AddGroup(ctx, grouplease.Group{Name: "g", RangeSize: 1, ChunkSize: 1})
	require.NoError(t, err)
	const n = 64
	_, err = s.AddRanges(ctx, grouplease.NewRanges{Group: "g", From: 1, To: n})
	require.NoError(t, err)
	leases := make([]lease.Lease, n)
	for i := range leases {
		leases[i], err = s.Grant(ctx, fmt.Sprintf("n%d", i), time.Minute)
		require.NoError(t, err)
	}
	const bad = 17
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, l := range leases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := []byte(`{"ok":true}`)
			if i == bad {
				v = []byte("\"a\x00b\"")
			}
			_, errs[i] = s.Put(ctx, l.Range.ID, lease.Fence{Node: l.Node, Token: l.Token},
				batch.Batch{From: l.Range.Start, To: l.Range.End, Headers: 1, Items: []batch.Item{{Key: "k", Value: v}}, Final: true})
		}()
	}
	wg.Wait()
	for i, l := range leases {
		r, err := s.Range(ctx, l.Range.ID)
		require.NoError(t, err)
		if i == bad {
			require.Error(t, errs[i])
			require.Equal(t, lease.StateLeased, r.State, "the bad batch changed nothing")
			require.Equal(t, l.Range.Start, r.Next)
			continue
		}
		require.NoError(t, errs[i], "batch %d", i)
		require.Equal(t, lease.StateDone, r.State)
	}
	// Counted in the table: the feed hides items while an older transaction
	// of the server (another test's) still runs.
	var items, batches int
	require.NoError(t, s.DB().GetContext(ctx, &items, "SELECT COUNT(*) FROM items"))
	require.NoError(t, s.DB().GetContext(ctx, &batches, "SELECT COUNT(*) FROM batches"))
	require.Equal(t, n-1, items, "one item of each stored batch, none of the bad one")
	require.Equal(t, n-1, batches)
}
