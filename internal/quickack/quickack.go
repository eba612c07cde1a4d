// Package quickack makes a TCP connection acknowledge what it reads at once.
//
// Some servers, INN's nnrpd among them, write a reply's status line and its
// text in two small writes with Nagle's algorithm on. When the reader delays
// its ACK (up to 40 ms on Linux), the second write waits for it, and every
// short reply takes 40 ms. Setting TCP_QUICKACK before each read ends the
// wait. Linux clears the option by itself, so it is set again each time.
package quickack

import "net"

// Conn returns c wrapped so that each Read first asks for quick ACKs, when c
// is a TCP connection on a system that has TCP_QUICKACK; otherwise c.
func Conn(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	raw, err := tc.SyscallConn()
	if err != nil || !supported {
		return c
	}
	return &conn{TCPConn: tc, set: func() { raw.Control(setQuickAck) }}
}

type conn struct {
	*net.TCPConn
	set func()
}

func (c *conn) Read(p []byte) (int, error) {
	c.set()
	return c.TCPConn.Read(p)
}
