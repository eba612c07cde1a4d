// Package connlimittest attacks an HTTP server the way slowloris does,
// for the tests of the servers that face the world.
package connlimittest

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Slowloris opens perIP connections to the HTTP server at addr from
// 127.0.0.1, each sending half a request's headers and then nothing, and
// checks that:
//   - one more from 127.0.0.1 is closed at once, unanswered;
//   - a whole request for path from 127.0.0.2 is answered with want;
//   - the server closes every half-sent connection within
//     headerTimeout (and a little).
func Slowloris(t *testing.T, addr string, perIP int, headerTimeout time.Duration, path string, want int) {
	t.Helper()
	conns := make([]net.Conn, perIP)
	for i := range conns {
		c := dial(t, addr, "127.0.0.1")
		_, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\nX-Slow: ")
		require.NoError(t, err)
		conns[i] = c
	}
	start := time.Now()

	over := dial(t, addr, "127.0.0.1")
	over.SetReadDeadline(time.Now().Add(headerTimeout / 2))
	_, err := io.WriteString(over, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
	if err == nil {
		_, err = over.Read(make([]byte, 1))
	}
	require.Error(t, err, "a connection past the bound of one address is closed, unanswered")
	if ne, ok := errors.AsType[net.Error](err); ok {
		require.False(t, ne.Timeout(), "closed at once, not left waiting: %v", err)
	}

	c := dial(t, addr, "127.0.0.2")
	_, err = io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	require.NoError(t, err)
	c.SetReadDeadline(time.Now().Add(headerTimeout))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err, "another address is answered while one holds its bound")
	res.Body.Close()
	require.Equal(t, want, res.StatusCode)

	errs := make([]error, len(conns))
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			c.SetReadDeadline(start.Add(headerTimeout + 5*time.Second))
			_, errs[i] = io.Copy(io.Discard, c) // a 408, or nothing, then the end
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err, "the server closes a connection that never sends its headers")
	}
}

func dial(t *testing.T, addr, from string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}
