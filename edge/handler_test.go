package edge_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/edge"
)

func TestMissingFrom(t *testing.T) {
	t.Parallel()
	require.Nil(t, edge.MissingFrom(1, 3, []int64{1, 2, 3}))
	require.Equal(t, []int64{1, 2, 3}, edge.MissingFrom(1, 3, nil))
	require.Equal(t, []int64{2}, edge.MissingFrom(1, 3, []int64{0, 1, 1, 3, 4}), "numbers outside the span and repeats are ignored")
	require.Equal(t, []int64{1 << 33}, edge.MissingFrom(1<<33, 1<<33+1, []int64{1<<33 + 1}))
}
