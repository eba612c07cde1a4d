package saturate_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/internal/saturate"
)

func TestAdd(t *testing.T) {
	t.Parallel()
	require.Equal(t, int64(5), saturate.Add(2, 3))
	require.Equal(t, int64(math.MaxInt64), saturate.Add(math.MaxInt64, 0))
	require.Equal(t, int64(math.MaxInt64), saturate.Add(math.MaxInt64-1, 2))
	require.Equal(t, int64(math.MaxInt64), saturate.Add(math.MaxInt64, math.MaxInt64))
}

func ExampleAdd() {
	fmt.Println(saturate.Add(6_900_000_000_000_000_000, 6_900_000_000_000_000_000))
	// Output: 9223372036854775807
}
