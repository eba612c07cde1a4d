package main

import (
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/internal/connlimit"
	"github.com/edgeindex/edgeindex/internal/connlimit/connlimittest"
)

// TestNewznabSlowloris: the front door's listener and server (bindNewznab,
// newznabServer) hold at most connlimit.DefaultPerIP connections of a
// host that sends half its headers and stops, answer another host
// meanwhile, and close the stalled ones at the header timeout.
func TestNewznabSlowloris(t *testing.T) {
	t.Parallel()
	l, err := bindNewznab("127.0.0.1:0")
	require.NoError(t, err)
	srv := newznabServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), nil)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	connlimittest.Slowloris(t, l.Addr().String(), connlimit.DefaultPerIP, srv.ReadHeaderTimeout, "/", http.StatusOK)
	require.NoError(t, srv.Close())
	require.True(t, errors.Is(<-served, http.ErrServerClosed))
}
