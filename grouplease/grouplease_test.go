package grouplease_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
)

func TestPlan(t *testing.T) {
	t.Parallel()
	got, err := grouplease.Plan(1, 50000, 20000)
	require.NoError(t, err)
	require.Equal(t, []lease.Span{{From: 1, To: 20000}, {From: 20001, To: 40000}, {From: 40001, To: 50000}}, got)
	for _, bad := range [][3]int64{{10, 9, 5}, {-1, 9, 5}, {1, 9, 0}, {1, 9, -3}} {
		_, err := grouplease.Plan(bad[0], bad[1], bad[2])
		require.ErrorIs(t, err, edgeindex.ErrInvalid, "%v", bad)
	}
}

func TestNormalize(t *testing.T) {
	t.Parallel()
	g, err := grouplease.Group{Name: "alt.binaries.test"}.Normalize()
	require.NoError(t, err)
	require.Equal(t, int64(20000), g.RangeSize)
	require.Equal(t, int64(2000), g.ChunkSize)
	for _, bad := range []grouplease.Group{{}, {Name: "a b"}, {Name: "a\x00"}, {Name: "\xff"}, {Name: "a", RangeSize: -1}, {Name: "a", ChunkSize: -1}} {
		_, err := bad.Normalize()
		require.ErrorIs(t, err, edgeindex.ErrInvalid, "%+v", bad)
	}
}

func ExamplePlan() {
	spans, _ := grouplease.Plan(1, 50000, grouplease.DefaultRangeSize)
	for _, s := range spans {
		fmt.Println(s.From, s.To)
	}
	// Output:
	// 1 20000
	// 20001 40000
	// 40001 50000
}
