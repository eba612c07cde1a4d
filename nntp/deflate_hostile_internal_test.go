package nntp

import (
	"bufio"
	"compress/flate"
	"context"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// rawDeflateServer is a hostile server: it lists COMPRESS DEFLATE, answers
// 206, and then hands the raw socket (and an inflater of the client's
// commands) to after, which does as it pleases.
type rawDeflateServer struct {
	ln      net.Listener
	wg      sync.WaitGroup
	written atomic.Int64 // bytes written by after
}

type countingWriter struct {
	c net.Conn
	n *atomic.Int64
}

func (w countingWriter) Write(p []byte) (int, error) {
	k, err := w.c.Write(p)
	w.n.Add(int64(k))
	return k, err
}

func startRawDeflate(t *testing.T, after func(w countingWriter, cmds *bufio.Reader)) *rawDeflateServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &rawDeflateServer{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				r := bufio.NewReader(c)
				c.Write([]byte("200 hostile\r\n"))
				for {
					l, err := r.ReadString('\n')
					if err != nil {
						return
					}
					switch strings.ToUpper(strings.Fields(l)[0]) {
					case "CAPABILITIES":
						c.Write([]byte("101 caps\r\nVERSION 2\r\nREADER\r\nCOMPRESS DEFLATE\r\n.\r\n"))
					case "COMPRESS":
						c.Write([]byte("206 compression active\r\n"))
						after(countingWriter{c, &s.written}, bufio.NewReader(flate.NewReader(r)))
						return
					default:
						c.Write([]byte("500 what\r\n"))
					}
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

// TestDeflateEmptyBlocksCutByWireBound: a plain status line is cut at
// maxReplyLine bytes; a deflated one must be cut at some bound of wire
// bytes too, not only at the call's deadline. A server that answers GROUP
// with endless empty stored blocks (5 bytes each, inflating to nothing)
// makes the client read and inflate at line rate until Timeout.
func TestDeflateEmptyBlocksCutByWireBound(t *testing.T) {
	empty := []byte{0x00, 0x00, 0x00, 0xff, 0xff} // BFINAL 0, stored, LEN 0
	blocks := make([]byte, 0, 64<<10)
	for len(blocks)+len(empty) <= cap(blocks) {
		blocks = append(blocks, empty...)
	}
	srv := startRawDeflate(t, func(w countingWriter, cmds *bufio.Reader) {
		if _, err := cmds.ReadString('\n'); err != nil { // GROUP
			return
		}
		for {
			if _, err := w.Write(blocks); err != nil {
				return
			}
		}
	})
	src, err := New(Config{Addr: srv.ln.Addr().String(), Compress: CompressDeflate, Timeout: 2 * time.Second, MaxConns: 1})
	require.NoError(t, err)
	defer src.Close()
	start := time.Now()
	_, err = src.Group(context.Background(), "alt.test")
	require.Error(t, err)
	t.Logf("GROUP failed after %s and %d MiB on the wire: %v", time.Since(start).Round(time.Millisecond), srv.written.Load()>>20, err)
	require.ErrorIs(t, err, ErrTooLarge, "cut by a bound of wire bytes, not by the deadline")
}

// TestDeflateStatusLineBombCut: a GROUP status line that inflates
// without end is cut at maxReplyLine, the heap flat.
func TestDeflateStatusLineBombCut(t *testing.T) {
	srv := startRawDeflate(t, func(w countingWriter, cmds *bufio.Reader) {
		if _, err := cmds.ReadString('\n'); err != nil {
			return
		}
		fw, _ := flate.NewWriter(w, flate.BestCompression)
		fw.Write([]byte("211 "))
		ones := []byte(strings.Repeat("1", 1<<20))
		for i := 0; i < 4096; i++ { // 4 GiB inflated
			if _, err := fw.Write(ones); err != nil {
				return
			}
		}
		fw.Flush()
	})
	src, err := New(Config{Addr: srv.ln.Addr().String(), Compress: CompressDeflate, Timeout: 5 * time.Second, MaxConns: 1})
	require.NoError(t, err)
	defer src.Close()
	_, err = src.Group(context.Background(), "alt.test")
	require.ErrorIs(t, err, ErrProtocol)
	require.Less(t, srv.written.Load(), int64(4<<20))
}

// TestDeflateWriterMemorySmall: the deflater of a connection's commands
// (a few dozen bytes each) costs no more than the inflater of its replies.
// flate.NewWriter allocated some 1.3 MB at BestSpeed, held for the life of
// every pooled connection.
func TestDeflateWriterMemorySmall(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	c := &conn{cfg: &Config{}}
	const runs = 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		c.setRW(a)
		c.startDeflate()
	}
	runtime.ReadMemStats(&after)
	per := int64(after.TotalAlloc-before.TotalAlloc) / runs
	t.Logf("setRW and startDeflate: %d B a connection", per)
	require.Less(t, per, int64(256<<10), "bytes allocated by setRW and startDeflate")
}

// TestDeflate206ThenClose: a server that answers 206 and hangs up: the
// handshake ends at 206, and GROUP fails on a cut stream. The server reads
// the command before it hangs up: closing with a command unread would make
// its kernel answer with a reset, not the end of the stream.
func TestDeflate206ThenClose(t *testing.T) {
	srv := startRawDeflate(t, func(w countingWriter, cmds *bufio.Reader) { cmds.ReadString('\n') })
	src, err := New(Config{Addr: srv.ln.Addr().String(), Timeout: 2 * time.Second, MaxConns: 1})
	require.NoError(t, err)
	defer src.Close()
	t.Logf("Check: %v", src.Check(context.Background()))
	_, err = src.Group(context.Background(), "alt.test")
	t.Logf("Group: %v; stats %+v", err, src.Stats())
	require.ErrorIs(t, err, io.ErrUnexpectedEOF, "the stream cut says so")
}

// TestDeflate206ThenPlain: a server that answers 206 and goes on plain
// fails the call with ErrProtocol, not a hang or a misread reply.
func TestDeflate206ThenPlain(t *testing.T) {
	srv := startRawDeflate(t, func(w countingWriter, cmds *bufio.Reader) {
		w.Write([]byte("211 10 1 10 alt.test\r\n"))
		time.Sleep(500 * time.Millisecond)
	})
	src, err := New(Config{Addr: srv.ln.Addr().String(), Timeout: 2 * time.Second, MaxConns: 1})
	require.NoError(t, err)
	defer src.Close()
	_, err = src.Group(context.Background(), "alt.test")
	t.Logf("Group: %v; stats %+v", err, src.Stats())
	require.ErrorIs(t, err, ErrProtocol, "plain text where deflate is due is a corrupt stream")
}
