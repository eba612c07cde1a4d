package quickack_test

import (
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/internal/quickack"
)

func TestConn(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err == nil {
			c.Write([]byte("hello"))
			c.Close()
		}
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	qc := quickack.Conn(c)
	defer qc.Close()
	b, err := io.ReadAll(qc)
	require.NoError(t, err)
	require.Equal(t, "hello", string(b), "reads pass through")

	a, z := net.Pipe()
	defer a.Close()
	defer z.Close()
	require.Same(t, a, quickack.Conn(a), "a connection that is not TCP is returned as it is")
}
