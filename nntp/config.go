package nntp

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/edgeframe"
)

// Defaults for the zero values of Config.
const (
	DefaultPort           = "119"
	DefaultTLSPort        = "563"
	DefaultMaxConns       = 4
	DefaultTimeout        = 60 * time.Second
	DefaultDialBackoff    = 250 * time.Millisecond
	DefaultMaxDialBackoff = 30 * time.Second
	// DefaultIdleTimeout is how long a connection that holds a slot of a
	// Budget may stay idle before it is closed and its slot given back:
	// long enough to outlast the gaps between a prefetcher's passes (2s),
	// short enough that a coordinator with nothing to fetch leaves the
	// account's connections to the others soon.
	DefaultIdleTimeout = 10 * time.Second
	// DefaultMinRate is the slowest a fetch may read, in bytes a second,
	// for the overview it is allowed per article (deadlineArticleBytes):
	// a provider slower than this for a whole response is stuck, not slow.
	DefaultMinRate = 64 << 10
	// DefaultMaxFetchBytes bounds the bytes one fetch reads (inflated, line
	// endings and skipped lines included): 256 MiB, 250 times a chunk of
	// 1000 articles of a generous 1 KiB each.
	DefaultMaxFetchBytes = 256 << 20
	// DefaultMaxChunkBytes bounds a chunk, compressed: a quarter of
	// edgeframe.DefaultMaxFrame (16 MiB), so a chunk always fits the frame
	// a worker takes, with room to spare for the frame's header and for a
	// worker whose limit was set lower, and a refused chunk costs the
	// coordinator little memory. A real chunk of 1000 articles is about
	// 50 KiB; 16 MiB is some 300000 articles' overview.
	DefaultMaxChunkBytes = edgeframe.DefaultMaxFrame / 4
)

// maxFetchLimit is the most MaxFetchBytes may be (1 TiB): far past any
// real response, and far from an overflow when the read buffer is added.
const maxFetchLimit = 1 << 40

// maxChunkLimit is the most MaxChunkBytes may be: the frame limit less a
// margin for the frame's header.
const maxChunkLimit = edgeframe.DefaultMaxFrame - 64<<10

// deadlineArticleBytes is the overview text a fetch's deadline allows per
// article of its span: a fetch of n articles must end within Timeout +
// n*deadlineArticleBytes/MinRate. Real overview lines average 300-600
// bytes.
const deadlineArticleBytes = 1 << 10

// The environment variables ParseURL reads credentials from when the URL
// has none.
const (
	EnvUser = "EDGEINDEX_NNTP_USER"
	EnvPass = "EDGEINDEX_NNTP_PASS"
)

// StartTLSMode says what a plain connection does with STARTTLS.
type StartTLSMode int

const (
	// StartTLSAuto upgrades when CAPABILITIES lists STARTTLS. A failed
	// upgrade is an error, never a silent fall back to plain text.
	StartTLSAuto StartTLSMode = iota
	// StartTLSOff never sends STARTTLS.
	StartTLSOff
	// StartTLSRequire fails with ErrTLSUnavailable unless the connection
	// is upgraded.
	StartTLSRequire
)

func (m StartTLSMode) String() string {
	switch m {
	case StartTLSAuto:
		return "auto"
	case StartTLSOff:
		return "off"
	case StartTLSRequire:
		return "require"
	}
	return "StartTLSMode(" + strconv.Itoa(int(m)) + ")"
}

// CompressMode says which compression a connection asks for. Both kinds
// are bounded like plain text: Config.MaxFetchBytes counts inflated bytes.
type CompressMode int

const (
	// CompressAuto, the default, turns on COMPRESS DEFLATE (RFC 8054) when
	// CAPABILITIES lists it; otherwise XFEATURE COMPRESS GZIP when
	// CAPABILITIES lists XFEATURE-COMPRESS GZIP; otherwise nothing. It
	// sends only what the server says it has, so a server that offers
	// neither sees no command it does not know, and a refused COMPRESS
	// goes on uncompressed.
	CompressAuto CompressMode = iota
	// CompressDeflate requires COMPRESS DEFLATE: a server that does not
	// list it, or refuses it, fails the connection with an error wrapping
	// ErrCompressUnavailable.
	CompressDeflate
	// CompressGzip sends XFEATURE COMPRESS GZIP whether or not the server
	// lists it (many that accept it do not), as compress=1 always did:
	// responses are inflated when the server accepts (290), read plain
	// otherwise. COMPRESS DEFLATE is not asked for.
	CompressGzip
	// CompressNone asks for no compression.
	CompressNone
)

func (m CompressMode) String() string {
	switch m {
	case CompressAuto:
		return "auto"
	case CompressDeflate:
		return "deflate"
	case CompressGzip:
		return "gzip"
	case CompressNone:
		return "none"
	}
	return "CompressMode(" + strconv.Itoa(int(m)) + ")"
}

// parseCompressMode parses the compress parameter of a source URL; the
// booleans (1, 0, true...) are the old forms: on meant gzip.
func parseCompressMode(v string) (CompressMode, error) {
	for m := CompressAuto; m <= CompressNone; m++ {
		if strings.EqualFold(v, m.String()) {
			return m, nil
		}
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return 0, fmt.Errorf("%w: compress=%q: want auto, deflate, gzip or none", ErrBadURL, v)
	}
	if b {
		return CompressGzip, nil
	}
	return CompressNone, nil
}

// Config configures a Source. The zero value of every field but Addr means
// its default. Its String never shows the password.
type Config struct {
	// Addr is the server's host:port.
	Addr string
	// TLS dials with TLS from the start (nntps).
	TLS bool
	// StartTLS is what a plain connection does with STARTTLS; see
	// StartTLSMode. Ignored when TLS is set.
	StartTLS StartTLSMode
	// TLSConfig is used for TLS and STARTTLS; nil means a default one whose
	// ServerName is Addr's host.
	TLSConfig *tls.Config
	// User and Pass, when User is set, are sent with AUTHINFO USER/PASS
	// right after connecting (and again if the server answers 480).
	User, Pass string
	// Compress is the compression a connection asks for after it has
	// logged in; see CompressMode. The default, CompressAuto, deflates the
	// whole connection when the server lists COMPRESS DEFLATE, uses
	// XFEATURE COMPRESS GZIP when it lists that instead, and reads plain
	// text otherwise.
	Compress CompressMode
	// MaxConns is the most connections open at once. Default 4. When it is
	// 2 or more, fetches hold at most MaxConns-1 of them, so GROUP (the
	// planner's watermarks) always finds a connection within the budget,
	// however long the fetches take.
	MaxConns int
	// Budget, when set, is the provider's connection budget, which
	// Sources of other coordinators sharing the account share: every
	// connection takes a Slot of it before it dials and holds it while it
	// is open, idle included; a lost slot closes its connection at once.
	// MaxConns still bounds this Source's own connections. Nil: only
	// MaxConns bounds them.
	Budget Budget
	// IdleTimeout, with a Budget, closes a connection idle that long,
	// giving its slot back. Default DefaultIdleTimeout (10s). Without a
	// Budget idle connections are kept.
	IdleTimeout time.Duration
	// Timeout bounds every read and write on a connection, and dialling
	// with the handshake. Default 60s.
	Timeout time.Duration
	// DialBackoff is the wait before dialling again after one failed dial;
	// it doubles, with jitter, with each consecutive failure up to
	// MaxDialBackoff. Defaults 250ms and 30s.
	DialBackoff, MaxDialBackoff time.Duration
	// MinRate is the floor rate of a fetch, in bytes a second: a fetch of
	// a span of n articles is cut, with ErrDeadline, when its whole
	// response has not arrived within Timeout + n KiB / MinRate, however
	// steadily the server trickles bytes. Default DefaultMinRate (64 KiB/s).
	MinRate int64
	// MaxFetchBytes bounds the bytes one fetch reads, inflated, skipped
	// lines included; past it the fetch is cut with ErrTooLarge. Default
	// DefaultMaxFetchBytes (256 MiB).
	MaxFetchBytes int64
	// MaxChunkBytes bounds a chunk, compressed; a span whose chunk would be
	// bigger is refused with ErrTooLarge, which wraps overview.ErrBadChunk,
	// so the range counts a corrupt attempt. Default DefaultMaxChunkBytes
	// (16 MiB); at most edgeframe.DefaultMaxFrame less 64 KiB.
	MaxChunkBytes int64
	// BodyConns bounds the article bodies Body reads at once (each on
	// one of the connections a fetch may hold), so post-processing never
	// takes more of the provider than that from the header fetches.
	// Default 1; at most MaxConns.
	BodyConns int
	// MaxBodyBytes bounds one article body Body reads, line ends
	// included. Default DefaultMaxBodyBytes (4 MiB).
	MaxBodyBytes int64
	// Clock tells FindDate the time: an article dated more than
	// DateTolerance after its Now counts as undated. Nil means clock.Real.
	Clock clock.Clock
}

// String shows the configuration with the password replaced.
func (c Config) String() string {
	pass := ""
	if c.Pass != "" {
		pass = "<redacted>"
	}
	return fmt.Sprintf("nntp.Config{Addr:%q TLS:%t StartTLS:%s User:%q Pass:%q Compress:%s MaxConns:%d Budget:%t IdleTimeout:%s Timeout:%s DialBackoff:%s MaxDialBackoff:%s MinRate:%d MaxFetchBytes:%d MaxChunkBytes:%d BodyConns:%d MaxBodyBytes:%d}",
		c.Addr, c.TLS, c.StartTLS, c.User, pass, c.Compress, c.MaxConns, c.Budget != nil, c.IdleTimeout, c.Timeout, c.DialBackoff,
		c.MaxDialBackoff, c.MinRate, c.MaxFetchBytes, c.MaxChunkBytes, c.BodyConns, c.MaxBodyBytes)
}

// GoString is String, so %#v does not show the password either.
func (c Config) GoString() string { return c.String() }

// Validate reports whether c can be used, with its defaults filled in. It
// does not change c.
func (c Config) Validate() error {
	return c.withDefaults().validate()
}

// withDefaults returns a copy of c with every zero field that has a default
// set to it, and a TLSConfig (a clone) whose ServerName is Addr's host.
func (c Config) withDefaults() Config {
	if c.MaxConns == 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.DialBackoff == 0 {
		c.DialBackoff = DefaultDialBackoff
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.Clock == nil {
		c.Clock = clock.Real
	}
	if c.MaxDialBackoff == 0 {
		c.MaxDialBackoff = DefaultMaxDialBackoff
	}
	if c.MinRate == 0 {
		c.MinRate = DefaultMinRate
	}
	if c.MaxFetchBytes == 0 {
		c.MaxFetchBytes = DefaultMaxFetchBytes
	}
	if c.MaxChunkBytes == 0 {
		c.MaxChunkBytes = DefaultMaxChunkBytes
	}
	if c.BodyConns == 0 {
		c.BodyConns = 1
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	tc := c.TLSConfig
	if tc == nil {
		tc = &tls.Config{}
	}
	tc = tc.Clone()
	if host, _, err := net.SplitHostPort(c.Addr); err == nil && tc.ServerName == "" {
		tc.ServerName = host
	}
	c.TLSConfig = tc
	return c
}

// validate checks a Config that has its defaults, saying what is wrong.
func (c Config) validate() error {
	host, port, err := net.SplitHostPort(c.Addr)
	switch {
	case err != nil || host == "" || port == "":
		return fmt.Errorf("%w: address %q: want host:port", ErrBadURL, c.Addr)
	case c.MaxConns < 0:
		return fmt.Errorf("%w: MaxConns %d is negative", ErrBadURL, c.MaxConns)
	case c.Timeout < 0 || c.DialBackoff < 0 || c.MaxDialBackoff < 0 || c.IdleTimeout < 0:
		return fmt.Errorf("%w: a negative duration", ErrBadURL)
	case c.BodyConns < 0 || c.BodyConns > max(c.MaxConns, 1) || c.MaxBodyBytes < 0 || c.MaxBodyBytes > maxFetchLimit:
		return fmt.Errorf("%w: BodyConns %d must be 0 to MaxConns, MaxBodyBytes %d 0 to %d", ErrBadURL, c.BodyConns, c.MaxBodyBytes, int64(maxFetchLimit))
	case c.MinRate < 0 || c.MaxFetchBytes < 0 || c.MaxChunkBytes < 0:
		return fmt.Errorf("%w: MinRate, MaxFetchBytes and MaxChunkBytes must not be negative", ErrBadURL)
	case c.MaxFetchBytes > maxFetchLimit:
		return fmt.Errorf("%w: MaxFetchBytes %d: want at most %d", ErrBadURL, c.MaxFetchBytes, int64(maxFetchLimit))
	case c.MaxChunkBytes > maxChunkLimit:
		return fmt.Errorf("%w: MaxChunkBytes %d is past the frame limit: want at most %d", ErrBadURL, c.MaxChunkBytes, maxChunkLimit)
	case c.StartTLS < StartTLSAuto || c.StartTLS > StartTLSRequire:
		return fmt.Errorf("%w: StartTLS mode %d", ErrBadURL, int(c.StartTLS))
	case c.Compress < CompressAuto || c.Compress > CompressNone:
		return fmt.Errorf("%w: compress mode %d", ErrBadURL, int(c.Compress))
	case c.Pass != "" && c.User == "":
		return fmt.Errorf("%w: a password without a user", ErrBadURL)
	case strings.ContainsAny(c.User+c.Pass, "\r\n"):
		return fmt.Errorf("%w: the user or password holds a line break", ErrBadURL)
	}
	return nil
}

// ParseURL parses nntp://[user:pass@]host[:port] (port 119 by default) or
// nntps://... (TLS from the start, port 563). When the URL has no user, or
// no password, they come from EDGEINDEX_NNTP_USER and EDGEINDEX_NNTP_PASS.
// Query parameters:
//
//	starttls=1|0     require STARTTLS, or never send it (default: use it when offered)
//	compress=auto    COMPRESS DEFLATE when listed, else XFEATURE COMPRESS GZIP when listed (the default)
//	compress=deflate require COMPRESS DEFLATE
//	compress=gzip    always ask for XFEATURE COMPRESS GZIP (compress=1 is the old form)
//	compress=none    no compression (compress=0 is the old form)
//	conns=N          MaxConns
//	timeout=30s      Timeout
//	minrate=65536    MinRate, bytes a second
//	maxbytes=N       MaxFetchBytes
//	maxchunk=N       MaxChunkBytes
//
// An error wraps ErrBadURL and says in one sentence what is wrong; it never
// holds the password.
func ParseURL(raw string) (Config, error) {
	var c Config
	u, err := parseSourceURL(raw)
	if err != nil {
		return c, err
	}
	c.Addr, c.TLS, err = sourceAddr(u)
	if err != nil {
		return c, err
	}
	if u.User != nil {
		c.User = u.User.Username()
		c.Pass, _ = u.User.Password()
	}
	if c.User == "" {
		c.User = os.Getenv(EnvUser)
	}
	if c.Pass == "" && c.User != "" {
		c.Pass = os.Getenv(EnvPass)
	}
	for k, vs := range u.Query() {
		if err := c.setParam(k, vs[len(vs)-1]); err != nil {
			return c, err
		}
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// parseSourceURL parses a source URL, refusing one whose password ended
// its authority early. Its errors show nothing of the URL, as it holds
// the password.
func parseSourceURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url's error quotes the whole URL, password included.
		return nil, fmt.Errorf("%w: the source URL does not parse; want nntp://[user:pass@]host[:port] or nntps://[user:pass@]host[:port]", ErrBadURL)
	}
	// A password holding "/", "?" or "#" unescaped ends the authority
	// early: url.Parse then reads no user info, and the password's rest,
	// up to the "@", as path, query or fragment.
	if strings.Contains(u.Path, "@") || strings.Contains(u.RawQuery, "@") || strings.Contains(u.Fragment, "@") {
		return nil, fmt.Errorf(`%w: an "@" after the host: a password holding "/", "?" or "#" must be percent-encoded (%%2F, %%3F, %%23)`, ErrBadURL)
	}
	return u, nil
}

// sourceAddr reads the server's host:port out of a source URL, and
// whether its scheme is nntps (TLS, and the default port 563).
func sourceAddr(u *url.URL) (addr string, tls bool, err error) {
	port := DefaultPort
	switch strings.ToLower(u.Scheme) {
	case "nntp":
	case "nntps":
		tls, port = true, DefaultTLSPort
	default:
		return "", false, fmt.Errorf("%w: scheme %q: want nntp:// or nntps://", ErrBadURL, u.Scheme)
	}
	if u.Opaque != "" || u.Host == "" {
		return "", tls, fmt.Errorf("%w: no host: want %s://[user:pass@]host[:port]", ErrBadURL, u.Scheme)
	}
	if u.Path != "" && u.Path != "/" {
		// The path is not shown: it may be the rest of a password.
		return "", tls, fmt.Errorf("%w: unexpected path: want %s://[user:pass@]host[:port]", ErrBadURL, u.Scheme)
	}
	if u.Fragment != "" {
		return "", tls, fmt.Errorf("%w: unexpected fragment", ErrBadURL)
	}
	host := u.Hostname()
	if host == "" {
		return "", tls, fmt.Errorf("%w: no host: want %s://[user:pass@]host[:port]", ErrBadURL, u.Scheme)
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return "", tls, fmt.Errorf("%w: port %q: want 1..65535", ErrBadURL, p)
		}
		port = p
	}
	return net.JoinHostPort(host, port), tls, nil
}

// setParam sets what the query parameter k=v of a source URL says.
func (c *Config) setParam(k, v string) error {
	switch k {
	case "starttls":
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%w: starttls=%q: want 1 or 0", ErrBadURL, v)
		}
		c.StartTLS = StartTLSOff
		if b {
			c.StartTLS = StartTLSRequire
		}
	case "compress":
		m, err := parseCompressMode(v)
		if err != nil {
			return err
		}
		c.Compress = m
	case "conns":
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("%w: conns=%q: want a whole number of at least 1", ErrBadURL, v)
		}
		c.MaxConns = n
	case "timeout":
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("%w: timeout=%q: want a positive duration such as 30s", ErrBadURL, v)
		}
		c.Timeout = d
	case "minrate", "maxbytes", "maxchunk":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return fmt.Errorf("%w: %s=%q: want a whole number of bytes of at least 1", ErrBadURL, k, v)
		}
		switch k {
		case "minrate":
			c.MinRate = n
		case "maxbytes":
			c.MaxFetchBytes = n
		default:
			c.MaxChunkBytes = n
		}
	default:
		return fmt.Errorf("%w: unknown parameter %q: want starttls, compress, conns, timeout, minrate, maxbytes or maxchunk", ErrBadURL, k)
	}
	return nil
}
