package nntp_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/nntp"
	"github.com/edgeindex/edgeindex/nntp/nntptest"
	"github.com/edgeindex/edgeindex/sources"
)

// testBudget is a Budget of size slots in memory, whose slots a test can
// lose. (connlease's Budget, over the database, has tests of its own.)
type testBudget struct {
	sem      chan struct{}
	released chan *testSlot // one value per release

	mu    sync.Mutex
	slots []*testSlot // taken, in order
	twice atomic.Int64
}

type testSlot struct {
	b        *testBudget
	lost     chan struct{}
	loseOnce sync.Once
	released atomic.Bool
}

func newTestBudget(size int) *testBudget {
	return &testBudget{sem: make(chan struct{}, size), released: make(chan *testSlot, 1000)}
}

func (b *testBudget) Acquire(ctx context.Context) (nntp.Slot, error) {
	select {
	case b.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	s := &testSlot{b: b, lost: make(chan struct{})}
	b.mu.Lock()
	b.slots = append(b.slots, s)
	b.mu.Unlock()
	return s, nil
}

func (s *testSlot) Lost() <-chan struct{} { return s.lost }

func (s *testSlot) Release() {
	if s.released.Swap(true) {
		s.b.twice.Add(1)
		return
	}
	<-s.b.sem
	s.b.released <- s
}

func (s *testSlot) lose() { s.loseOnce.Do(func() { close(s.lost) }) }

// taken returns the slots taken so far.
func (b *testBudget) taken() []*testSlot {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*testSlot(nil), b.slots...)
}

// held is how many slots are taken and not given back.
func (b *testBudget) held() int { return len(b.sem) }

// waitReleased waits for the next release, failing the test after 20s.
func (b *testBudget) waitReleased(t *testing.T) *testSlot {
	t.Helper()
	select {
	case s := <-b.released:
		return s
	case <-time.After(20 * time.Second):
		t.Fatal("no slot was given back")
		return nil
	}
}

// waitFor polls cond until it holds, failing the test after 20s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// A slot lost while its connection is busy closes the connection at once:
// the fetch on it fails with ErrSlotLost and the slot is given back. One
// lost while its connection is idle closes it too, and the next call dials
// a new one under a new slot.
func TestConnectionBudgetLostSlotClosesConnection(t *testing.T) {
	t.Parallel()
	srv := serve(t, nntptest.Config{LineDelay: 50 * time.Millisecond, Only: []string{"alt.slow"},
		Groups: append(oneGroup(nntptest.Lines(testGroup, 1, 100)), nntptest.Group{Name: "alt.slow", Lines: nntptest.Lines("alt.slow", 1, 1000)})})
	b := newTestBudget(4)
	src := open(t, srv, func(c *nntp.Config) { c.Budget = b })

	// Idle: the Check's connection holds a slot; losing it closes it.
	require.NoError(t, src.Check(ctxT(t)))
	require.Equal(t, 1, b.held())
	b.taken()[0].lose()
	require.Same(t, b.taken()[0], b.waitReleased(t))
	waitFor(t, "the server to see the connection closed", func() bool { return srv.Stats().Open == 0 })
	_, err := src.Fetch(ctxT(t), testGroup, span(1, 10))
	require.NoError(t, err)
	require.Len(t, b.taken(), 2, "a new connection under a new slot")
	require.EqualValues(t, 2, src.Stats().Dials)

	// Busy: a fetch of 1000 slow lines, on the idle connection.
	done := make(chan error, 1)
	go func() {
		_, err := src.Fetch(ctxT(t), "alt.slow", span(1, 1000))
		done <- err
	}()
	waitFor(t, "the slow fetch to start", func() bool { return srv.Stats().Commands["OVER"] >= 2 })
	b.taken()[1].lose()
	select {
	case err := <-done:
		require.ErrorIs(t, err, nntp.ErrSlotLost)
	case <-time.After(20 * time.Second):
		t.Fatal("the fetch on a connection whose slot was lost goes on")
	}
	require.Same(t, b.taken()[1], b.waitReleased(t))
	require.Zero(t, b.held())
	require.Zero(t, b.twice.Load(), "a slot given back twice")
}

// Closing the Source gives back every slot, of idle connections at once
// and of busy ones as their calls end.
func TestConnectionBudgetSlotsReleasedOnClose(t *testing.T) {
	t.Parallel()
	srv := serve(t, nntptest.Config{Groups: oneGroup(nntptest.Lines(testGroup, 1, 400))})
	b := newTestBudget(4)
	cfg, err := nntp.ParseURL(srv.URL())
	require.NoError(t, err)
	cfg.Budget = b
	src, err := nntp.New(cfg)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() {
			_, err := src.Fetch(ctxT(t), testGroup, span(int64(i*20+1), int64(i*20+20)))
			require.NoError(t, err)
		})
	}
	_, err = src.Group(ctxT(t), testGroup)
	require.NoError(t, err)
	wg.Wait()
	require.Positive(t, b.held())
	// At most 4 connections; a slot may be taken more often, when a
	// connection put back comes as a waiting fetch gets its slot (acquire
	// gives that slot straight back).
	require.LessOrEqual(t, src.Stats().Dials, int64(4))
	require.NoError(t, src.Close())
	require.Zero(t, b.held(), "every slot is given back on Close")
	require.Zero(t, b.twice.Load(), "a slot given back twice")
	waitFor(t, "the server to see the connections closed", func() bool { return srv.Stats().Open == 0 })
}

// With a Budget, a connection idle for IdleTimeout is closed and its slot
// given back, so that other coordinators may use it.
func TestConnectionBudgetIdleTimeoutReleases(t *testing.T) {
	t.Parallel()
	srv := serve(t, nntptest.Config{Groups: oneGroup(nntptest.Lines(testGroup, 1, 10))})
	b := newTestBudget(2)
	src := open(t, srv, func(c *nntp.Config) { c.Budget, c.IdleTimeout = b, 20*time.Millisecond })
	require.NoError(t, src.Check(ctxT(t)))
	b.waitReleased(t)
	require.Zero(t, b.held())
	waitFor(t, "the server to see the connection closed", func() bool { return srv.Stats().Open == 0 })
	require.Equal(t, 1, srv.Stats().Commands["QUIT"], "the idle connection said goodbye")
	_, err := src.Group(ctxT(t), testGroup)
	require.NoError(t, err)
	require.EqualValues(t, 2, src.Stats().Dials)
}

// GROUP, waiting for a slot while this Source's fetches hold all the
// budget lets it have, is handed the next connection a fetch puts back
// rather than waiting for a slot to be given back.
func TestConnectionBudgetGroupTakesPutBackConnection(t *testing.T) {
	t.Parallel()
	srv := serve(t, nntptest.Config{LineDelay: 20 * time.Millisecond, Only: []string{"alt.slow"},
		Groups: append(oneGroup(nntptest.Lines(testGroup, 1, 10)), nntptest.Group{Name: "alt.slow", Lines: nntptest.Lines("alt.slow", 1, 20)})})
	b := newTestBudget(1)
	src := open(t, srv, func(c *nntp.Config) { c.Budget = b })
	done := make(chan error, 1)
	go func() {
		_, err := src.Fetch(ctxT(t), "alt.slow", span(1, 20))
		done <- err
	}()
	waitFor(t, "the slow fetch to start", func() bool { return srv.Stats().Commands["OVER"] >= 1 })
	_, err := src.Group(ctxT(t), testGroup)
	require.NoError(t, err)
	require.NoError(t, <-done)
	require.EqualValues(t, 1, src.Stats().Dials, "GROUP used the fetch's connection")
	require.Equal(t, 1, b.held(), "the connection still holds its slot")
}

// Two Sources sharing a budget of 2 never open more than 2 connections in
// all, however many fetches they run, against a server that refuses a
// third with 502 too many connections.
func TestConnectionBudgetSharedByTwoSources(t *testing.T) {
	t.Parallel()
	srv := serve(t, nntptest.Config{MaxConns: 2, MaxConnsReply: 502, LineDelay: 100 * time.Microsecond,
		Groups: oneGroup(nntptest.Lines(testGroup, 1, 640))})
	b := newTestBudget(2)
	srcs := []*nntp.Source{
		open(t, srv, func(c *nntp.Config) { c.Budget, c.MaxConns = b, 2 }),
		open(t, srv, func(c *nntp.Config) { c.Budget, c.MaxConns = b, 2 }),
	}
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			_, err := srcs[i%2].Fetch(ctxT(t), testGroup, span(int64(i*20+1), int64(i*20+20)))
			require.NoError(t, err)
		})
	}
	wg.Wait()
	st := srv.Stats()
	require.Zero(t, st.Refused, "the server refused a connection")
	require.LessOrEqual(t, st.MaxOpen, 2)
}

// Fetch calls sources.Ready once it holds a connection and its slot, not
// while it waits for one: a caller that claims the chunk there holds no
// claim while it waits. Ready's error ends the fetch before its OVER.
func TestFetchReadyOnceConnectionHeld(t *testing.T) {
	t.Parallel()
	srv := serve(t, nntptest.Config{Groups: oneGroup(nntptest.Lines(testGroup, 1, 100))})
	b := newTestBudget(1)
	src := open(t, srv, func(c *nntp.Config) { c.Budget = b })

	// Hold the budget's only slot, so the fetch waits for it.
	blocker, err := b.Acquire(ctxT(t))
	require.NoError(t, err)
	var heldAtReady atomic.Int64
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		ctx := sources.WithReady(ctxT(t), func() error {
			heldAtReady.Store(int64(srv.Stats().Open))
			close(ready)
			return nil
		})
		_, err := src.Fetch(ctx, testGroup, span(1, 10))
		done <- err
	}()
	select {
	case <-ready:
		t.Fatal("Ready was called while the fetch waited for a slot")
	case <-time.After(100 * time.Millisecond):
	}
	blocker.Release()
	require.NoError(t, <-done)
	require.EqualValues(t, 1, heldAtReady.Load(), "a connection was open when Ready was called")

	taken := errors.New("claimed by another")
	ctx := sources.WithReady(ctxT(t), func() error { return taken })
	before := srv.Stats().Commands["OVER"]
	_, err = src.Fetch(ctx, testGroup, span(11, 20))
	require.ErrorIs(t, err, taken)
	require.Equal(t, before, srv.Stats().Commands["OVER"], "no OVER after Ready refused")
	_, err = src.Fetch(ctxT(t), testGroup, span(11, 20))
	require.NoError(t, err, "the connection went back to the pool")
	require.EqualValues(t, 1, src.Stats().Dials)
}
