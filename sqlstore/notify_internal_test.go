package sqlstore

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/internal/pgtest"
	"github.com/edgeindex/edgeindex/lease"
)

// listenFor runs s.listenChunks with ping until the test ends, and
// returns a channel of its missed calls.
func listenFor(t *testing.T, s *Store, ping time.Duration) <-chan struct{} {
	t.Helper()
	missed := make(chan struct{}, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- s.listenChunks(ctx, ping, func(int64, lease.Span) {}, func() { missed <- struct{}{} })
	}()
	t.Cleanup(func() {
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
	})
	return missed
}

// A server that takes the listener's connection and never answers does
// not hold the listener: its start gives up within the ping, and it tries
// again, on a new connection.
func TestListenSilentServer(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	var accepted atomic.Int64
	go func() {
		var held []net.Conn // open, never read from nor written to
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return // the listener closed as the test ends
			}
			accepted.Add(1)
			held = append(held, c)
		}
	}()
	s := &Store{channel: "edgeindex_chunk", url: fmt.Sprintf("postgres://u@%s/db?sslmode=disable", ln.Addr())}
	listenFor(t, s, 100*time.Millisecond)
	require.Eventually(t, func() bool { return accepted.Load() >= 2 }, 10*time.Second, 10*time.Millisecond,
		"the listener waits on a server that never answers")
}

// A listener whose server stops answering after its LISTEN (the backend
// paused: the connection stays open, nothing comes) finds it out with a
// ping, connects again, and calls missed.
func TestListenPausedBackend(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), pgtest.URL(t), Config{})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	// The ping also bounds each new connection, so it is long enough for
	// a machine loaded by the rest of the suite to connect within it.
	missed := listenFor(t, s, time.Second)
	var pid int
	require.Eventually(t, func() bool {
		return s.db.GetContext(t.Context(), &pid, `SELECT pid FROM pg_stat_activity
			WHERE query LIKE 'LISTEN %' AND query LIKE '%' || current_schema() || '%'`) == nil
	}, 10*time.Second, 10*time.Millisecond)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Skipf("cannot pause backend %d (a server of another machine or user): %v", pid, err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) })
	select {
	case <-missed:
	case <-time.After(time.Minute):
		t.Fatal("the paused backend holds the listener")
	}
}
