package node_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/node"
)

func TestToken(t *testing.T) {
	t.Parallel()
	a, err := node.NewToken()
	require.NoError(t, err)
	b, err := node.NewToken()
	require.NoError(t, err)
	require.Len(t, a, 64)
	require.NotEqual(t, a, b)
	require.Equal(t, node.HashToken(a), node.HashToken(a))
	require.NotEqual(t, node.HashToken(a), node.HashToken(b))
}

func TestValidName(t *testing.T) {
	t.Parallel()
	require.NoError(t, node.ValidName("edge-1.example_2"))
	for _, bad := range []string{"", "a b", "a/b", "ü", string(make([]byte, 65))} {
		require.ErrorIs(t, node.ValidName(bad), edgeindex.ErrInvalid, "%q", bad)
	}
}

func ExampleHashToken() {
	fmt.Printf("%x\n", node.HashToken("secret")[:4])
	// Output: 2bb80d53
}
