package release

import (
	"context"
	"math"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/clock"
)

// pagedFeed is a feed of pages items, one a page, each no binary (the
// builder skips them, and still applies the page with its cursor).
type pagedFeed struct{ pages int }

func (f pagedFeed) Results(_ context.Context, q batch.Query) (batch.Page, error) {
	n, _ := strconv.Atoi(q.After)
	if n >= f.pages {
		return batch.Page{Next: q.After}, nil
	}
	return batch.Page{Results: []batch.Stored{{ID: int64(n + 1), Key: "k", Value: []byte(`1`)}}, Next: strconv.Itoa(n + 1)}, nil
}

// slowStore keeps the cursor, and takes took of clk's time to apply each
// page.
type slowStore struct {
	Store
	clk  *clock.Manual
	took time.Duration

	mu  sync.Mutex
	cur Cursor
}

func (s *slowStore) ReleaseCursor(context.Context, string) (Cursor, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur, nil
}

func (s *slowStore) PutReleases(_ context.Context, u Update) (Applied, error) {
	s.mu.Lock()
	s.cur.After = u.Next
	s.cur.Items += int64(u.Items)
	s.mu.Unlock()
	s.clk.Advance(s.took)
	return Applied{}, nil
}

// passed is what a Pass returned.
type passed struct {
	n   int64
	err error
}

// slowBuilder returns a builder of cfg on a manual clock, with a
// slowStore whose every write takes took of that clock.
func slowBuilder(t *testing.T, took time.Duration, cfg Config) (*Builder, *clock.Manual) {
	t.Helper()
	clk := clock.NewManual(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	cfg.Store, cfg.Clock = &slowStore{clk: clk, took: took}, clk
	b, err := NewBuilder(cfg)
	require.NoError(t, err)
	return b, clk
}

// awaitWait waits until the builder waits on clk, or fails with msg.
func awaitWait(t *testing.T, clk *clock.Manual, msg string, args ...any) {
	t.Helper()
	require.Eventually(t, func() bool { return clk.Waiters() == 1 }, 10*time.Second, time.Millisecond, append([]any{msg}, args...)...)
}

// startPass runs b.Pass on a goroutine of its own, and returns a func
// that waits (a bounded while) for what it returned; the test fails, not
// hangs, when the pass still waits on clk.
func startPass(t *testing.T, b *Builder, clk *clock.Manual) func() passed {
	t.Helper()
	done := make(chan passed, 1)
	go func() {
		n, err := b.Pass(t.Context())
		done <- passed{n, err}
	}()
	return func() passed {
		t.Helper()
		select {
		case got := <-done:
			return got
		case <-time.After(10 * time.Second):
			t.Fatalf("the pass still waits (%d waiting on the clock)", clk.Waiters())
			return passed{}
		}
	}
}

// A builder with Share 0.25 waits three times as long as each page took
// before it applies the next, and no page is applied while it waits. After
// the last page there is nothing to wait for: the pass ends at once.
func TestBuilderShare(t *testing.T) {
	t.Parallel()
	b, clk := slowBuilder(t, 10*time.Millisecond, Config{Feed: pagedFeed{pages: 3}, Share: 0.25})
	pass := startPass(t, b, clk)
	for page := int64(1); page <= 2; page++ {
		awaitWait(t, clk, "the wait after page %d", page)
		require.Equal(t, page, b.Stats().Pages, "no page applied while the builder waits")
		clk.Advance(29 * time.Millisecond)
		require.Equal(t, 1, clk.Waiters(), "3 × 10 ms, not less")
		clk.Advance(time.Millisecond)
	}
	require.Equal(t, passed{n: 3}, pass(), "no wait after the last page")
	require.Equal(t, int64(3), b.Stats().Pages)
}

// A share's wait is at most the Interval: a page that took long (stalled
// on a lock, say) is not followed by a wait as long.
func TestBuilderShareCapped(t *testing.T) {
	t.Parallel()
	b, clk := slowBuilder(t, time.Minute, Config{Feed: pagedFeed{pages: 2}, Share: 0.25, Interval: time.Second})
	pass := startPass(t, b, clk)
	awaitWait(t, clk, "the wait after page 1")
	clk.Advance(time.Second - time.Millisecond)
	require.Equal(t, 1, clk.Waiters(), "a second, not less")
	clk.Advance(time.Millisecond)
	require.Equal(t, passed{n: 2}, pass(), "done after a second")
	require.Equal(t, int64(2), b.Stats().Pages)
}

// Share 1 never waits; one outside [MinShare, 1] is refused, and 0 is the
// default.
func TestBuilderShareBounds(t *testing.T) {
	t.Parallel()
	b, clk := slowBuilder(t, time.Second, Config{Feed: pagedFeed{pages: 3}, Share: 1})
	require.Equal(t, passed{n: 3}, startPass(t, b, clk)(), "no wait to advance past")
	st := b.cfg.Store

	for _, bad := range []float64{-0.5, 1.5, math.NaN(), 0.001, 1e-300} {
		_, err := NewBuilder(Config{Store: st, Share: bad})
		require.ErrorIs(t, err, edgeindex.ErrInvalid, "%g", bad)
	}
	b, err := NewBuilder(Config{Store: st, Feed: pagedFeed{}})
	require.NoError(t, err)
	require.Equal(t, DefaultShare, b.cfg.Share)
}
