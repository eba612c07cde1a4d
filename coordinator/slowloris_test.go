package coordinator_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/coordinator"
	"github.com/edgeindex/edgeindex/internal/connlimit/connlimittest"
)

// TestSlowloris: the node API, served as serve serves it (Listen and
// HTTPServer), holds at most MaxConnsPerIP connections of a host that
// sends half its headers and stops, answers another host meanwhile, and
// closes the stalled ones at its header timeout.
func TestSlowloris(t *testing.T) {
	t.Parallel()
	h := newHarness(t, backends[0].URL(t), nil)
	l, err := coordinator.Listen("127.0.0.1:0")
	require.NoError(t, err)
	hs := h.srv.HTTPServer()
	served := make(chan error, 1)
	go func() { served <- hs.Serve(l) }()
	connlimittest.Slowloris(t, l.Addr().String(), coordinator.MaxConnsPerIP, hs.ReadHeaderTimeout, "/healthz", http.StatusOK)
	require.NoError(t, hs.Close())
	require.True(t, errors.Is(<-served, http.ErrServerClosed))
}
