package release_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/release"
)

// TestSearchWordsOrder: a repeated word counts once, where it first comes.
func TestSearchWordsOrder(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"my", "show", "s01e01", "720p"}, release.SearchWords("My.Show.S01E01 my SHOW 720p.show"))
	require.Nil(t, release.SearchWords(" .-_ "))
}
