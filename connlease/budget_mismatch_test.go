package connlease_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/connlease"
)

// Two coordinators started with different --nntp-conns for one provider
// (an operator's typo, or a rolling change of the account's size) must
// not, together, hold more slots than the size the first of them stored.
// Each used to take the slots numbered below its own Size, so a Size 2
// and a Size 4 held 4 between them; the store keeps the size now, and the
// other size is refused while a slot is held. (Here the smaller comes
// first; had the larger, the smaller would be refused the same way.)
func TestConnectionBudgetMismatchedSizeRefused(t *testing.T) {
	t.Parallel()
	store := openStore(t, nil)
	small := newBudget(t, connlease.Config{Store: store, Provider: "eweka", Size: 2, Holder: "a", Poll: 5 * time.Millisecond})
	big := newBudget(t, connlease.Config{Store: store, Provider: "eweka", Size: 4, Holder: "b", Poll: 5 * time.Millisecond})
	for range 2 {
		_, err := small.Acquire(ctxT(t))
		require.NoError(t, err)
	}
	short, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err := big.Acquire(short)
	require.ErrorIs(t, err, edgeindex.ErrConflict, "b took a third slot of an account that a holds as 2 in all")
	require.ErrorContains(t, err, "is 2 connections")
	slots, err := store.Slots(t.Context())
	require.NoError(t, err)
	require.LessOrEqual(t, len(slots), 2)
}

// A store that commits the take while the caller gives up, and then
// reports the take's context ended, as database/sql does when ctx is
// cancelled while the reply of a committed UPDATE ... RETURNING is on its
// way. A take on a context of its own gets its reply.
type lateStore struct {
	connlease.Store
	cancel context.CancelFunc
}

func (s lateStore) TakeSlot(ctx context.Context, provider string, size int, holder string, ttl time.Duration) (connlease.Lease, bool, error) {
	sl, ok, err := s.Store.TakeSlot(context.WithoutCancel(ctx), provider, size, holder, ttl)
	if err != nil || !ok {
		return sl, ok, err
	}
	s.cancel() // the caller gives up (put handed its waiter a connection; GROUP's deadline) ...
	if ctx.Err() != nil {
		return connlease.Lease{}, false, ctx.Err() // ... after the row was committed
	}
	return sl, ok, nil // the take ran on a context of its own: its reply arrives
}

// An Acquire whose context ends while its take is committed must not leave
// the slot leased to nobody for a whole TTL: the pool cancels its waiter's
// Acquire every time it hands that waiter a connection put back, so this
// happens in normal running, and each one costs the account a connection
// for 30 s.
func TestConnectionBudgetAcquireCancelledAfterTakeLeaksNoSlot(t *testing.T) {
	t.Parallel()
	store := openStore(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	b := newBudget(t, connlease.Config{Store: lateStore{Store: store, cancel: cancel}, Provider: "eweka", Size: 1, Holder: "a",
		TTL: time.Minute, Poll: 5 * time.Millisecond})
	_, err := b.Acquire(ctx)
	require.ErrorIs(t, err, context.Canceled)
	slots, err := store.Slots(t.Context())
	require.NoError(t, err)
	require.Empty(t, slots, "a slot nobody holds stays leased until its TTL runs out")
	other := newBudget(t, connlease.Config{Store: store, Provider: "eweka", Size: 1, Holder: "b", Poll: 5 * time.Millisecond})
	short, cancel2 := context.WithTimeout(t.Context(), time.Second)
	defer cancel2()
	s, err := other.Acquire(short)
	require.NoError(t, err, "the account's one slot is free, yet nobody can take it")
	var _ connlease.Slot = s
}
