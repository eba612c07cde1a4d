package sqlstore

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

var errBad = errors.New("bad value")

// A committer runs the calls waiting together as one round; when the
// round's write fails, each call runs alone, so only the bad one fails.
func TestCommitterRoundsAndIsolatesFailures(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()

	var mu sync.Mutex
	var sizes []int
	release := make(chan struct{})
	c := startCommitter(ctx, &wg, func(ctx context.Context, round []*call[int, int]) {
		commitRound(ctx, round, func(_ context.Context, round []*call[int, int]) error {
			mu.Lock()
			sizes = append(sizes, len(round))
			mu.Unlock()
			if round[0].req == 0 {
				<-release // hold the first round while the others queue
			}
			for _, c := range round {
				if c.req == 13 {
					return errBad
				}
				c.res = c.req * 2
			}
			return nil
		})
	})

	first := make(chan error, 1)
	go func() {
		_, err := c.do(ctx, 0)
		first <- err
	}()
	for {
		mu.Lock()
		n := len(sizes)
		mu.Unlock()
		if n == 1 {
			break
		}
	}
	type answer struct{ req, res int }
	answers := make(chan answer, 20)
	errs := make(chan error, 20)
	var callers sync.WaitGroup
	var started atomic.Int32
	for i := 1; i <= 20; i++ {
		callers.Add(1)
		go func() {
			defer callers.Done()
			started.Add(1)
			res, err := c.do(ctx, i)
			if err != nil {
				errs <- err
				return
			}
			answers <- answer{i, res}
		}()
	}
	for started.Load() < 20 {
		runtime.Gosched()
	}
	for range 100 { // let them reach the loop's channel, which is held
		runtime.Gosched()
	}
	close(release)
	require.NoError(t, <-first)
	callers.Wait()
	close(answers)
	close(errs)

	for a := range answers {
		require.Equal(t, a.req*2, a.res)
	}
	var failed []error
	for err := range errs {
		failed = append(failed, err)
	}
	require.Len(t, failed, 1, "only the bad call fails")
	require.ErrorIs(t, failed[0], errBad)
	mu.Lock()
	defer mu.Unlock()
	require.Greater(t, slices.Max(sizes[1:]), 1, "calls that queued while a round ran shared a round: %v", sizes)
}

// A call whose context ends while it waits is answered at once; a panic
// answers its round's calls with an error, and the loop goes on; after
// the store closes, calls fail with errClosed.
func TestCommitterCancelPanicClose(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	c := startCommitter(ctx, &wg, func(ctx context.Context, round []*call[int, int]) {
		for _, cl := range round {
			if cl.req < 0 {
				panic("negative")
			}
			cl.res = cl.req
		}
	})
	_, err := c.do(ctx, -1)
	require.ErrorContains(t, err, "panicked")
	res, err := c.do(ctx, 7)
	require.NoError(t, err)
	require.Equal(t, 7, res)

	done, stop := context.WithCancel(context.Background())
	stop()
	_, err = c.do(done, 1)
	require.ErrorIs(t, err, context.Canceled)

	cancel()
	wg.Wait()
	_, err = c.do(context.Background(), 1)
	require.ErrorIs(t, err, errClosed)
}
