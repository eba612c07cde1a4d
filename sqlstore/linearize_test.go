package sqlstore_test

import (
	"flag"
	"testing"

	"github.com/edgeindex/edgeindex/storetest"
)

var (
	linearizeOps       = flag.Int("linearize.ops", 0, "calls per client in TestLinearizable (0: $EDGEINDEX_LINEARIZE_OPS, else 200)")
	linearizeHistories = flag.Int("linearize.histories", 0, "histories per backend in TestLinearizable (0: $EDGEINDEX_LINEARIZE_HISTORIES, else 1)")
	linearizeSeed      = flag.Int64("linearize.seed", 0, "seed of TestLinearizable's clients (0: $EDGEINDEX_LINEARIZE_SEED, else from the time)")
)

// TestLinearizable checks, with porcupine, that histories of concurrent
// range and lane calls on each backend are linearizable against the wire
// contract's model.
func TestLinearizable(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			storetest.RunLinearizable(t, opener(b.URL), storetest.LinearizeConfig{
				Ops:       *linearizeOps,
				Histories: *linearizeHistories,
				Seed:      *linearizeSeed,
				// PostgreSQL's lane grant passes over a locked lane row.
				SkipLocked: b.Name == "postgres",
			})
		})
	}
}
