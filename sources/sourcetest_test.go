package sources_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/sources"
	"github.com/edgeindex/edgeindex/sources/sourcetest"
)

// The synthetic source writes a line for every article of a span whatever
// its watermarks (the wire contract's rule), so every number is present and
// there is no empty span to test.
func TestSyntheticConformance(t *testing.T) {
	sourcetest.Run(t, func(t *testing.T) sourcetest.Harness {
		src, err := sources.NewSynthetic(sources.SyntheticConfig{Groups: []string{"alt.binaries.test"}})
		require.NoError(t, err)
		big := lease.Span{From: 5_000_000_000, To: 5_000_001_999}
		return sourcetest.Harness{
			Source:  src,
			Group:   "alt.binaries.test",
			Low:     1,
			High:    10_000_000,
			Present: func(int64) bool { return true },
			Span:    lease.Span{From: 1, To: 2000},
			BigSpan: &big,
		}
	})
}
