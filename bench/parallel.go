package main

import (
	"context"
	"sync"
	"time"
)

// parallel runs work(w) for w from 0 to n-1, each in its own goroutine,
// and returns how long they took together and the first error one of
// them returned, else ctx's error.
func parallel(ctx context.Context, n int, work func(w int) error) (time.Duration, error) {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := time.Now()
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := work(w); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return elapsed, err
	}
	return elapsed, ctx.Err()
}
