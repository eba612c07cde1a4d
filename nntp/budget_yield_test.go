package nntp_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/nntp"
	"github.com/edgeindex/edgeindex/nntp/nntptest"
)

// yieldingBudget hands out slots whose Yield says true as many times as a
// test sets: its coordinator holds more than its fair share of the account
// while another waits (connlease's slots).
type yieldingBudget struct {
	*testBudget
	yields atomic.Int64
}

type yieldingSlot struct {
	nntp.Slot
	b *yieldingBudget
}

func (s yieldingSlot) Yield() bool {
	for {
		v := s.b.yields.Load()
		if v <= 0 {
			return false
		}
		if s.b.yields.CompareAndSwap(v, v-1) {
			return true
		}
	}
}

func (b *yieldingBudget) Acquire(ctx context.Context) (nntp.Slot, error) {
	s, err := b.testBudget.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return yieldingSlot{Slot: s, b: b}, nil
}

// A connection whose slot yields is closed politely (QUIT) when it is put
// back and its slot given back, rather than handed to the call waiting on
// this Source: the slot is for another coordinator. The call waiting then
// waits for a slot of its own and dials.
func TestConnectionBudgetYieldedSlotClosesConnectionAtPut(t *testing.T) {
	t.Parallel()
	srv := serve(t, nntptest.Config{LineDelay: 20 * time.Millisecond, Only: []string{"alt.slow"},
		Groups: append(oneGroup(nntptest.Lines(testGroup, 1, 10)), nntptest.Group{Name: "alt.slow", Lines: nntptest.Lines("alt.slow", 1, 20)})})
	b := &yieldingBudget{testBudget: newTestBudget(1)}
	src := open(t, srv, func(c *nntp.Config) { c.Budget = b })
	done := make(chan error, 1)
	go func() {
		_, err := src.Fetch(ctxT(t), "alt.slow", span(1, 20))
		done <- err
	}()
	waitFor(t, "the slow fetch to start", func() bool { return srv.Stats().Commands["OVER"] >= 1 })
	b.yields.Store(1)
	_, err := src.Group(ctxT(t), testGroup)
	require.NoError(t, err)
	require.NoError(t, <-done)
	require.Same(t, b.taken()[0], b.waitReleased(t), "the yielded slot is given back")
	require.EqualValues(t, 2, src.Stats().Dials, "GROUP was handed the connection whose slot yielded")
	require.Equal(t, 1, srv.Stats().Commands["QUIT"], "the connection was not closed politely")
	require.Len(t, b.taken(), 2, "GROUP waited for a slot of its own")
	require.Equal(t, 1, b.held())

	// A slot that does not yield keeps its connection: the next call reuses it.
	_, err = src.Fetch(ctxT(t), testGroup, span(1, 10))
	require.NoError(t, err)
	require.EqualValues(t, 2, src.Stats().Dials)
}

// An idle connection whose slot yields is closed politely, and its slot
// given back, when a call would take it, rather than reused: the slot is
// for another coordinator, and the call waits for a slot of its own.
func TestConnectionBudgetYieldedIdleSlotClosesConnectionAtGet(t *testing.T) {
	t.Parallel()
	srv := serve(t, nntptest.Config{Groups: oneGroup(nntptest.Lines(testGroup, 1, 10))})
	b := &yieldingBudget{testBudget: newTestBudget(1)}
	src := open(t, srv, func(c *nntp.Config) { c.Budget = b })
	_, err := src.Group(ctxT(t), testGroup)
	require.NoError(t, err)
	require.EqualValues(t, 1, src.Stats().Dials)
	b.yields.Store(1)
	_, err = src.Group(ctxT(t), testGroup)
	require.NoError(t, err)
	require.Same(t, b.taken()[0], b.waitReleased(t), "the yielded slot is given back")
	require.EqualValues(t, 2, src.Stats().Dials, "the idle connection whose slot yielded was reused")
	require.Equal(t, 1, srv.Stats().Commands["QUIT"], "the connection was not closed politely")
	require.Equal(t, 1, b.held())
}
