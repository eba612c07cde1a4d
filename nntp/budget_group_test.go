package nntp_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/nntp"
	"github.com/edgeindex/edgeindex/nntp/nntptest"
)

// waitingBudget counts the Acquire calls waiting.
type waitingBudget struct {
	*testBudget
	waiting atomic.Int64
}

func (b *waitingBudget) Acquire(ctx context.Context) (nntp.Slot, error) {
	b.waiting.Add(1)
	defer b.waiting.Add(-1)
	return b.testBudget.Acquire(ctx)
}

// The pool's doc (pool.go) and docs/untrusted-peers.md promise that GROUP
// "is handed the next connection this Source puts back": the one
// connection of the local cap kept for the planner. With a Budget that
// lets this Source have one slot, the waiters are first come first served,
// so GROUP queues behind every fetch already waiting (up to MaxConns-1,
// each up to a fetch deadline): the next connection put back goes to a
// fetch.
func TestConnectionBudgetGroupNotQueuedBehindFetches(t *testing.T) {
	t.Parallel()
	srv := serve(t, nntptest.Config{LineDelay: 20 * time.Millisecond, Only: []string{"alt.slow"},
		Groups: append(oneGroup(nntptest.Lines(testGroup, 1, 10)), nntptest.Group{Name: "alt.slow", Lines: nntptest.Lines("alt.slow", 1, 20)})})
	b := &waitingBudget{testBudget: newTestBudget(1)}
	src := open(t, srv, func(c *nntp.Config) { c.Budget = b }) // MaxConns 4: 3 fetches, one kept for GROUP
	done := make(chan error, 2)
	go func() {
		_, err := src.Fetch(ctxT(t), "alt.slow", span(1, 20))
		done <- err
	}()
	waitFor(t, "the first slow fetch to start", func() bool { return srv.Stats().Commands["OVER"] >= 1 })
	go func() {
		_, err := src.Fetch(ctxT(t), "alt.slow", span(1, 20))
		done <- err
	}()
	waitFor(t, "the second fetch to wait for a slot", func() bool { return b.waiting.Load() == 1 })
	_, err := src.Group(ctxT(t), testGroup)
	require.NoError(t, err)
	require.NoError(t, <-done)
	require.NoError(t, <-done)
	// The order the server received them in: once GROUP has its answer,
	// the connection goes on to the second fetch at once, so a count of
	// OVERs taken after Group returns would race it.
	var order []string
	for _, line := range srv.Stats().Log {
		if strings.HasPrefix(line, "OVER") || line == "GROUP "+testGroup {
			order = append(order, strings.Fields(line)[0])
		}
	}
	require.Equal(t, []string{"OVER", "GROUP", "OVER"}, order, "GROUP waited for a fetch queued before it")
}

// expiringBudget hands out slots whose Expired a test sets: a lease that
// ran out by the local clock while its Lost channel has not closed yet
// (the process was paused past the TTL, and the timer has not run).
type expiringBudget struct {
	*testBudget
	expired atomic.Bool
}

type expiringSlot struct {
	nntp.Slot
	b *expiringBudget
}

func (s expiringSlot) Expired() bool { return s.b.expired.Load() }

func (b *expiringBudget) Acquire(ctx context.Context) (nntp.Slot, error) {
	s, err := b.testBudget.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return expiringSlot{Slot: s, b: b}, nil
}

// An idle connection whose slot's lease may have run out is closed, not
// reused: its slot may be another coordinator's by now. The next call
// dials under a new slot.
func TestConnectionBudgetExpiredIdleConnectionNotReused(t *testing.T) {
	t.Parallel()
	srv := serve(t, nntptest.Config{Groups: oneGroup(nntptest.Lines(testGroup, 1, 10))})
	b := &expiringBudget{testBudget: newTestBudget(2)}
	src := open(t, srv, func(c *nntp.Config) { c.Budget = b })
	require.NoError(t, src.Check(ctxT(t)))
	b.expired.Store(true)
	_, err := src.Fetch(ctxT(t), testGroup, span(1, 10))
	require.NoError(t, err)
	require.EqualValues(t, 2, src.Stats().Dials, "the idle connection was reused")
	require.Same(t, b.taken()[0], b.waitReleased(t), "its slot is given back")
	require.Zero(t, srv.Stats().Commands["QUIT"], "no QUIT on a slot that may be another's")
}
