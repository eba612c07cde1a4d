package sqlstore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/node"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// TestLastSeenWrittenBehind: Authenticate's last-seen times reach the
// database behind the requests, many nodes' in one write: another process
// sharing it sees them soon after, the authenticating one at once, and
// Close writes what is still noted.
func TestLastSeenWrittenBehind(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			url := b.URL(t)
			at := clock.NewManual(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
			serve, err := sqlstore.Open(t.Context(), url, sqlstore.Config{Clock: at})
			require.NoError(t, err)
			other := open(t, url, sqlstore.Config{Clock: at})
			tokens := make([]string, 50)
			for i := range tokens {
				tokens[i], err = node.NewToken()
				require.NoError(t, err)
				_, err = serve.AddNode(t.Context(), fmt.Sprintf("edge-%d", i), node.HashToken(tokens[i]))
				require.NoError(t, err)
			}

			at.Advance(time.Minute)
			for _, tok := range tokens {
				n, err := serve.Authenticate(t.Context(), node.HashToken(tok))
				require.NoError(t, err)
				require.Equal(t, at.Now(), n.LastSeen)
			}
			got, err := serve.Node(t.Context(), "edge-7")
			require.NoError(t, err)
			require.Equal(t, at.Now(), got.LastSeen, "the authenticating process sees it at once")
			require.Eventually(t, func() bool {
				ns, err := other.Nodes(t.Context())
				require.NoError(t, err)
				for _, n := range ns {
					if !n.LastSeen.Equal(at.Now()) {
						return false
					}
				}
				return len(ns) == len(tokens)
			}, 10*time.Second, 10*time.Millisecond, "another process sees every node's")

			// Seen again past seenEvery, then closed at once: Close writes it.
			at.Advance(time.Minute)
			_, err = serve.Authenticate(t.Context(), node.HashToken(tokens[3]))
			require.NoError(t, err)
			require.NoError(t, serve.Close())
			got, err = other.Node(t.Context(), "edge-3")
			require.NoError(t, err)
			require.Equal(t, at.Now(), got.LastSeen, "Close wrote what was noted")
		})
	}
}
