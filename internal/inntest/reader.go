package inntest

import (
	"bufio"
	"fmt"
	"net"
	"net/textproto"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edgeindex/edgeindex/internal/syncbuf"
)

// Reader is INN's reader daemon, nnrpd, serving the instance's articles on
// a port of its own. Readers such as NZBGet connect to it directly: they
// do not send MODE READER, which innd needs to hand a connection from
// localhost (a peer) to nnrpd.
type Reader struct {
	addr    string
	out     *syncbuf.Buffer
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
}

// Addr is the host:port nnrpd listens on; a connection is greeted 200 and
// reads at once.
func (r *Reader) Addr() string { return r.addr }

// Port is the port nnrpd listens on.
func (r *Reader) Port() int {
	_, p, _ := net.SplitHostPort(r.addr)
	n, _ := strconv.Atoi(p)
	return n
}

// StartReader starts nnrpd as a standalone daemon in the foreground
// (nnrpd -D -f) on a free loopback port, with the instance's
// configuration, and stops it when the test ends. As root nnrpd drops to
// the news user itself.
func (s *Server) StartReader(tb testing.TB) *Reader {
	tb.Helper()
	var last error
	for range 5 { // the port is free when picked; another process may take it first
		r, err := s.startReader()
		if err == nil {
			tb.Cleanup(func() { r.stop(tb) })
			tb.Logf("inntest: nnrpd on %s", r.addr)
			return r
		}
		last = err
	}
	tb.Fatalf("inntest: nnrpd did not come up: %v", last)
	return nil
}

func (s *Server) startReader() (*Reader, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	r := &Reader{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), out: &syncbuf.Buffer{}, exited: make(chan struct{})}
	// -n: no reverse lookups of the client's address.
	r.cmd = exec.Command(filepath.Join(Bin, "nnrpd"), "-D", "-f", "-n", "-p", strconv.Itoa(port), "-b", "127.0.0.1")
	r.cmd.Dir = s.dir
	r.cmd.Env = s.env
	r.cmd.Stdout = r.out
	r.cmd.Stderr = r.out
	if err := r.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting nnrpd: %w", err)
	}
	go func() {
		r.waitErr = r.cmd.Wait()
		close(r.exited)
	}()
	if err := r.waitReady(); err != nil {
		r.kill()
		return nil, fmt.Errorf("%w: %s", err, strings.TrimSpace(r.out.String()))
	}
	return r, nil
}

// waitReady waits until nnrpd greets a connection with 200 or 201.
func (r *Reader) waitReady() error {
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-r.exited:
			return fmt.Errorf("nnrpd exited: %v", r.waitErr)
		default:
		}
		c, err := net.DialTimeout("tcp", r.addr, time.Second)
		if err == nil {
			c.SetDeadline(time.Now().Add(10 * time.Second))
			line, err := textproto.NewReader(bufio.NewReader(c)).ReadLine()
			c.Write([]byte("QUIT\r\n"))
			c.Close()
			if err == nil && (strings.HasPrefix(line, "200") || strings.HasPrefix(line, "201")) {
				return nil
			}
			if err == nil {
				return fmt.Errorf("nnrpd greeted %q", line)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no greeting on %s after %s", r.addr, startTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop ends nnrpd (SIGTERM, then SIGKILL) and logs its output if the test
// failed. Connections it forked end when their clients hang up.
func (r *Reader) stop(tb testing.TB) {
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(5 * time.Second):
		r.kill()
	}
	if tb.Failed() {
		tb.Logf("inntest: nnrpd on %s exited (%v): %s", r.addr, r.waitErr, r.out.String())
	}
}

func (r *Reader) kill() {
	r.cmd.Process.Kill()
	<-r.exited
}
