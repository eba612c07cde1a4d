package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/connlease"
)

// A provider's budget hands out slots 0 to size−1, lowest free first, and
// refuses once all are held; providers' budgets are apart; a slot given
// back goes to the next taker with a higher token.
func testConnSlotsTake(t *testing.T, e *env) {
	take := func(provider string, size int, holder string) (connlease.Lease, bool) {
		t.Helper()
		s, ok, err := e.TakeSlot(e.ctx, provider, size, holder, ttl)
		require.NoError(t, err)
		return s, ok
	}
	var held []connlease.Lease
	for i := range 3 {
		s, ok := take("eweka", 3, fmt.Sprintf("c%d", i))
		require.True(t, ok, "slot %d", i)
		require.Equal(t, i, s.N)
		require.Equal(t, "eweka", s.Provider)
		require.Equal(t, fmt.Sprintf("c%d", i), s.Holder)
		require.Equal(t, e.clock.Now().Add(ttl), s.Expires.UTC())
		require.Positive(t, s.Token)
		held = append(held, s)
	}
	_, ok := take("eweka", 3, "c9")
	require.False(t, ok, "every slot of the budget is held")
	s, ok := take("", 1, "c9")
	require.True(t, ok, "another provider's budget is its own")
	require.Equal(t, 0, s.N)

	slots, err := e.Slots(e.ctx)
	require.NoError(t, err)
	require.Len(t, slots, 4)
	require.Equal(t, "", slots[0].Provider, "by provider, then by number")
	require.Equal(t, held, slots[1:])

	require.NoError(t, e.ReleaseSlot(e.ctx, held[1]))
	s, ok = take("eweka", 3, "c9")
	require.True(t, ok, "a slot given back is free")
	require.Equal(t, 1, s.N)
	require.Greater(t, s.Token, held[1].Token, "tokens rise with every take")

	_, _, err = e.TakeSlot(e.ctx, "eweka", 0, "c1", ttl)
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
	_, _, err = e.TakeSlot(e.ctx, "eweka", 1, "", ttl)
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
	_, _, err = e.TakeSlot(e.ctx, "eweka", 1, "c1", 0)
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
}

// A lease that runs out goes to the next taker with a higher token; the
// old holder's renewal then fails with ErrLost, and its late give-back
// leaves the new lease alone. A renewal in time moves the lease's end.
func testConnSlotsExpiry(t *testing.T, e *env) {
	a, ok, err := e.TakeSlot(e.ctx, "p", 1, "a", ttl)
	require.NoError(t, err)
	require.True(t, ok)

	e.clock.Advance(ttl / 2)
	a2, err := e.RenewSlot(e.ctx, a, ttl)
	require.NoError(t, err)
	require.Equal(t, e.clock.Now().Add(ttl), a2.Expires.UTC())
	require.Equal(t, a.Token, a2.Token, "a renewal keeps the token")

	e.clock.Advance(ttl - time.Second)
	_, ok, err = e.TakeSlot(e.ctx, "p", 1, "b", ttl)
	require.NoError(t, err)
	require.False(t, ok, "a renewed lease holds until its new end")
	e.clock.Advance(2 * time.Second)
	b, ok, err := e.TakeSlot(e.ctx, "p", 1, "b", ttl)
	require.NoError(t, err)
	require.True(t, ok, "a lease that ran out is taken over")
	require.Greater(t, b.Token, a.Token)
	require.Equal(t, "b", b.Holder)

	_, err = e.RenewSlot(e.ctx, a2, ttl)
	require.ErrorIs(t, err, connlease.ErrLost, "the old holder's renewal")
	require.NoError(t, e.ReleaseSlot(e.ctx, a2), "giving back a lost slot is no error")
	slots, err := e.Slots(e.ctx)
	require.NoError(t, err)
	require.Len(t, slots, 1)
	require.Equal(t, b.Token, slots[0].Token, "the old holder's give-back leaves the new lease")
	_, ok, err = e.TakeSlot(e.ctx, "p", 1, "c", ttl)
	require.NoError(t, err)
	require.False(t, ok)

	// Run out, not taken over: lost all the same.
	e.clock.Advance(ttl + time.Second)
	_, err = e.RenewSlot(e.ctx, b, ttl)
	require.ErrorIs(t, err, connlease.ErrLost, "a lease that ran out")
	slots, err = e.Slots(e.ctx)
	require.NoError(t, err)
	require.Empty(t, slots, "Slots lists the leases not run out")

	// Given back: its renewal fails too.
	c, ok, err := e.TakeSlot(e.ctx, "p", 1, "c", ttl)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, e.ReleaseSlot(e.ctx, c))
	_, err = e.RenewSlot(e.ctx, c, ttl)
	require.ErrorIs(t, err, connlease.ErrLost, "a slot given back")
}

// Holders racing for a budget never hold more than its size: of 16 takers
// at once of a budget of 4, exactly 4 get a slot, each a different one.
func testConnSlotsRace(t *testing.T, e *env) {
	const size, takers = 4, 16
	for round := range 3 {
		provider := fmt.Sprintf("race%d", round)
		var wg sync.WaitGroup
		got := make([]connlease.Lease, takers)
		oks := make([]bool, takers)
		errs := make([]error, takers)
		start := make(chan struct{})
		for i := range takers {
			wg.Go(func() {
				<-start
				got[i], oks[i], errs[i] = e.TakeSlot(e.ctx, provider, size, fmt.Sprintf("h%d", i), ttl)
			})
		}
		close(start)
		wg.Wait()
		seen := map[int]bool{}
		for i := range takers {
			require.NoError(t, errs[i])
			if oks[i] {
				require.False(t, seen[got[i].N], "slot %d taken twice", got[i].N)
				seen[got[i].N] = true
			}
		}
		require.Len(t, seen, size, "round %d: exactly size takers pass", round)
	}
}

// The first take stores the budget's size. A take with another size fails
// with ErrConflict, naming both, while any slot is held, so holders told
// different sizes never hold the larger between them; once none is held
// (given back or run out) it sets the new size, and a budget that grew
// has the new slots.
func testConnSlotsSize(t *testing.T, e *env) {
	a, ok, err := e.TakeSlot(e.ctx, "eweka", 2, "a", ttl)
	require.NoError(t, err)
	require.True(t, ok)
	_, _, err = e.TakeSlot(e.ctx, "eweka", 4, "b", ttl)
	require.ErrorIs(t, err, edgeindex.ErrConflict, "a larger size while a slot is held")
	require.ErrorContains(t, err, "is 2 connections")
	require.ErrorContains(t, err, "coordinator's 4")
	_, _, err = e.TakeSlot(e.ctx, "eweka", 1, "b", ttl)
	require.ErrorIs(t, err, edgeindex.ErrConflict, "a smaller size while a slot is held")
	sizes, err := e.BudgetSizes(e.ctx)
	require.NoError(t, err)
	require.Equal(t, []connlease.BudgetSize{{Provider: "eweka", Size: 2}}, sizes)

	b, ok, err := e.TakeSlot(e.ctx, "eweka", 2, "b", ttl)
	require.NoError(t, err)
	require.True(t, ok)
	_, ok, err = e.TakeSlot(e.ctx, "eweka", 2, "c", ttl)
	require.NoError(t, err)
	require.False(t, ok, "the stored size's slots are all held")

	require.NoError(t, e.ReleaseSlot(e.ctx, a))
	_, _, err = e.TakeSlot(e.ctx, "eweka", 3, "c", ttl)
	require.ErrorIs(t, err, edgeindex.ErrConflict, "one slot is still held")
	e.clock.Advance(ttl + time.Second) // b runs out
	var got []int
	for _, h := range []string{"c", "d", "e"} {
		s, ok, err := e.TakeSlot(e.ctx, "eweka", 3, h, ttl)
		require.NoError(t, err)
		require.True(t, ok, "the budget, resized while no slot was held, grew to 3")
		got = append(got, s.N)
	}
	require.Equal(t, []int{0, 1, 2}, got)
	_, _, err = e.TakeSlot(e.ctx, "eweka", 2, "f", ttl)
	require.ErrorIs(t, err, edgeindex.ErrConflict)
	_, err = e.RenewSlot(e.ctx, b, ttl)
	require.ErrorIs(t, err, connlease.ErrLost)
	sizes, err = e.BudgetSizes(e.ctx)
	require.NoError(t, err)
	require.Equal(t, []connlease.BudgetSize{{Provider: "eweka", Size: 3}}, sizes)
}

// Demand lists, per holder, the slots it holds (leases not run out) and
// whether it found the budget full within the window, by the store's
// clock: a refused take records the want, a take that succeeds forgets
// it, and other providers' demand is apart.
func testConnSlotsDemand(t *testing.T, e *env) {
	demand := func(within time.Duration) []connlease.Holding {
		t.Helper()
		d, err := e.Demand(e.ctx, "eweka", within)
		require.NoError(t, err)
		return d
	}
	require.Empty(t, demand(time.Minute))
	take := func(holder string) (connlease.Lease, bool) {
		t.Helper()
		s, ok, err := e.TakeSlot(e.ctx, "eweka", 2, holder, ttl)
		require.NoError(t, err)
		return s, ok
	}
	a1, ok := take("a")
	require.True(t, ok)
	_, ok = take("a")
	require.True(t, ok)
	_, ok = take("b")
	require.False(t, ok, "the budget is full")
	_, ok, err := e.TakeSlot(e.ctx, "other", 1, "c", ttl)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []connlease.Holding{{Holder: "a", Held: 2}, {Holder: "b", Wants: true}}, demand(time.Minute))

	e.clock.Advance(2 * time.Second)
	require.Equal(t, []connlease.Holding{{Holder: "a", Held: 2}}, demand(time.Second), "b's want is older than the window")
	_, ok = take("b") // wants again, now
	require.False(t, ok)
	require.Equal(t, []connlease.Holding{{Holder: "a", Held: 2}, {Holder: "b", Wants: true}}, demand(time.Second))

	require.NoError(t, e.ReleaseSlot(e.ctx, a1))
	_, ok = take("b")
	require.True(t, ok, "a slot given back")
	require.Equal(t, []connlease.Holding{{Holder: "a", Held: 1}, {Holder: "b", Held: 1}}, demand(time.Minute),
		"a take forgets the holder's want")

	_, ok = take("a")
	require.False(t, ok)
	require.Equal(t, []connlease.Holding{{Holder: "a", Held: 1, Wants: true}, {Holder: "b", Held: 1}}, demand(time.Minute))
	e.clock.Advance(ttl + time.Second)
	require.Empty(t, demand(time.Second), "leases run out and wants grown old count for nothing")

	_, err = e.Demand(e.ctx, "eweka", -time.Second)
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
}
