package inntest

import (
	"net"
	"syscall"
)

// quickAckConn sets TCP_QUICKACK before every read, so that this side ACKs
// at once. nnrpd writes an answer's status line and its text in separate
// writes without TCP_NODELAY: with the reader's ACK delayed (up to 40 ms on
// Linux), Nagle holds the text back until it comes, and every ARTICLE
// takes about 40 ms.
type quickAckConn struct {
	*net.TCPConn
	raw syscall.RawConn
}

func newQuickAckConn(c *net.TCPConn) net.Conn {
	raw, err := c.SyscallConn()
	if err != nil {
		return c
	}
	return &quickAckConn{TCPConn: c, raw: raw}
}

func (c *quickAckConn) Read(p []byte) (int, error) {
	c.raw.Control(func(fd uintptr) {
		syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_QUICKACK, 1)
	})
	return c.TCPConn.Read(p)
}
