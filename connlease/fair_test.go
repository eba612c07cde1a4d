package connlease_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/connlease"
)

// The fair share is max(1, size / holders), floored. A holder over it
// yields the slots above it while another that wants one holds less, and
// holds back from taking more; one at its share never yields, so the
// slots settle. With more holders than slots, a holder with one yields it
// to another that has none, and they take turns.
func TestConnectionBudgetShareMath(t *testing.T) {
	t.Parallel()
	others := func(held ...int) []connlease.Holding {
		var hs []connlease.Holding
		for i, n := range held {
			hs = append(hs, connlease.Holding{Holder: fmt.Sprintf("o%d", i), Held: n, Wants: true})
		}
		return hs
	}
	for _, c := range []struct {
		size, mine int
		others     []int // the other holders' slots; each wants one
		share      int
		yields     int
		holdBack   bool
	}{
		{size: 4, mine: 4, share: 4},
		{size: 4, mine: 4, others: []int{0}, share: 2, yields: 2, holdBack: true},
		{size: 4, mine: 2, others: []int{2}, share: 2},
		{size: 4, mine: 3, others: []int{1}, share: 2, yields: 1, holdBack: true},
		{size: 4, mine: 4, others: []int{0, 0}, share: 1, yields: 2, holdBack: true}, // two want one each
		{size: 4, mine: 2, others: []int{1, 1}, share: 1},
		{size: 4, mine: 1, others: []int{3, 0}, share: 1, holdBack: true},
		{size: 4, mine: 0, others: []int{3, 1}, share: 1},
		{size: 4, mine: 1, others: []int{1, 1, 1}, share: 1},
		{size: 4, mine: 4, others: []int{0, 0, 0}, share: 1, yields: 3, holdBack: true},
		{size: 4, mine: 1, others: []int{1, 1, 1, 0}, share: 1, yields: 1, holdBack: true},
		{size: 4, mine: 0, others: []int{1, 1, 1, 1}, share: 1},
		{size: 4, mine: 0, others: []int{1, 1, 1, 0}, share: 1},
		{size: 1, mine: 1, share: 1},
		{size: 1, mine: 1, others: []int{0}, share: 1, yields: 1, holdBack: true},
		{size: 1, mine: 0, others: []int{1}, share: 1},
		{size: 1, mine: 0, others: []int{1, 0}, share: 1},
		{size: 1, mine: 1, others: []int{0, 0, 0}, share: 1, yields: 1, holdBack: true},
		{size: 1, mine: 0, others: []int{0, 0, 0, 0}, share: 1},
	} {
		name := fmt.Sprintf("size %d, mine %d, others %v", c.size, c.mine, c.others)
		hs := append(others(c.others...), connlease.Holding{Holder: "me", Held: c.mine})
		share, yields, _, holdBack := connlease.Plan(c.size, "me", hs, c.mine)
		require.Equal(t, c.share, share, name)
		require.Equal(t, c.yields, yields, name)
		require.Equal(t, c.holdBack, holdBack, name)
	}
	// A slot that said Yield counts in the demand until its put gives it
	// back, but not as kept: it covers one slot of the starved holders'
	// need, so the slots kept at the share do not yield too.
	for _, c := range []struct {
		size, held, kept int
		others           []connlease.Holding
		yields           int
	}{
		{size: 2, held: 2, kept: 1, others: []connlease.Holding{{Holder: "b", Wants: true}}},
		{size: 4, held: 4, kept: 3, others: []connlease.Holding{{Holder: "b", Wants: true}}, yields: 1},
		{size: 4, held: 4, kept: 2, others: []connlease.Holding{{Holder: "b", Wants: true}}},
		{size: 4, held: 3, kept: 2, others: []connlease.Holding{{Holder: "b", Held: 1}, {Holder: "c", Wants: true}}},
		{size: 1, held: 1, kept: 0, others: []connlease.Holding{{Holder: "b", Wants: true}, {Holder: "c", Wants: true}}},
	} {
		name := fmt.Sprintf("size %d, held %d, kept %d, others %v", c.size, c.held, c.kept, c.others)
		hs := append(c.others, connlease.Holding{Holder: "me", Held: c.held})
		_, yields, starved, _ := connlease.Plan(c.size, "me", hs, c.kept)
		require.True(t, starved, name)
		require.Equal(t, c.yields, yields, name)
	}
	// More holders than slots, one starved: one holder yields, the next
	// after the starved one by name, so the next turn falls on another.
	for _, c := range []struct {
		holding []string
		starved string
		yields  string
	}{
		{holding: []string{"a", "b", "c"}, starved: "d", yields: "a"},
		{holding: []string{"b", "c", "d"}, starved: "a", yields: "b"},
		{holding: []string{"a", "c", "d"}, starved: "b", yields: "c"},
		{holding: []string{"a", "b", "d"}, starved: "c", yields: "d"},
	} {
		hs := []connlease.Holding{{Holder: c.starved, Wants: true}}
		for _, h := range c.holding {
			hs = append(hs, connlease.Holding{Holder: h, Held: 1})
		}
		var yielded []string
		for _, h := range c.holding {
			if _, y, _, _ := connlease.Plan(3, h, hs, 1); y > 0 {
				require.Equal(t, 1, y)
				yielded = append(yielded, h)
			}
		}
		require.Equal(t, []string{c.yields}, yielded, "holding %v, %s starved", c.holding, c.starved)
	}
	// Two starved: two yield.
	hs := []connlease.Holding{{Holder: "a", Held: 1}, {Holder: "b", Held: 1}, {Holder: "c", Held: 1}, {Holder: "d", Wants: true}, {Holder: "e", Wants: true}}
	n := 0
	for _, h := range []string{"a", "b", "c"} {
		_, y, _, _ := connlease.Plan(3, h, hs, 1)
		n += y
	}
	require.Equal(t, 2, n, "two starved holders")
	// Holders that neither hold nor want count for nothing.
	share, yields, starved, _ := connlease.Plan(4, "me", []connlease.Holding{{Holder: "me", Held: 4}, {Holder: "idle"}}, 4)
	require.Equal(t, 4, share)
	require.Zero(t, yields)
	require.False(t, starved)
}

// demandStore signals each Demand answered.
type demandStore struct {
	connlease.Store
	answered chan struct{}
}

func (s demandStore) Demand(ctx context.Context, provider string, within time.Duration) ([]connlease.Holding, error) {
	hs, err := s.Store.Demand(ctx, provider, within)
	select {
	case s.answered <- struct{}{}:
	default:
	}
	return hs, err
}

// yieldOf asks s's Yield.
func yieldOf(s connlease.Slot) bool {
	y, ok := s.(interface{ Yield() bool })
	return ok && y.Yield()
}

// waitRefreshes waits for n answers of st's Demand.
func waitRefreshes(t *testing.T, st demandStore, n int) {
	t.Helper()
	for range n {
		select {
		case <-st.answered:
		case <-time.After(20 * time.Second):
			t.Fatal("the demand was not read")
		}
	}
}

// A holder whose connections stay busy on every slot gives one back at
// its next put when another holder waits: one of its slots yields (not
// both: it keeps its share), the waiter gets the slot given back, not the
// holder's own next Acquire, and once both hold their share neither
// yields.
func TestConnectionBudgetWaiterGetsYieldedSlot(t *testing.T) {
	t.Parallel()
	store := openStore(t, nil)
	sa := demandStore{Store: store, answered: make(chan struct{}, 1)}
	a := newBudget(t, connlease.Config{Store: sa, Size: 2, Holder: "a", Poll: 5 * time.Millisecond})
	b := newBudget(t, connlease.Config{Store: store, Size: 2, Holder: "b", Poll: 5 * time.Millisecond})
	a1, err := a.Acquire(ctxT(t))
	require.NoError(t, err)
	a2, err := a.Acquire(ctxT(t))
	require.NoError(t, err)
	waitRefreshes(t, sa, 2)
	require.False(t, yieldOf(a1) || yieldOf(a2), "no one else wants a slot")

	got := make(chan connlease.Slot, 1)
	go func() {
		s, err := b.Acquire(ctxT(t))
		if err != nil {
			s = nil
		}
		got <- s
	}()
	var yielded, kept connlease.Slot
	deadline := time.Now().Add(20 * time.Second)
	for yielded == nil {
		require.True(t, time.Now().Before(deadline), "no slot of a yields to b")
		switch {
		case yieldOf(a1):
			yielded, kept = a1, a2
		case yieldOf(a2):
			yielded, kept = a2, a1
		default:
			time.Sleep(time.Millisecond)
		}
	}
	// a's own call waiting for a slot, as its pool's would, does not take
	// the one given back.
	actx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	aGot := make(chan error, 1)
	go func() {
		s, err := a.Acquire(actx)
		if err == nil {
			s.Release()
		}
		aGot <- err
	}()
	yielded.Release() // the put
	bs := <-got
	require.NotNil(t, bs, "b gets the slot a gave back")
	slots, err := store.Slots(t.Context())
	require.NoError(t, err)
	require.Len(t, slots, 2)
	holders := map[string]int{}
	for _, s := range slots {
		holders[s.Holder]++
	}
	require.Equal(t, map[string]int{"a": 1, "b": 1}, holders)

	waitRefreshes(t, sa, 2)
	require.False(t, yieldOf(kept), "a holder at its share keeps its slot")
	require.False(t, yieldOf(bs), "b is at its share")
	cancel()
	require.ErrorIs(t, <-aGot, context.Canceled, "a took a third slot of two")
	kept.Release()
	bs.Release()
}

// With one slot and two holders that keep it busy, they take turns: each
// gives the slot back at its next put while the other waits, and the
// other takes it, rather than one holding it forever.
func TestConnectionBudgetSizeOneTakesTurns(t *testing.T) {
	t.Parallel()
	store := openStore(t, nil)
	const turns = 6
	turn := make(chan string, 2*turns)
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	done := make(chan struct{}, 2)
	for _, name := range []string{"a", "b"} {
		bud := newBudget(t, connlease.Config{Store: store, Size: 1, Holder: name, Poll: 5 * time.Millisecond})
		go func() {
			defer func() { done <- struct{}{} }()
			for {
				s, err := bud.Acquire(ctx)
				if err != nil {
					return
				}
				turn <- name
				for !yieldOf(s) { // busy: put back and taken again at once
					select {
					case <-ctx.Done():
						s.Release()
						return
					case <-time.After(time.Millisecond):
					}
				}
				s.Release()
			}
		}()
	}
	var seq []string
	for len(seq) < turns {
		select {
		case n := <-turn:
			seq = append(seq, n)
		case <-time.After(20 * time.Second):
			t.Fatalf("the slot stopped moving: %v", seq)
		}
	}
	cancel()
	<-done
	<-done
	for i := 1; i < len(seq); i++ {
		require.NotEqual(t, seq[i-1], seq[i], "a holder took the slot back from the one waiting: %v", seq)
	}
}

// A slot that yielded but whose put has not yet given it back (QUIT in
// flight, a slow ReleaseSlot) still counts in the next Demand; the refresh
// must not re-arm the yield so that the slot kept at the share yields too.
func TestConnectionBudgetYieldNotRearmedBeforeRelease(t *testing.T) {
	t.Parallel()
	store := openStore(t, nil)
	sa := demandStore{Store: store, answered: make(chan struct{}, 1)}
	a := newBudget(t, connlease.Config{Store: sa, Size: 2, Holder: "a", Poll: 5 * time.Millisecond})
	b := newBudget(t, connlease.Config{Store: store, Size: 2, Holder: "b", Poll: 5 * time.Millisecond})
	a1, err := a.Acquire(ctxT(t))
	require.NoError(t, err)
	a2, err := a.Acquire(ctxT(t))
	require.NoError(t, err)
	bctx, bcancel := context.WithCancel(ctxT(t))
	defer bcancel()
	go func() {
		if s, err := b.Acquire(bctx); err == nil {
			s.Release()
		}
	}()
	var yielded, kept connlease.Slot
	for yielded == nil {
		switch {
		case yieldOf(a1):
			yielded, kept = a1, a2
		case yieldOf(a2):
			yielded, kept = a2, a1
		default:
			time.Sleep(time.Millisecond)
		}
	}
	// The put of yielded is slow: several refreshes pass before it gives
	// the slot back.
	waitRefreshes(t, sa, 5)
	require.False(t, yieldOf(kept), "a holder at its share yielded: the refresh re-armed the yield of a slot not yet given back")
	yielded.Release()
	kept.Release()
}

// hungDemand's Demand blocks until its ctx ends.
type hungDemand struct {
	connlease.Store
	entered chan struct{}
}

func (s hungDemand) Demand(ctx context.Context, provider string, within time.Duration) ([]connlease.Holding, error) {
	select {
	case s.entered <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// Close does not wait out a Demand stuck on a slow database: the
// refresher's calls are cancelled at Close, as the renewer's are.
func TestConnectionBudgetCloseCancelsDemand(t *testing.T) {
	t.Parallel()
	st := hungDemand{Store: openStore(t, nil), entered: make(chan struct{}, 1)}
	bud, err := connlease.New(connlease.Config{Store: st, Size: 1, Holder: "a", Poll: 5 * time.Millisecond})
	require.NoError(t, err)
	s, err := bud.Acquire(ctxT(t))
	require.NoError(t, err)
	<-st.entered
	s.Release()
	closed := make(chan struct{})
	go func() { bud.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(3 * time.Second):
		t.Fatal("Close waits for the refresher's Demand (Poll + takeTimeout)")
	}
}

// With more holders than slots, one starved holder makes one holder with a
// slot yield, not every one: size 2, a and b hold one each, c wants.
func TestConnectionBudgetOneStarvedHolderOneYield(t *testing.T) {
	t.Parallel()
	hs := []connlease.Holding{{Holder: "a", Held: 1}, {Holder: "b", Held: 1}, {Holder: "c", Wants: true}}
	_, ya, _, _ := connlease.Plan(2, "a", hs, 1)
	_, yb, _, _ := connlease.Plan(2, "b", hs, 1)
	require.Equal(t, 1, ya+yb, "one starved holder, two slots given back")
	// Over the share: c needs one, a gives two.
	_, y, _, _ := connlease.Plan(4, "a", []connlease.Holding{{Holder: "a", Held: 3}, {Holder: "b", Held: 1}, {Holder: "c", Wants: true}}, 3)
	require.Equal(t, 1, y, "c wants one slot (its share is 1); a yields more")
}

// Three busy holders of one slot all get turns.
func TestConnectionBudgetSizeOneThreeHoldersAllGetTurns(t *testing.T) {
	t.Parallel()
	store := openStore(t, nil)
	const turns = 60
	turn := make(chan string, 4*turns)
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	done := make(chan struct{}, 3)
	names := []string{"a", "b", "c"}
	for _, name := range names {
		bud := newBudget(t, connlease.Config{Store: store, Size: 1, Holder: name, Poll: 5 * time.Millisecond})
		go func() {
			defer func() { done <- struct{}{} }()
			for {
				s, err := bud.Acquire(ctx)
				if err != nil {
					return
				}
				turn <- name
				for !yieldOf(s) {
					select {
					case <-ctx.Done():
						s.Release()
						return
					case <-time.After(time.Millisecond):
					}
				}
				s.Release()
			}
		}()
	}
	count := map[string]int{}
	var seq []string
	for len(seq) < turns {
		select {
		case n := <-turn:
			seq = append(seq, n)
			count[n]++
		case <-time.After(20 * time.Second):
			t.Fatalf("the slot stopped moving: %v", seq)
		}
	}
	cancel()
	for range names {
		<-done
	}
	t.Logf("turns %v: %v", count, seq)
	for _, n := range names {
		require.GreaterOrEqual(t, count[n], turns/6, "holder %s starved: %v", n, count)
	}
}
