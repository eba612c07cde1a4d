package clock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/clock"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func received(ch <-chan time.Time) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestManual(t *testing.T) {
	t.Parallel()
	m := clock.NewManual(t0)
	require.Equal(t, t0, m.Now())
	now := m.After(0)
	require.True(t, received(now), "a wait of zero has passed")
	a, b := m.After(time.Second), m.After(time.Minute)
	require.Equal(t, 2, m.Waiters())
	m.Advance(999 * time.Millisecond)
	require.False(t, received(a))
	m.Advance(time.Millisecond)
	require.Equal(t, t0.Add(time.Second), m.Now())
	require.True(t, received(a))
	require.False(t, received(b))
	require.Equal(t, 1, m.Waiters())
	m.Set(t0.Add(time.Hour))
	require.True(t, received(b))
	require.Zero(t, m.Waiters())
	require.Equal(t, t0.Add(time.Hour), m.Now())
}

func TestSleep(t *testing.T) {
	t.Parallel()
	m := clock.NewManual(t0)
	done := make(chan error, 1)
	go func() { done <- clock.Sleep(context.Background(), m, time.Minute) }()
	require.Eventually(t, func() bool { return m.Waiters() == 1 }, 5*time.Second, time.Millisecond)
	m.Advance(time.Minute)
	require.NoError(t, <-done)

	cause := errors.New("stopped")
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() { done <- clock.Sleep(ctx, m, time.Minute) }()
	require.Eventually(t, func() bool { return m.Waiters() == 1 }, 5*time.Second, time.Millisecond)
	cancel(cause)
	require.ErrorIs(t, <-done, cause)

	// A ctx done already wins over a wait that passed already.
	require.ErrorIs(t, clock.Sleep(ctx, m, 0), cause)
	require.NoError(t, clock.Sleep(context.Background(), clock.Real, time.Millisecond))
}

func TestReal(t *testing.T) {
	t.Parallel()
	before := time.Now()
	require.False(t, clock.Real.Now().Before(before))
	select {
	case <-clock.Real.After(time.Millisecond):
	case <-time.After(5 * time.Second):
		t.Fatal("Real.After never fired")
	}
}
