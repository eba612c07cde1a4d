package prefetch_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"sync"
	"time"

	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/prefetch"
	"github.com/edgeindex/edgeindex/sources"
	"github.com/edgeindex/edgeindex/spool"
)

// memClaims is spool.Claims in memory, for a coordinator alone: every
// claim is granted, and it counts the chunks fetched.
type memClaims struct {
	mu      sync.Mutex
	fetched int
}

func (c *memClaims) ClaimChunk(context.Context, int64, lease.Span, string, time.Duration) (bool, error) {
	return true, nil
}

func (c *memClaims) ChunkFetched(context.Context, int64, lease.Span, string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fetched++
	return nil
}

func (c *memClaims) ForgetChunk(context.Context, int64, lease.Span, string) error { return nil }

// fixedTargets is prefetch.Targets that always lists the same ranges.
type fixedTargets []prefetch.Target

func (t fixedTargets) PrefetchTargets(context.Context, int) ([]prefetch.Target, error) {
	return t, nil
}

// One pass of a prefetcher over a leased range whose first 4000 articles a
// worker has taken already: it fetches the chunks from the range's next on,
// from the synthetic source into a disk spool.
func ExamplePrefetcher() {
	dir, err := os.MkdirTemp("", "prefetch")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sp, err := spool.Open(dir, spool.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer sp.Close()
	src, err := sources.NewSynthetic(sources.SyntheticConfig{})
	if err != nil {
		log.Fatal(err)
	}

	r := lease.Range{ID: 7, Group: "alt.binaries.test", Start: 1, End: 10_000, Next: 4001, State: lease.StateLeased}
	claims := &memClaims{}
	p, err := prefetch.New(prefetch.Config{
		Source:  src,
		Spool:   sp,
		Claims:  claims,
		Targets: fixedTargets{{Range: r, ChunkSize: 2000}},
	})
	if err != nil {
		log.Fatal(err)
	}
	n, err := p.Pass(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(n, "chunks stored,", claims.fetched, "marked fetched")
	for _, span := range lease.Spans(r.Start, r.End, 2000) {
		fmt.Println(span.From, span.To, sp.Has(r.ID, span))
	}
	// Output:
	// 3 chunks stored, 3 marked fetched
	// 1 2000 false
	// 2001 4000 false
	// 4001 6000 true
	// 6001 8000 true
	// 8001 10000 true
}
