package nntp

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/edgeindex/edgeindex/internal/quickack"
)

// readBufSize is the size of a connection's read buffer: lines shorter than
// it are handed on straight from the buffer, with no copy.
const readBufSize = 64 << 10

// conn is one connection to the server, used by one goroutine at a time.
type conn struct {
	cfg       *Config
	tcp       net.Conn // the socket, closed to abort a call
	dc        *deadlineConn
	r         *bufio.Reader
	w         *bufio.Writer
	caps      Capabilities  // nil when CAPABILITIES was refused
	rw        io.ReadWriter // what r and w read and write: the socket, or TLS on it
	tls       bool          // the connection is encrypted
	compress  bool          // XFEATURE COMPRESS GZIP was accepted
	deflate   bool          // COMPRESS DEFLATE is on: r inflates, w deflates
	counted   bool          // the Source counted its compression
	group     string        // the group GROUP last selected
	high      int64         // its high watermark then
	broken    bool          // an I/O error, a timeout or a desync: never reuse
	used      bool          // it went back to the pool once
	authed    bool          // AUTHINFO succeeded
	capsStale bool          // AUTHINFO succeeded since caps was read
	replied   bool          // a status line was read since the pool handed it out

	zr   io.ReadCloser // the zlib reader, reset per compressed response
	gzr  *gzip.Reader  // the gzip reader, likewise
	zbuf *bufio.Reader // buffers the inflated stream
	long []byte        // a line longer than the read buffer
	read int64         // bytes of blocks read (inflated) since the pool handed it out
	lim  blockLimits   // the bounds of the next block; zero: overview's
}

// Bounds of a multi-line reply that is not overview data (CAPABILITIES):
// RFC 3977 lines of at most maxReplyLine bytes, and a list no real server
// comes near.
const (
	maxReplyLines = 1000
	maxReplyBytes = 256 << 10
)

// Bounds of the bytes read off the wire (after TLS, before inflating) by
// calls whose replies are status lines and lists. The text bounds
// (maxReplyLine, maxReplyBytes) do not bound the wire on a deflated
// connection: empty deflate blocks inflate to nothing, at line rate. Each
// leaves room for a read buffer or two past the text, which the buffer
// may read ahead.
const (
	// groupWireBytes bounds a GROUP call: its status lines (with a 480,
	// AUTHINFO's and the GROUP sent again).
	groupWireBytes = maxReplyLine + 2*readBufSize
	// handshakeWireBytes bounds a dial: the greeting, status lines, up to
	// four CAPABILITIES lists (first, after MODE READER, STARTTLS and
	// AUTHINFO) and a TLS handshake.
	handshakeWireBytes = 4*maxReplyBytes + 2*readBufSize
	// callWireBytes bounds a call that sets no bound of its own.
	callWireBytes = maxReplyBytes + 2*readBufSize
)

// dial connects, reads the greeting, and negotiates: CAPABILITIES, MODE
// READER when the server needs it, STARTTLS, AUTHINFO, then COMPRESS
// DEFLATE or XFEATURE COMPRESS GZIP (Config.Compress). ctx aborts it by
// closing the socket.
func dial(ctx context.Context, cfg *Config) (_ *conn, err error) {
	d := net.Dialer{Timeout: cfg.Timeout}
	tcp, err := d.DialContext(ctx, "tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("nntp: connect to %s: %w", cfg.Addr, err)
	}
	c := &conn{cfg: cfg, tcp: tcp}
	stop := context.AfterFunc(ctx, func() { tcp.Close() })
	defer func() {
		if !stop() && err == nil {
			err = ctx.Err()
		}
		if err != nil {
			tcp.Close()
			if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
				err = fmt.Errorf("nntp: connect to %s: %w (%w)", cfg.Addr, ctx.Err(), err)
			}
		}
	}()
	dc := &deadlineConn{Conn: quickack.Conn(tcp), timeout: cfg.Timeout}
	c.dc = dc
	// The whole handshake, not only each read, must end within Timeout,
	// and read a bounded number of bytes.
	dc.bound(cfg.Timeout, handshakeWireBytes)
	defer func() { err = dc.deadlineErr(err) }()
	var rw net.Conn = dc
	if cfg.TLS {
		tc := tls.Client(rw, cfg.TLSConfig)
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, fmt.Errorf("nntp: TLS with %s: %w", cfg.Addr, err)
		}
		rw, c.tls = tc, true
	}
	c.setRW(rw)
	if err := c.handshake(); err != nil {
		return nil, err
	}
	dc.unbound()
	return c, nil
}

func (c *conn) setRW(rw io.ReadWriter) {
	c.rw = rw
	c.r = bufio.NewReaderSize(rw, readBufSize)
	c.w = bufio.NewWriterSize(rw, 4096)
}

func (c *conn) Close() error { return c.tcp.Close() }

func (c *conn) handshake() error {
	line, err := c.readLine()
	if err != nil {
		return fmt.Errorf("nntp: greeting from %s: %w", c.cfg.Addr, err)
	}
	code, text, err := parseStatus(line)
	if err != nil {
		return fmt.Errorf("nntp: greeting from %s: %w", c.cfg.Addr, err)
	}
	switch code {
	case 200, 201:
	case 400, 502:
		return c.replyErr("connect", code, text, ErrRefused)
	default:
		return c.replyErr("connect", code, text, nil)
	}
	if err := c.capabilities(); err != nil {
		return err
	}
	if c.caps == nil || c.caps.Has("MODE-READER") || !c.caps.Has("READER") {
		if err := c.modeReader(); err != nil {
			return err
		}
	}
	if !c.tls && c.cfg.StartTLS != StartTLSOff {
		if err := c.startTLS(); err != nil {
			return err
		}
	}
	if c.cfg.User != "" && !c.authed {
		if err := c.auth(); err != nil {
			return err
		}
	}
	// RFC 4643: after AUTHINFO the client must discard the list it
	// read before, which may change (a provider may list COMPRESS only
	// now); read it again, here where the bytes are bounded, before
	// COMPRESS is decided on it.
	if c.capsStale {
		if err := c.capabilities(); err != nil {
			return err
		}
	}
	return c.negotiateCompression()
}

// capabilities reads the CAPABILITIES list into c.caps; a server that
// refuses it (500, 480, 502...) leaves c.caps nil.
func (c *conn) capabilities() error {
	code, _, err := c.send("CAPABILITIES", "CAPABILITIES")
	if err != nil {
		return err
	}
	c.capsStale = false
	if code != 101 {
		c.caps = nil
		return nil
	}
	var lines []string
	c.lim = blockLimits{line: maxReplyLine, total: maxReplyBytes, refuse: true}
	err = c.readPlain(func(l []byte) error {
		if len(lines) >= maxReplyLines {
			return fmt.Errorf("%w: more than %d capabilities", ErrTooLarge, maxReplyLines)
		}
		lines = append(lines, string(l))
		return nil
	})
	c.lim = blockLimits{}
	if err != nil {
		c.broken = true
		return fmt.Errorf("nntp: CAPABILITIES: %w", err)
	}
	caps, err := parseCapabilities(lines)
	if err != nil {
		return fmt.Errorf("nntp: CAPABILITIES: %w", err)
	}
	c.caps = caps
	return nil
}

func (c *conn) modeReader() error {
	code, text, err := c.cmd("MODE READER", "MODE READER")
	if err != nil {
		return err
	}
	switch code {
	case 200, 201:
		return c.capabilities()
	case 500, 501: // a server that is always a reader
		return nil
	case 502:
		return c.replyErr("MODE READER", code, text, ErrRefused)
	}
	return c.replyErr("MODE READER", code, text, nil)
}

func (c *conn) startTLS() error {
	if c.caps == nil || !c.caps.Has("STARTTLS") {
		if c.cfg.StartTLS == StartTLSRequire {
			return fmt.Errorf("nntp: %s: %w: the server does not offer it", c.cfg.Addr, ErrTLSUnavailable)
		}
		return nil
	}
	code, text, err := c.send("STARTTLS", "STARTTLS")
	if err != nil {
		return err
	}
	if code != 382 {
		if c.cfg.StartTLS == StartTLSRequire {
			return c.replyErr("STARTTLS", code, text, ErrTLSUnavailable)
		}
		return nil
	}
	if c.r.Buffered() > 0 {
		return fmt.Errorf("nntp: STARTTLS: %w: data before the TLS handshake", ErrProtocol)
	}
	tc := tls.Client(c.dc, c.cfg.TLSConfig)
	if err := tc.Handshake(); err != nil {
		return fmt.Errorf("nntp: STARTTLS with %s: %w", c.cfg.Addr, err)
	}
	c.setRW(tc)
	c.tls = true
	return c.capabilities() // RFC 4642: the list may change
}

// auth sends AUTHINFO USER and, on 381, AUTHINFO PASS.
func (c *conn) auth() error {
	code, text, err := c.send("AUTHINFO", "AUTHINFO USER "+c.cfg.User)
	if err != nil {
		return err
	}
	if code == 381 {
		code, text, err = c.send("AUTHINFO", "AUTHINFO PASS "+c.cfg.Pass)
		if err != nil {
			return err
		}
	}
	switch code {
	case 281:
		c.authed, c.capsStale = true, true
		return nil
	case 481, 482, 502:
		return c.replyErr("AUTHINFO", code, text, ErrAuthFailed)
	}
	return c.replyErr("AUTHINFO", code, text, nil)
}

// cmd sends line and reads the status, authenticating and sending it again
// once if the server answers 480 and credentials are configured. A 480
// without credentials, 483, and codes the caller does not expect are for
// the caller to turn into an error with replyErr.
func (c *conn) cmd(verb, line string) (int, string, error) {
	code, text, err := c.send(verb, line)
	if err == nil && code == 480 && c.cfg.User != "" {
		if err := c.auth(); err != nil {
			return 0, "", err
		}
		code, text, err = c.send(verb, line)
	}
	return code, text, err
}

// send writes one command line and reads the status line.
func (c *conn) send(verb, line string) (int, string, error) {
	c.w.WriteString(line)
	c.w.WriteString("\r\n")
	if err := c.w.Flush(); err != nil {
		c.broken = true
		return 0, "", fmt.Errorf("nntp: %s: %w", verb, err)
	}
	s, err := c.readLine()
	if err != nil {
		return 0, "", fmt.Errorf("nntp: %s: %w", verb, err)
	}
	c.replied = true
	code, text, err := parseStatus(s)
	if err != nil {
		c.broken = true
		return 0, "", fmt.Errorf("nntp: %s: %w", verb, err)
	}
	return code, text, nil
}

// readLine reads a status line, refusing one longer than maxReplyLine.
func (c *conn) readLine() (string, error) {
	var long []byte
	for {
		b, err := c.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) || (err == nil && long != nil) {
			long = append(long, b...)
			if len(long) > maxReplyLine {
				c.broken = true
				return "", fmt.Errorf("%w: status line longer than %d bytes", ErrProtocol, maxReplyLine)
			}
			if err != nil {
				continue
			}
			b = long
		}
		if err != nil {
			c.broken = true
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return "", err
		}
		if len(b) > maxReplyLine {
			c.broken = true
			return "", fmt.Errorf("%w: status line longer than %d bytes", ErrProtocol, maxReplyLine)
		}
		b = bytes.TrimSuffix(b[:len(b)-1], []byte{'\r'})
		return string(b), nil
	}
}

// replyErr is the error for an unexpected reply. A 480 or 483 maps to its
// sentinel whatever the command. Replies that leave the connection in a
// known state (no such group, no article) keep it; the rest drop it.
func (c *conn) replyErr(verb string, code int, text string, sentinel error) error {
	switch code {
	case 411:
		sentinel = ErrNoSuchGroup
	case 480:
		sentinel = ErrAuthRequired
	case 483:
		sentinel = ErrEncryptionRequired
	}
	switch code {
	case 411, 412, 420, 423, 430:
	default:
		c.broken = true
	}
	if p := c.cfg.Pass; p != "" {
		text = strings.ReplaceAll(text, p, "<redacted>")
	}
	return &ProtocolError{Cmd: verb, Code: code, Text: text, Err: sentinel}
}

// selectGroup sends GROUP unless name is already selected, or always when
// force is set, and returns the reply (zero when not sent).
func (c *conn) selectGroup(name string, force bool) (GroupInfo, error) {
	if !force && c.group == name {
		return GroupInfo{}, nil
	}
	if name == "" || strings.ContainsAny(name, " \t\r\n") {
		return GroupInfo{}, fmt.Errorf("%w: group %q: not a valid group name", ErrNoSuchGroup, name)
	}
	c.group = ""
	code, text, err := c.cmd("GROUP", "GROUP "+name)
	if err != nil {
		return GroupInfo{}, err
	}
	if code != 211 {
		return GroupInfo{}, c.replyErr("GROUP", code, text, nil)
	}
	g, err := parseGroup(text)
	if err != nil {
		c.broken = true
		return GroupInfo{}, fmt.Errorf("nntp: GROUP %s: %w", name, err)
	}
	c.group, c.high = name, g.High
	return g, nil
}

// over sends OVER (or XOVER when xover is set) for from-to in the selected
// group and calls fn with each line of the response, dot-unstuffed,
// without its line ending. fn's slice is only valid until it returns. An
// empty range (423, 420, or an empty block) calls fn never and returns nil.
// It returns errUnknownCommand when the server answers 500.
func (c *conn) over(xover bool, from, to int64, fn func([]byte) error) error {
	verb := "OVER"
	if xover {
		verb = "XOVER"
	}
	code, text, err := c.cmd(verb, fmt.Sprintf("%s %d-%d", verb, from, to))
	if err != nil {
		return err
	}
	switch code {
	case 224:
	case 423, 420:
		return nil
	case 500:
		if !xover {
			return errUnknownCommand
		}
		return c.replyErr(verb, code, text, nil)
	default:
		return c.replyErr(verb, code, text, nil)
	}
	if err := c.readBody(text, fn); err != nil {
		c.broken = true
		return fmt.Errorf("nntp: %s %d-%d: %w", verb, from, to, err)
	}
	return nil
}

var errUnknownCommand = errors.New("unknown command")

// quit says goodbye, best effort, and closes.
func (c *conn) quit() {
	if !c.broken {
		c.dc.bound(min(time.Second, c.cfg.Timeout), maxReplyLine)
		c.w.WriteString("QUIT\r\n")
		if c.w.Flush() == nil {
			c.readLine()
		}
	}
	c.tcp.Close()
}
