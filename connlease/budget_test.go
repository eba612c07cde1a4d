package connlease_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/connlease"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// openStore opens a SQLite store in the test's directory; c, when not nil,
// is its one clock.
func openStore(t *testing.T, c clock.Clock) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.Open(t.Context(), "sqlite://"+filepath.Join(t.TempDir(), "x.db"), sqlstore.Config{Clock: c})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func newBudget(t *testing.T, cfg connlease.Config) *connlease.SharedBudget {
	t.Helper()
	b, err := connlease.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	return b
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// lostWithin reports whether s's Lost closes within 20s.
func lostWithin(s connlease.Slot) bool {
	select {
	case <-s.Lost():
		return true
	case <-time.After(20 * time.Second):
		return false
	}
}

func isLost(s connlease.Slot) bool {
	select {
	case <-s.Lost():
		return true
	default:
		return false
	}
}

// A coordinator that stops renewing (here: the database's clock jumps past
// its leases, as when it is paused or dead) loses its slots to another,
// which takes them over with a higher token; the first one's renewal then
// fails with ErrLost and its slot's Lost closes, which closes the
// connection holding it.
func TestConnectionBudgetTakeoverAfterExpiry(t *testing.T) {
	t.Parallel()
	c := clock.NewManual(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	store := openStore(t, c)
	const ttl = time.Second
	a := newBudget(t, connlease.Config{Store: store, Provider: "eweka", Size: 2, Holder: "a", TTL: ttl, Poll: 5 * time.Millisecond})
	b := newBudget(t, connlease.Config{Store: store, Provider: "eweka", Size: 2, Holder: "b", TTL: ttl, Poll: 5 * time.Millisecond})
	a1, err := a.Acquire(ctxT(t))
	require.NoError(t, err)
	a2, err := a.Acquire(ctxT(t))
	require.NoError(t, err)
	before, err := store.Slots(t.Context())
	require.NoError(t, err)

	short, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	_, err = b.Acquire(short)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "the budget is full")

	c.Advance(2 * ttl)
	b1, err := b.Acquire(ctxT(t))
	require.NoError(t, err, "a lease that ran out is taken over")
	after, err := store.Slots(t.Context())
	require.NoError(t, err)
	require.Len(t, after, 1)
	require.Equal(t, "b", after[0].Holder)
	require.Greater(t, after[0].Token, before[after[0].N].Token)

	require.True(t, lostWithin(a1), "a's first slot is lost")
	require.True(t, lostWithin(a2), "a's second slot ran out too")
	require.False(t, isLost(b1))
	a1.Release()
	a2.Release()
	after, err = store.Slots(t.Context())
	require.NoError(t, err)
	require.Len(t, after, 1, "a's late give-back leaves b's lease")
	require.Equal(t, "b", after[0].Holder)
	b1.Release()
	require.Zero(t, b.Held())
}

// A slot whose renewals fail (the database is gone) is counted lost by
// the local clock before its lease could run out, so its connection closes
// before another coordinator could be given the slot.
func TestConnectionBudgetLostOnRenewFailure(t *testing.T) {
	t.Parallel()
	store := openStore(t, nil)
	b := newBudget(t, connlease.Config{Store: store, Size: 1, Holder: "a", TTL: 300 * time.Millisecond})
	s, err := b.Acquire(ctxT(t))
	require.NoError(t, err)
	require.NoError(t, store.Close())
	require.True(t, lostWithin(s), "a slot that cannot be renewed is lost")
	s.Release()
	require.Zero(t, b.Held())
}

// Held slots are renewed: their leases' ends move on, and they are not
// lost, for many TTLs.
func TestConnectionBudgetRenews(t *testing.T) {
	t.Parallel()
	store := openStore(t, nil)
	b := newBudget(t, connlease.Config{Store: store, Size: 1, Holder: "a", TTL: 2 * time.Second})
	s, err := b.Acquire(ctxT(t))
	require.NoError(t, err)
	first, err := store.Slots(t.Context())
	require.NoError(t, err)
	require.Len(t, first, 1)
	deadline := time.Now().Add(20 * time.Second)
	for renewals, last := 0, first[0].Expires; renewals < 3; {
		require.False(t, isLost(s), "a renewed slot is lost")
		require.True(t, time.Now().Before(deadline), "no renewal")
		now, err := store.Slots(t.Context())
		require.NoError(t, err)
		require.Len(t, now, 1)
		require.Equal(t, first[0].Token, now[0].Token)
		if now[0].Expires.After(last) {
			renewals, last = renewals+1, now[0].Expires
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.NoError(t, b.Close())
	left, err := store.Slots(t.Context())
	require.NoError(t, err)
	require.Empty(t, left, "Close gives every slot back")
	require.True(t, isLost(s))
	_, err = b.Acquire(ctxT(t))
	require.ErrorIs(t, err, connlease.ErrClosed)
}

// A slot given back goes to a holder waiting for one; two budgets of one
// provider never hold more than its size between them.
func TestConnectionBudgetWaitsForRelease(t *testing.T) {
	t.Parallel()
	store := openStore(t, nil)
	refused := refusingStore{Store: store, refused: make(chan struct{}, 100)}
	a := newBudget(t, connlease.Config{Store: store, Size: 1, Holder: "a", Poll: 5 * time.Millisecond})
	b := newBudget(t, connlease.Config{Store: refused, Size: 1, Holder: "b", Poll: 5 * time.Millisecond})
	s, err := a.Acquire(ctxT(t))
	require.NoError(t, err)
	got := make(chan connlease.Slot, 1)
	go func() {
		s, err := b.Acquire(ctxT(t))
		if err != nil {
			s = nil
		}
		got <- s
	}()
	<-refused.refused // b asked while a holds the slot ...
	<-refused.refused // ... twice: it waits and asks again
	select {
	case <-got:
		t.Fatal("b took a slot a holds")
	default:
	}
	s.Release()
	s.Release() // a second give-back does nothing
	bs := <-got
	require.NotNil(t, bs)
	slots, err := store.Slots(t.Context())
	require.NoError(t, err)
	require.Len(t, slots, 1)
	require.Equal(t, "b", slots[0].Holder)
	bs.Release()
}

func TestConnectionBudgetBadConfig(t *testing.T) {
	t.Parallel()
	store := openStore(t, nil)
	for _, cfg := range []connlease.Config{
		{Size: 1, Holder: "a"},
		{Store: store, Holder: "a"},
		{Store: store, Size: 1},
		{Store: store, Size: 1, Holder: "a", TTL: time.Millisecond},
		{Store: store, Size: 1, Holder: "a", Poll: -time.Second},
		{Store: store, Size: 1, Holder: "a", Poll: connlease.MaxPoll + time.Nanosecond},
		{Store: store, Size: connlease.MaxSize + 1, Holder: "a"},
	} {
		_, err := connlease.New(cfg)
		require.ErrorIs(t, err, edgeindex.ErrInvalid, "%+v", cfg)
	}
}

// refusingStore signals each take the store refused: every slot held.
type refusingStore struct {
	connlease.Store
	refused chan struct{}
}

func (s refusingStore) TakeSlot(ctx context.Context, provider string, size int, holder string, ttl time.Duration) (connlease.Lease, bool, error) {
	sl, ok, err := s.Store.TakeSlot(ctx, provider, size, holder, ttl)
	if err == nil && !ok {
		select {
		case s.refused <- struct{}{}:
		default:
		}
	}
	return sl, ok, err
}
