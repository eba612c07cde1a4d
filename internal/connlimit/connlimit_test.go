package connlimit_test

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/internal/connlimit"
	"github.com/edgeindex/edgeindex/internal/testmain"
)

func TestMain(m *testing.M) { testmain.Main(m) }

// serve accepts on l until it closes, keeping every connection it gets
// open until the test ends; it sends each one byte so the client knows
// it was accepted.
func serve(t *testing.T, l net.Listener) {
	t.Helper()
	done := make(chan struct{})
	var conns []net.Conn
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
			c.Write([]byte{1})
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
}

// dial connects to addr from local IP from and reports whether the
// connection was accepted (a byte came) or closed at once.
func dial(t *testing.T, addr, from string) (net.Conn, bool) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var b [1]byte
	_, err = io.ReadFull(c, b[:])
	return c, err == nil
}

// TestBounds: of one address no more than PerIP connections are
// accepted, of all no more than Max; one over is closed at once, counted
// as shed, and a closed connection's slot is free again.
func TestBounds(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l, err := connlimit.New(inner, connlimit.Config{Max: 3, PerIP: 2})
	require.NoError(t, err)
	serve(t, l)
	addr := inner.Addr().String()

	a, ok := dial(t, addr, "127.0.0.1")
	require.True(t, ok)
	_, ok = dial(t, addr, "127.0.0.1")
	require.True(t, ok)
	_, ok = dial(t, addr, "127.0.0.1")
	require.False(t, ok, "a third from one address is closed")
	_, ok = dial(t, addr, "127.0.0.2")
	require.True(t, ok, "another address still gets in")
	_, ok = dial(t, addr, "127.0.0.3")
	require.False(t, ok, "past Max, every address is closed")
	require.Equal(t, int64(2), l.Shed())
	require.Equal(t, 3, l.Open())

	require.NoError(t, a.Close()) // the client's end; the server's stays open
	_, ok = dial(t, addr, "127.0.0.3")
	require.False(t, ok, "a slot is freed by the server closing its end, not by the client")
}

// TestRelease: a connection the server closes frees its slot, once, even
// when closed twice.
func TestRelease(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l, err := connlimit.New(inner, connlimit.Config{Max: 1})
	require.NoError(t, err)
	defer l.Close()
	accepted := make(chan net.Conn)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	for range 3 {
		c, err := net.Dial("tcp", inner.Addr().String())
		require.NoError(t, err)
		s := <-accepted
		require.Equal(t, 1, l.Open())
		require.NoError(t, s.Close())
		s.Close()
		require.Equal(t, 0, l.Open())
		c.Close()
	}
	_, err = connlimit.New(inner, connlimit.Config{Max: -1})
	require.Error(t, err)
}
