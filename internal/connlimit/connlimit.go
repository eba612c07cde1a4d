// Package connlimit bounds the connections a listener holds open: in
// all, and from one remote IP address. A server's header timeout bounds
// how long a slow client holds a connection; connlimit bounds how many
// it can hold, so a host that opens thousands of connections and sends
// nothing (slowloris) holds at most PerIP of them, and the process its
// file descriptors and memory.
//
// A connection over either bound is closed as soon as it is accepted,
// never queued: its client sees the connection end and may try again.
package connlimit

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
)

// Config bounds a listener's connections. Zero values mean the defaults.
type Config struct {
	// Max is the most connections open at once; DefaultMax when 0.
	Max int
	// PerIP is the most from one remote IP address; DefaultPerIP when 0,
	// at most Max.
	PerIP int
}

// The defaults of Config.
const (
	DefaultMax   = 1024
	DefaultPerIP = 64
)

// Listener is a net.Listener whose Accept returns only connections
// within its bounds.
type Listener struct {
	net.Listener
	max, perIP int

	mu   sync.Mutex
	open int
	byIP map[string]int
	shed atomic.Int64
}

// New wraps l with the bounds of cfg.
func New(l net.Listener, cfg Config) (*Listener, error) {
	if cfg.Max < 0 || cfg.PerIP < 0 {
		return nil, errors.New("connlimit: Max and PerIP must not be negative")
	}
	if cfg.Max == 0 {
		cfg.Max = DefaultMax
	}
	if cfg.PerIP == 0 {
		cfg.PerIP = DefaultPerIP
	}
	cfg.PerIP = min(cfg.PerIP, cfg.Max)
	return &Listener{Listener: l, max: cfg.Max, perIP: cfg.PerIP, byIP: make(map[string]int)}, nil
}

// Accept returns the next connection within the bounds, closing each one
// over them as it comes.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := remoteIP(c)
		l.mu.Lock()
		ok := l.open < l.max && l.byIP[ip] < l.perIP
		if ok {
			l.open++
			l.byIP[ip]++
		}
		l.mu.Unlock()
		if ok {
			return &conn{Conn: c, l: l, ip: ip}, nil
		}
		l.shed.Add(1)
		c.Close()
	}
}

// Open returns how many accepted connections are open.
func (l *Listener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// Shed returns how many connections were closed for being over a bound.
func (l *Listener) Shed() int64 { return l.shed.Load() }

func (l *Listener) release(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.byIP[ip]--; l.byIP[ip] <= 0 {
		delete(l.byIP, ip)
	}
}

// remoteIP is what the per-IP bound counts c's peer by: its IPv4
// address, or the /64 of its IPv6 address (one host is given a whole /64
// to pick from); its whole address when it is not an IP and port (a Unix
// socket's).
func remoteIP(c net.Conn) string {
	a := c.RemoteAddr().String()
	ap, err := netip.ParseAddrPort(a)
	if err != nil {
		return a
	}
	ip := ap.Addr().Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}

// conn gives its slot back once, on its first Close.
type conn struct {
	net.Conn
	l    *Listener
	ip   string
	once sync.Once
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.ip) })
	return err
}
