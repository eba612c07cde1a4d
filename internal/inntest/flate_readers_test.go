package inntest_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	kflate "github.com/klauspost/compress/flate"
	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/internal/inflate"
	"github.com/edgeindex/edgeindex/internal/inntest"
)

// stored is p as one stored deflate block and an empty one, as a sync
// flush ends: what a client sends after COMPRESS DEFLATE.
func stored(p string) []byte {
	n := len(p)
	b := append([]byte{0, byte(n), byte(n >> 8), ^byte(n), ^byte(n >> 8)}, p...)
	return append(b, 0, 0, 0, 0xff, 0xff)
}

// overDeflated asks nnrpd for COMPRESS DEFLATE, then GROUP and OVER of
// the first 300 articles, reading the server's stream through the flate
// reader newReader makes; it returns the overview lines read, or the
// error that stopped it (a read that waited past 3 s: the reader held
// the reply back for the stream's next bytes, which nnrpd sends only
// after the next command).
func overDeflated(t *testing.T, addr, group string, newReader func(io.Reader) io.Reader) (int, error) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	plain := bufio.NewReader(c)
	line := func(r *bufio.Reader) (string, error) {
		c.SetReadDeadline(time.Now().Add(3 * time.Second))
		s, err := r.ReadString('\n')
		return strings.TrimRight(s, "\r\n"), err
	}
	greeting, err := line(plain)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(greeting, "20"), greeting)
	for _, cmd := range []string{"MODE READER", "COMPRESS DEFLATE"} {
		fmt.Fprintf(c, "%s\r\n", cmd)
		reply, err := line(plain)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(reply, "20"), "%s: %s", cmd, reply)
	}
	z := bufio.NewReader(newReader(plain))
	c.Write(stored("GROUP " + group + "\r\n"))
	if reply, err := line(z); err != nil || !strings.HasPrefix(reply, "211 ") {
		return 0, fmt.Errorf("GROUP: %q: %w", reply, err)
	}
	c.Write(stored("OVER 1-300\r\n"))
	if reply, err := line(z); err != nil || !strings.HasPrefix(reply, "224 ") {
		return 0, fmt.Errorf("OVER: %q: %w", reply, err)
	}
	n := 0
	for {
		l, err := line(z)
		if err != nil {
			return n, err
		}
		if l == "." {
			return n, nil
		}
		n++
	}
}

// TestFlateReadersOnNNRPD: why internal/inflate is kept (decision 37)
// rather than github.com/klauspost/compress/flate. nnrpd ends each
// deflated reply with zlib's Z_PARTIAL_FLUSH; internal/inflate hands on
// each block's data as it ends, and reads every reply whole from its own
// bytes; klauspost's reader (v1.20.1, the module graph's) reads GROUP's
// short reply (a fixed-code block) but holds the OVER reply (a dynamic
// block) back until more of the stream comes, as compress/flate does, so
// a client reading with it waits on every overview.
// When a release of it reads nnrpd's replies, this test says so, and the
// copy can go.
func TestFlateReadersOnNNRPD(t *testing.T) {
	t.Parallel()
	s := inntest.Start(t)
	const group = "alt.binaries.flate"
	s.NewGroup(t, group)
	s.Post(t, inntest.Generate(300, group))

	n, err := overDeflated(t, s.Addr(), group, func(r io.Reader) io.Reader { return inflate.NewReader(r) })
	require.NoError(t, err, "internal/inflate")
	require.Equal(t, 300, n)

	n, err = overDeflated(t, s.Addr(), group, func(r io.Reader) io.Reader { return kflate.NewReader(r) })
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "klauspost/compress/flate read %d lines and %v: if it now reads nnrpd's replies whole, use it (issue 30)", n, err)
	t.Logf("klauspost/compress/flate: %d of 300 lines, then %v", n, err)
}
