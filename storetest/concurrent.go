package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
)

// ConcurrentConfig sizes RunConcurrent. Zero fields take the defaults the
// foundation issue asks for: 32 workers over 500 ranges.
type ConcurrentConfig struct {
	Workers int // 0: 32
	Ranges  int // 0: 500
}

// RunConcurrent has many workers lease, post and finish every range of a
// group at once, then checks that no range was ever held by two holders at
// once, every range is done exactly once, and every item is stored exactly
// once. Run it under -race.
func RunConcurrent(t *testing.T, open Open, cfg ConcurrentConfig) {
	t.Helper()
	if cfg.Workers == 0 {
		cfg.Workers = 32
	}
	if cfg.Ranges == 0 {
		cfg.Ranges = 500
	}
	e := newEnv(t, open)
	const size, batches, perBatch = 40, 2, 3
	_, err := e.AddGroup(e.ctx, grouplease.Group{Name: "concurrent", RangeSize: size, ChunkSize: 10})
	require.NoError(t, err)
	rs, err := e.AddRanges(e.ctx, grouplease.NewRanges{Group: "concurrent", From: 1, To: int64(cfg.Ranges * size)})
	require.NoError(t, err)
	require.Len(t, rs, cfg.Ranges)

	var (
		mu       sync.Mutex
		holder   = map[int64]string{} // range -> the worker holding it now
		finished = map[int64]int{}
	)
	var g errgroup.Group
	for w := range cfg.Workers {
		name := fmt.Sprintf("w%02d", w)
		g.Go(func() error {
			for {
				l, err := e.Grant(e.ctx, name, time.Hour)
				if errors.Is(err, lease.ErrNoWork) {
					return nil
				}
				if err != nil {
					return err
				}
				id := l.Range.ID
				mu.Lock()
				if h, ok := holder[id]; ok {
					mu.Unlock()
					return fmt.Errorf("range %d granted to %s while %s holds it", id, name, h)
				}
				holder[id] = name
				mu.Unlock()

				step := (l.Range.End - l.Range.Start + 1) / batches
				for from := l.Range.Start; from <= l.Range.End; from += step {
					b := batch.Batch{From: from, To: from + step - 1, Headers: step}
					for i := range perBatch {
						b.Items = append(b.Items, batch.Item{Key: fmt.Sprintf("%d/%d/%d", id, from, i), Value: []byte(`1`)})
					}
					if _, err := e.Put(e.ctx, id, fence(l), b); err != nil {
						return err
					}
					// Every retry of a stored batch is a duplicate.
					res, err := e.Put(e.ctx, id, fence(l), b)
					if err != nil || !res.Duplicate {
						return fmt.Errorf("retry of range %d batch %d: %+v, %v", id, from, res, err)
					}
				}
				mu.Lock()
				delete(holder, id)
				finished[id]++
				mu.Unlock()
				if err := e.Finish(e.ctx, id, fence(l)); err != nil {
					return err
				}
			}
		})
	}
	require.NoError(t, g.Wait())

	require.Len(t, finished, cfg.Ranges)
	for id, n := range finished {
		require.Equal(t, 1, n, "range %d finished %d times", id, n)
	}
	done, err := e.Ranges(e.ctx, grouplease.RangeFilter{Group: "concurrent", State: lease.StateDone, Limit: 10000})
	require.NoError(t, err)
	require.Len(t, done, cfg.Ranges)
	for _, r := range done {
		require.Equal(t, r.End+1, r.Next)
		require.Equal(t, int64(size), r.Headers)
	}
	seen := map[string]int{}
	for _, it := range e.feed(t, "concurrent", 1000, cfg.Ranges*batches*perBatch) {
		seen[it.Key]++
	}
	require.Len(t, seen, cfg.Ranges*batches*perBatch, "every item is stored")
	for k, n := range seen {
		require.Equal(t, 1, n, "item %s stored %d times", k, n)
	}
	lanes, err := e.Lanes(e.ctx, "concurrent")
	require.NoError(t, err)
	require.Equal(t, int64(cfg.Ranges), lanes[0].RangesDone)
	require.Equal(t, int64(cfg.Ranges*size), lanes[0].Headers)
}

// RunFencingRace has many workers race for one expired range: exactly one
// wins the grant, and the paused holder's writes are all refused.
func RunFencingRace(t *testing.T, open Open) {
	t.Helper()
	e := newEnv(t, open)
	_, err := e.AddGroup(e.ctx, grouplease.Group{Name: "race", RangeSize: 100, ChunkSize: 10})
	require.NoError(t, err)
	_, err = e.AddRanges(e.ctx, grouplease.NewRanges{Group: "race", From: 1, To: 100})
	require.NoError(t, err)
	paused, err := e.Grant(e.ctx, "paused", time.Minute)
	require.NoError(t, err)
	e.clock.Advance(2 * time.Minute)

	var wins sync.Map
	var g errgroup.Group
	for w := range 16 {
		g.Go(func() error {
			l, err := e.Grant(e.ctx, fmt.Sprintf("w%d", w), time.Minute)
			if errors.Is(err, lease.ErrNoWork) {
				return nil
			}
			if err == nil {
				wins.Store(w, l)
			}
			return err
		})
	}
	require.NoError(t, g.Wait())
	n := 0
	var winner lease.Lease
	wins.Range(func(_, v any) bool { n++; winner = v.(lease.Lease); return true })
	require.Equal(t, 1, n, "exactly one worker wins an expired range")

	_, err = e.Put(e.ctx, paused.Range.ID, fence(paused), batch.Batch{From: 1, To: 10, Items: []batch.Item{{Key: "late"}}})
	require.ErrorIs(t, err, edgeindex.ErrLeaseLost)
	require.ErrorIs(t, e.Finish(e.ctx, paused.Range.ID, fence(paused)), edgeindex.ErrLeaseLost)
	_, err = e.Put(e.ctx, winner.Range.ID, fence(winner), batch.Batch{From: 1, To: 10, Items: []batch.Item{{Key: "ok"}}})
	require.NoError(t, err)
	stored := e.feed(t, "", 10, 1)
	require.Equal(t, "ok", stored[0].Key)
}
