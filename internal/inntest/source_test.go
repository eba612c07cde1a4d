package inntest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/internal/inntest"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/nntp"
	"github.com/edgeindex/edgeindex/sources/sourcetest"
)

// TestINNSourceConformance runs the chunk source suite on the nntp Source
// against INN, with a cancelled article leaving a hole.
func TestINNSourceConformance(t *testing.T) {
	t.Parallel()
	s := inntest.Start(t)
	s.NewGroup(t, "alt.binaries.conformance")
	arts := inntest.Generate(300, "alt.binaries.conformance")
	s.Post(t, arts)
	s.Ctlinnd(t, "cancel", arts[99].MessageID)
	numbers := s.Numbers(t, "alt.binaries.conformance")
	require.Equal(t, int64(1), numbers[arts[0].MessageID])
	require.NotContains(t, numbers, arts[99].MessageID, "article 100 is cancelled")

	sourcetest.Run(t, func(t *testing.T) sourcetest.Harness {
		src, err := nntp.New(nntp.Config{Addr: s.Addr(), MaxConns: 2})
		require.NoError(t, err)
		t.Cleanup(func() { src.Close() })
		empty := lease.Span{From: 301, To: 400}
		return sourcetest.Harness{
			Source:    src,
			Group:     "alt.binaries.conformance",
			Low:       1,
			High:      300,
			Present:   func(n int64) bool { return n >= 1 && n <= 300 && n != 100 },
			Span:      lease.Span{From: 1, To: 300},
			EmptySpan: &empty,
		}
	})
}
