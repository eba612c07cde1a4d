package jsonscan_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/internal/jsonscan"
)

func TestSpaceAndPeek(t *testing.T) {
	t.Parallel()
	p := []byte(" \t\r\n{ }")
	require.Equal(t, 4, jsonscan.Space(p, 0))
	require.Equal(t, 6, jsonscan.Space(p, 5))
	require.Equal(t, len(p), jsonscan.Space(p, len(p)))
	c, i := jsonscan.Peek(p, 0)
	require.Equal(t, byte('{'), c)
	require.Equal(t, 4, i)
	c, i = jsonscan.Peek([]byte("  "), 0)
	require.Equal(t, byte(0), c, "nothing but white space")
	require.Equal(t, 2, i)
}
