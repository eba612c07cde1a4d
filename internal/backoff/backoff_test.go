package backoff_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/internal/backoff"
)

func TestWait(t *testing.T) {
	t.Parallel()
	base, maxD := 100*time.Millisecond, 2*time.Second
	prev := time.Duration(0)
	for n := 1; n <= 10; n++ {
		lo, hi := backoff.Wait(n, base, maxD, 0), backoff.Wait(n, base, maxD, 0.999999)
		require.LessOrEqual(t, lo, hi)
		require.GreaterOrEqual(t, lo, prev/2, "the wait does not shrink")
		require.LessOrEqual(t, hi, maxD)
		require.Greater(t, hi, lo, "jittered")
		prev = lo
	}
	require.Equal(t, 50*time.Millisecond, backoff.Wait(1, base, maxD, 0))
	require.Equal(t, 100*time.Millisecond, backoff.Wait(2, base, maxD, 0))
	require.Equal(t, time.Second, backoff.Wait(30, base, maxD, 0), "capped at max, halved by the jitter's floor")
}

func TestWaitJitter(t *testing.T) {
	t.Parallel()
	// Between half and all of 100 ms, then of 200 ms: r 0.5 gives 3/4.
	require.Equal(t, 75*time.Millisecond, backoff.Wait(1, 100*time.Millisecond, time.Second, 0.5))
	require.Equal(t, 150*time.Millisecond, backoff.Wait(2, 100*time.Millisecond, time.Second, 0.5))
	// r just below 1 stays below the whole wait.
	require.Less(t, backoff.Wait(1, 100*time.Millisecond, time.Second, 0.999999), 100*time.Millisecond)
}

func TestWaitEdges(t *testing.T) {
	t.Parallel()
	base, maxD := 100*time.Millisecond, 300*time.Millisecond
	// Capped: half of 100, 200, 300, 300 ms with r 0.
	var got []time.Duration
	for n := 1; n <= 4; n++ {
		got = append(got, backoff.Wait(n, base, maxD, 0))
	}
	require.Equal(t, []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 150 * time.Millisecond, 150 * time.Millisecond}, got)
	require.Equal(t, 50*time.Millisecond, backoff.Wait(0, base, maxD, 0), "n below 1 counts as 1")
	require.Equal(t, 50*time.Millisecond, backoff.Wait(-3, base, maxD, 0))
	require.Equal(t, 25*time.Millisecond, backoff.Wait(1, base, 50*time.Millisecond, 0), "max below base caps the first wait")
	for _, n := range []int{40, 62, 63, 64, 1000, 1 << 30} {
		require.Equal(t, maxD/2, backoff.Wait(n, base, maxD, 0), "no overflow at n=%d", n)
		require.Equal(t, 12*time.Hour, backoff.Wait(n, time.Hour, 24*time.Hour, 0), "no overflow at n=%d", n)
	}
	require.Zero(t, backoff.Wait(3, 0, 0, 0.5), "no wait at all")
}
