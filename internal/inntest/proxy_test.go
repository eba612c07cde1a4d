package inntest_test

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// proxy is a TCP proxy in front of a server that counts the bytes it
// carries each way and, when rate is set, carries at most rate bytes a
// second each way, shared by all its connections: a link of that speed.
type proxy struct {
	ln         net.Listener
	target     string
	up, down   atomic.Int64 // bytes client to server, server to client
	upB, downB *bucket      // nil: no limit
	wg         sync.WaitGroup

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

// startProxy starts a proxy to target on 127.0.0.1, closed when the test
// ends; rate is bytes a second each way, 0 for no limit.
func startProxy(tb testing.TB, target string, rate float64) *proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	if rate > 0 {
		p.upB, p.downB = &bucket{rate: rate}, &bucket{rate: rate}
	}
	p.wg.Add(1)
	go p.serve()
	tb.Cleanup(p.close)
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

// bytes is what the proxy carried both ways so far.
func (p *proxy) bytes() int64 { return p.up.Load() + p.down.Load() }

func (p *proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		if !p.track(c) || !p.track(s) {
			c.Close()
			s.Close()
			return
		}
		p.wg.Add(2)
		go p.pipe(s, c, &p.up, p.upB)
		go p.pipe(c, s, &p.down, p.downB)
	}
}

// pipe copies from src to dst, counting and pacing, and closes both when
// either side ends.
func (p *proxy) pipe(dst, src net.Conn, n *atomic.Int64, b *bucket) {
	defer p.wg.Done()
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 16<<10)
	for {
		k, err := src.Read(buf)
		if k > 0 {
			n.Add(int64(k))
			b.wait(k)
			if _, werr := dst.Write(buf[:k]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF, or either side closed
		}
	}
}

func (p *proxy) close() {
	p.mu.Lock()
	p.closed = true
	p.ln.Close()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// bucket paces a link of rate bytes a second: each write waits until the
// bytes before it would have left the link, less a millisecond of burst.
type bucket struct {
	rate float64

	mu   sync.Mutex
	free time.Time // when the link has sent all it was given
}

const burst = time.Millisecond

func (b *bucket) wait(n int) {
	if b == nil {
		return
	}
	b.mu.Lock()
	now := time.Now()
	if b.free.Before(now) {
		b.free = now
	}
	b.free = b.free.Add(time.Duration(float64(n) / b.rate * float64(time.Second)))
	d := b.free.Sub(now) - burst
	b.mu.Unlock()
	if d > 0 {
		time.Sleep(d)
	}
}
