package nntptest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Group is a newsgroup the server carries.
type Group struct {
	Name string
	// Lines are its overview lines, without line endings, each starting
	// with its decimal article number and a tab. They may hold any bytes
	// but "\r" and "\n": invalid UTF-8, a leading ".", anything. The server
	// sorts them by number.
	Lines [][]byte
	// Reply, when set, is sent as the GROUP reply after "211 ", as is (an
	// empty group's forms, garbage numbers). Otherwise the reply is "count
	// low high name" from Lines, and "0 0 0 name" when there are none.
	Reply string
	// ReplyOnce sends Reply to one GROUP command only, the first after the
	// configuration was set; later ones are answered from Lines. A test
	// of one odd reply then does not race the poller for when to take it
	// back.
	ReplyOnce bool
	// Gen, when set, makes the group's articles as they are asked for
	// (see Gen); Lines is then ignored.
	Gen *Gen
}

// Config is what the server carries and how it misbehaves. The zero value
// is a well-behaved reader server with no groups.
type Config struct {
	Groups []Group

	// Greeting is the greeting's code: 200 unless set (201, 400, 502...).
	Greeting int
	// MaxConns, when set, is the most connections served at once; more
	// get a MaxConnsReply greeting (400 unless set) and are closed.
	MaxConns      int
	MaxConnsReply int

	// NoCapabilities answers CAPABILITIES with 500; CapabilitiesReply, when
	// set, answers it with that code instead (480, 502...).
	NoCapabilities    bool
	CapabilitiesReply int
	// ModeReader makes a mode-switching server: CAPABILITIES lists
	// MODE-READER, and GROUP, OVER and XOVER get 502 until MODE READER.
	ModeReader bool

	// User and Pass, when User is set, are the credentials AUTHINFO
	// accepts (281); others get 481. AuthReply, when set, is the answer
	// to AUTHINFO PASS whatever is sent (481, 482, 502).
	User, Pass string
	AuthReply  int
	// AuthFirst answers 480 to every command but CAPABILITIES, MODE
	// READER, STARTTLS, AUTHINFO and QUIT until authenticated.
	AuthFirst bool

	// TLS serves TLS from the first byte (nntps). StartTLS offers
	// STARTTLS. RequireTLS answers 483 to AUTHINFO, GROUP, OVER and XOVER
	// on a plain connection. The certificate is self-signed; ClientTLS
	// trusts it.
	TLS, StartTLS, RequireTLS bool

	// NoOver answers OVER with 500, so a client must use XOVER.
	NoOver bool
	// EmptyReply is the answer to OVER or XOVER on a range with no
	// article: 423 unless set, or 420, or 224 for an empty block.
	EmptyReply int

	// Compress accepts XFEATURE COMPRESS GZIP (290) and then compresses
	// OVER and XOVER blocks with zlib, or with gzip when Gzip is set, the
	// terminating ".\r\n" inside the compressed data, or after it when
	// TerminatorOutside is set. The 224 line says [COMPRESS=GZIP] unless
	// NoMark is set.
	Compress, Gzip, TerminatorOutside, NoMark bool
	// Deflate lists COMPRESS DEFLATE (RFC 8054) in CAPABILITIES and
	// accepts it (206): from then on the session reads commands through an
	// inflater (Stats.Deflated counts them) and deflates everything it
	// sends, with a sync flush after each reply. DeflateReply, when set,
	// answers COMPRESS with that code instead (403, 502...), the capability
	// still listed.
	// DeflateAfterAuth, with Deflate and User, lists COMPRESS DEFLATE only
	// once the session has authenticated, as a provider may (RFC 4643 lets
	// the list change then).
	Deflate          bool
	DeflateReply     int
	DeflateAfterAuth bool
	// DeflateBreak, on a deflated session, cuts the stream after that many
	// lines of an OVER or XOVER block: it sends the first half of the
	// compressed bytes not yet sent, so the stream stops inside a block,
	// and closes the connection. With DeflateCorrupt it sends them whole
	// and then the header of a block of the reserved type, which no
	// inflater takes, before it closes.
	DeflateBreak   int
	DeflateCorrupt bool
	// DeflateBomb, on a deflated session, answers OVER and XOVER with 224
	// and then DeflateBomb bytes of "x", with no line end, made of a piece
	// of about 1 KiB of compressed data that inflates to 1 MiB, sent again
	// and again (never held whole), and closes the connection.
	DeflateBomb int64

	// LineDelay is slept before each line of an OVER or XOVER block.
	LineDelay time.Duration
	// CloseAfter, when set, closes the connection after that many lines
	// of an OVER or XOVER block.
	CloseAfter int
	// IgnoreRange answers OVER and XOVER with every line of the group,
	// whatever range was asked, as a broken server might.
	IgnoreRange bool
	// Endless follows an OVER block's lines with lines numbered past the
	// range, forever: the block never ends.
	Endless bool

	// Trickle, when set, sends an OVER or XOVER block (compressed or not)
	// one byte at a time, with Trickle between bytes and a flush after
	// each: a server that is never silent long enough for a read timeout,
	// yet never ends its response.
	Trickle time.Duration
	// TrickleGreeting sends the greeting (some 430 bytes) a byte at a time
	// too, with Trickle between bytes.
	TrickleGreeting bool
	// EndlessLong follows an OVER block's lines with lines of EndlessLong
	// bytes each, forever, generated as they are sent (never held): with
	// more than overview.MaxLineBytes a stream of lines too long to keep,
	// with less one of lines numbered past the range.
	EndlessLong int
	// HugeLines pads every overview line an OVER block sends to about
	// HugeLines bytes with a ninth field of pseudo-random letters, which
	// gzip cannot shrink much: in-span lines each under the line limit
	// that make a chunk too big.
	HugeLines int
	// CapLines and CapLineBytes add CapLines lines of CapLineBytes bytes
	// each to the CAPABILITIES list, generated as they are sent.
	CapLines, CapLineBytes int
	// TrailingZeros, with Compress, writes that many zero bytes into the
	// compressed stream after the terminator, generated as they are sent
	// (never held): data after the end of the response.
	TrailingZeros int64

	// Bodies answers BODY: the body of each message-id, its lines ended
	// by "\n", sent dot-stuffed with "\r\n"; any other message-id is
	// 430. EndlessBody answers BODY of a known message-id with 222 and
	// lines of "x", forever (generated as they are sent).
	// BodyOtherID answers BODY naming another message-id than the one
	// asked, as a server out of step would.
	Bodies      map[string]string
	EndlessBody bool
	BodyOtherID bool

	// StallQuit answers QUIT with nothing, and keeps the connection open
	// until the client closes it or the server closes.
	StallQuit bool

	// Only, when set, limits the misbehaviours of OVER and XOVER
	// (LineDelay, CloseAfter, IgnoreRange, Endless, Trickle, EndlessLong,
	// HugeLines, TrailingZeros) to the groups named; others are answered
	// well.
	Only []string
}

// calm returns cfg without the OVER misbehaviours.
func (cfg Config) calm() Config {
	cfg.LineDelay, cfg.CloseAfter, cfg.IgnoreRange, cfg.Endless = 0, 0, false, false
	cfg.Trickle, cfg.EndlessLong, cfg.HugeLines, cfg.TrailingZeros = 0, 0, 0, 0
	return cfg
}

// Stats counts what the server saw.
type Stats struct {
	Accepted int            // connections accepted, refused ones included
	Refused  int            // connections refused for MaxConns
	Open     int            // connections being served now
	MaxOpen  int            // the most served at once
	Commands map[string]int // commands received, by upper-case verb ("MODE READER" for MODE)
	Log      []string       // the command lines received, in order
	Deflated int            // commands read through the inflater, after COMPRESS DEFLATE
}

// Server is an NNTP server on 127.0.0.1 for tests. Every goroutine it
// starts ends when Close returns.
type Server struct {
	ln   net.Listener
	tls  *tls.Config
	pool *x509.CertPool
	done chan struct{}
	wg   sync.WaitGroup

	mu     sync.Mutex
	cfg    Config
	groups map[string]*group
	conns  map[net.Conn]struct{}
	stats  Stats
	closed bool
}

type group struct {
	name  string
	nums  []int64
	lines [][]byte
	reply string
	once  bool        // reply is for one GROUP only
	used  atomic.Bool // the one GROUP has had it
	gen   *Gen        // set: the articles are made, lines unused
}

// New starts a server on 127.0.0.1:0.
func New(cfg Config) (*Server, error) {
	tc, pool, err := selfSigned()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{
		ln: ln, tls: tc, pool: pool, done: make(chan struct{}),
		conns: map[net.Conn]struct{}{},
		stats: Stats{Commands: map[string]int{}},
	}
	s.setConfig(cfg)
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL is nntp://[user:pass@]addr, or nntps:// when Config.TLS is set.
func (s *Server) URL() string {
	cfg := s.config()
	u := url.URL{Scheme: "nntp", Host: s.Addr()}
	if cfg.TLS {
		u.Scheme = "nntps"
	}
	if cfg.User != "" {
		u.User = url.UserPassword(cfg.User, cfg.Pass)
	}
	return u.String()
}

// ClientTLS returns a client TLS configuration that trusts the server's
// certificate.
func (s *Server) ClientTLS() *tls.Config {
	return &tls.Config{RootCAs: s.pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
}

// Update changes the configuration; connections see the change at their
// next command, but a group's articles as of their last GROUP, as INN's
// nnrpd does.
func (s *Server) Update(fn func(*Config)) {
	s.mu.Lock()
	cfg := s.cfg
	s.mu.Unlock()
	fn(&cfg)
	s.setConfig(cfg)
}

func (s *Server) setConfig(cfg Config) {
	groups := make(map[string]*group, len(cfg.Groups))
	for _, g := range cfg.Groups {
		gr := &group{name: g.Name, reply: g.Reply, once: g.ReplyOnce, gen: g.Gen}
		lines := slices.Clone(g.Lines)
		nums := make([]int64, len(lines))
		for i, l := range lines {
			nums[i] = lineNumber(l)
		}
		idx := make([]int, len(lines))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return nums[idx[a]] < nums[idx[b]] })
		for _, i := range idx {
			gr.nums = append(gr.nums, nums[i])
			gr.lines = append(gr.lines, lines[i])
		}
		groups[g.Name] = gr
	}
	s.mu.Lock()
	s.cfg, s.groups = cfg, groups
	s.mu.Unlock()
}

func (s *Server) config() Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg
}

func (s *Server) group(name string) *group {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.groups[name]
}

// Stats returns the counts so far.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Commands = make(map[string]int, len(s.stats.Commands))
	for k, v := range s.stats.Commands {
		st.Commands[k] = v
	}
	st.Log = append([]string(nil), s.stats.Log...)
	return st
}

// DropConns closes every connection being served, as a network failure or
// a server's idle timeout would.
func (s *Server) DropConns() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.Close()
	}
}

// Close stops the server, closes its connections and waits for its
// goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	err := s.ln.Close()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

func (s *Server) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.stats.Accepted++
		refuse := s.cfg.MaxConns > 0 && s.stats.Open >= s.cfg.MaxConns
		if refuse {
			s.stats.Refused++
		} else {
			s.stats.Open++
			s.stats.MaxOpen = max(s.stats.MaxOpen, s.stats.Open)
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() {
				c.Close()
				s.mu.Lock()
				delete(s.conns, c)
				if !refuse {
					s.stats.Open--
				}
				s.mu.Unlock()
			}()
			if refuse {
				code := s.config().MaxConnsReply
				if code == 0 {
					code = 400
				}
				fmt.Fprintf(c, "%d too many connections\r\n", code)
				return
			}
			s.session(c)
		}()
	}
}

// session is one connection's state.
type session struct {
	s        *Server
	raw      net.Conn
	r        *bufio.Reader
	w        *bufio.Writer
	tls      bool
	reader   bool // MODE READER was sent
	authed   bool
	user     string // from AUTHINFO USER
	compress bool
	z        *deflater // COMPRESS DEFLATE is on
	group    *group
}

func (s *Server) session(c net.Conn) {
	cfg := s.config()
	ss := &session{s: s, raw: c}
	var rw io.ReadWriter = c
	if cfg.TLS {
		tc := tls.Server(c, s.tls)
		if tc.Handshake() != nil {
			return
		}
		rw, ss.tls = tc, true
	}
	ss.r, ss.w = bufio.NewReader(rw), bufio.NewWriterSize(rw, 64<<10)
	code := cfg.Greeting
	if code == 0 {
		code = 200
	}
	if cfg.TrickleGreeting && cfg.Trickle > 0 {
		greeting := fmt.Sprintf("%d edgeindex nntptest ready%s\r\n", code, strings.Repeat(" ", 400))
		for i := range len(greeting) {
			ss.w.WriteByte(greeting[i])
			if ss.w.Flush() != nil {
				return
			}
			t := time.NewTimer(cfg.Trickle)
			select {
			case <-t.C:
			case <-s.done:
				t.Stop()
				return
			}
		}
	} else {
		ss.reply(code, "edgeindex nntptest ready")
	}
	if ss.w.Flush() != nil || code >= 400 {
		return
	}
	for {
		line, err := readCommand(ss.r)
		if err != nil {
			return
		}
		if !ss.command(line) {
			ss.w.Flush()
			return
		}
		if ss.w.Flush() != nil {
			return
		}
	}
}

func readCommand(r *bufio.Reader) (string, error) {
	b, err := r.ReadSlice('\n')
	if err != nil {
		return "", err // a command longer than the buffer is a client bug
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

func (ss *session) reply(code int, text string) {
	fmt.Fprintf(ss.w, "%d %s\r\n", code, text)
}

// command answers one command; false ends the session.
func (ss *session) command(line string) bool {
	f := strings.Fields(line)
	if len(f) == 0 {
		ss.reply(500, "empty command")
		return true
	}
	verb := strings.ToUpper(f[0])
	if verb == "MODE" && len(f) > 1 {
		verb += " " + strings.ToUpper(f[1])
	}
	s := ss.s
	s.mu.Lock()
	s.stats.Commands[verb]++
	s.stats.Log = append(s.stats.Log, line)
	if ss.z != nil {
		s.stats.Deflated++
	}
	cfg := s.cfg
	s.mu.Unlock()

	if verb == "QUIT" {
		if cfg.StallQuit {
			ss.w.Flush()
			io.Copy(io.Discard, ss.r) // until the client closes
			return false
		}
		ss.reply(205, "bye")
		return false
	}
	if ss.refused(cfg, verb) {
		return true
	}
	switch verb {
	case "CAPABILITIES":
		ss.capabilities(cfg)
	case "MODE READER":
		ss.reader = true
		ss.reply(201, "reading allowed, posting prohibited")
	case "STARTTLS":
		return ss.startTLS(cfg)
	case "AUTHINFO":
		ss.authinfo(cfg, f)
	case "XFEATURE":
		if cfg.Compress && len(f) >= 3 && strings.EqualFold(f[1], "COMPRESS") && strings.EqualFold(f[2], "GZIP") {
			ss.compress = true
			ss.reply(290, "feature enabled")
		} else {
			ss.reply(500, "unknown feature")
		}
	case "COMPRESS":
		return ss.compressDeflate(cfg, f)
	case "GROUP":
		ss.selectGroup(f)
	case "BODY":
		return ss.body(cfg, f)
	case "OVER", "XOVER":
		if verb == "OVER" && cfg.NoOver {
			ss.reply(500, "unknown command")
			return true
		}
		return ss.over(cfg, f)
	default:
		ss.reply(500, "unknown command")
	}
	return true
}

// refused answers a command the session may not give yet: before
// authentication (AuthFirst), without TLS (RequireTLS), or before MODE
// READER (ModeReader). It reports whether it answered.
func (ss *session) refused(cfg Config, verb string) bool {
	switch {
	case cfg.AuthFirst && !ss.authed && !slices.Contains([]string{"CAPABILITIES", "MODE READER", "STARTTLS", "AUTHINFO"}, verb):
		ss.reply(480, "authentication required")
	case cfg.RequireTLS && !ss.tls && slices.Contains([]string{"AUTHINFO", "GROUP", "OVER", "XOVER"}, verb):
		ss.reply(483, "encryption required")
	case cfg.ModeReader && !ss.reader && slices.Contains([]string{"GROUP", "OVER", "XOVER"}, verb):
		ss.reply(502, "transit service only; use MODE READER")
	default:
		return false
	}
	return true
}

// startTLS answers STARTTLS and makes the session's connection TLS; false
// ends the session.
func (ss *session) startTLS(cfg Config) bool {
	if !cfg.StartTLS || ss.tls {
		ss.reply(502, "STARTTLS not available")
		return true
	}
	ss.reply(382, "continue with TLS negotiation")
	if ss.w.Flush() != nil {
		return false
	}
	tc := tls.Server(ss.raw, ss.s.tls)
	if tc.Handshake() != nil {
		return false
	}
	ss.tls = true
	ss.r, ss.w = bufio.NewReader(tc), bufio.NewWriterSize(tc, 64<<10)
	ss.authed, ss.group = false, nil
	return true
}

// selectGroup answers GROUP.
func (ss *session) selectGroup(f []string) {
	if len(f) != 2 {
		ss.reply(501, "GROUP name")
		return
	}
	g := ss.s.group(f[1])
	if g == nil {
		ss.reply(411, "no such newsgroup")
		return
	}
	ss.group = g
	if g.reply != "" && (!g.once || !g.used.Swap(true)) {
		ss.reply(211, g.reply)
	} else if g.gen != nil {
		ss.reply(211, g.gen.groupReply(g.name))
	} else if k := sort.Search(len(g.nums), func(i int) bool { return g.nums[i] >= 0 }); k == len(g.nums) {
		ss.reply(211, "0 0 0 "+g.name)
	} else {
		ss.reply(211, fmt.Sprintf("%d %d %d %s", len(g.nums)-k, g.nums[k], g.nums[len(g.nums)-1], g.name))
	}
}

func (ss *session) capabilities(cfg Config) {
	if cfg.NoCapabilities || cfg.CapabilitiesReply != 0 {
		code := cfg.CapabilitiesReply
		if code == 0 {
			code = 500
		}
		ss.reply(code, "no capabilities")
		return
	}
	ss.reply(101, "capability list follows")
	caps := []string{"VERSION 2", "IMPLEMENTATION edgeindex nntptest"}
	if cfg.ModeReader && !ss.reader {
		caps = append(caps, "MODE-READER")
	} else {
		caps = append(caps, "READER")
		if !cfg.NoOver {
			caps = append(caps, "OVER")
		}
	}
	if cfg.StartTLS && !ss.tls {
		caps = append(caps, "STARTTLS")
	}
	if cfg.User != "" && !ss.authed && (ss.tls || !cfg.RequireTLS) {
		caps = append(caps, "AUTHINFO USER")
	}
	if cfg.Compress {
		caps = append(caps, "XFEATURE-COMPRESS GZIP TERMINATOR")
	}
	if cfg.Deflate && ss.z == nil && (!cfg.DeflateAfterAuth || ss.authed) {
		caps = append(caps, "COMPRESS DEFLATE")
	}
	for _, c := range caps {
		ss.w.WriteString(c + "\r\n")
	}
	if cfg.CapLines > 0 {
		junk := bytes.Repeat([]byte("x"), 64<<10)
		for range cfg.CapLines {
			ss.w.WriteString("X-JUNK ")
			for left := max(0, cfg.CapLineBytes-7); left > 0; {
				n := min(left, len(junk))
				if _, err := ss.w.Write(junk[:n]); err != nil {
					return
				}
				left -= n
			}
			ss.w.WriteString("\r\n")
		}
	}
	ss.w.WriteString(".\r\n")
}

func (ss *session) authinfo(cfg Config, f []string) {
	if len(f) != 3 {
		ss.reply(501, "AUTHINFO USER name | AUTHINFO PASS password")
		return
	}
	if ss.authed {
		ss.reply(502, "already authenticated")
		return
	}
	switch strings.ToUpper(f[1]) {
	case "USER":
		ss.user = f[2]
		ss.reply(381, "password required")
	case "PASS":
		if ss.user == "" {
			ss.reply(482, "authentication commands issued out of sequence")
			return
		}
		user := ss.user
		ss.user = ""
		if cfg.AuthReply != 0 {
			ss.reply(cfg.AuthReply, "authentication failed")
			return
		}
		if cfg.User == "" || user != cfg.User || f[2] != cfg.Pass {
			ss.reply(481, "authentication failed")
			return
		}
		ss.authed = true
		ss.reply(281, "authentication accepted")
	default:
		ss.reply(501, "unknown AUTHINFO subcommand")
	}
}

// over answers OVER or XOVER; false ends the session.
func (ss *session) over(cfg Config, f []string) bool {
	g := ss.group
	if g == nil {
		ss.reply(412, "no newsgroup selected")
		return true
	}
	if len(f) != 2 {
		ss.reply(501, "OVER from-to")
		return true
	}
	from, to, ok := parseRange(f[1])
	if !ok {
		ss.reply(501, "bad range")
		return true
	}
	if len(cfg.Only) > 0 && !slices.Contains(cfg.Only, g.name) {
		cfg = cfg.calm()
	}
	if g.gen != nil {
		return ss.overGen(cfg, g, from, to)
	}
	i := sort.Search(len(g.nums), func(i int) bool { return g.nums[i] >= from })
	j := sort.Search(len(g.nums), func(i int) bool { return g.nums[i] > to })
	if j < i {
		j = i
	}
	lines := g.lines[i:j]
	if cfg.IgnoreRange {
		i, lines = 0, g.lines
	}
	if len(lines) == 0 && !cfg.Endless {
		switch cfg.EmptyReply {
		case 0, 423:
			ss.reply(423, "no articles in that range")
			return true
		case 420:
			ss.reply(420, "no current article")
			return true
		}
	}
	text := "overview information follows"
	if ss.compress && !cfg.NoMark {
		text += " [COMPRESS=GZIP]"
	}
	ss.reply(224, text)
	if cfg.DeflateBomb > 0 && ss.z != nil {
		return ss.bomb(cfg.DeflateBomb)
	}
	ow := ss.newOverWriter(cfg)
	var huge []byte
	for k, l := range lines {
		if cfg.HugeLines > 0 {
			huge = hugeLine(huge[:0], l, g.nums[i+k], cfg.HugeLines)
			l = huge
		}
		if !ow.send(l) {
			return false
		}
	}
	if cfg.EndlessLong > 0 {
		for n := to + 1; ; n++ {
			select {
			case <-ss.s.done:
				return false
			default:
			}
			if !ow.sendLong(n, cfg.EndlessLong) {
				return false
			}
		}
	}
	if cfg.Endless {
		last := to
		if len(lines) > 0 {
			last = max(last, g.nums[i+len(lines)-1])
		}
		for n := last + 1; ; n++ {
			select {
			case <-ss.s.done:
				return false
			default:
			}
			if !ow.send(Line("endless", n)) {
				return false
			}
		}
	}
	return ow.end()
}

// hugeLine appends to dst l with a ninth field of pseudo-random letters
// that takes it to about size bytes.
func hugeLine(dst, l []byte, n int64, size int) []byte {
	out := append(dst, l...)
	out = append(out, "\tX-Pad: "...)
	x := uint64(n)*0x9e3779b97f4a7c15 | 1
	for len(out) < size {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		out = append(out, 'a'+byte(x%26))
	}
	return out
}

// overWriter writes an overview answer's lines, dot-stuffed, through the
// compression the session turned on, as Config asks: a delay before each
// line, a cut after CloseAfter lines, the terminator inside the compressed
// stream or after it.
type overWriter struct {
	ss   *session
	cfg  Config
	body io.Writer
	zw   io.WriteCloser // nil: no compression
	sent int
}

func (ss *session) newOverWriter(cfg Config) *overWriter {
	ow := &overWriter{ss: ss, cfg: cfg, body: ss.w}
	if ss.compress {
		if cfg.Gzip {
			ow.zw = gzip.NewWriter(ss.w)
		} else {
			ow.zw = zlib.NewWriter(ss.w)
		}
		ow.body = ow.zw
	}
	return ow
}

func (ow *overWriter) flush() error {
	if f, ok := ow.zw.(interface{ Flush() error }); ok && ow.zw != nil {
		if err := f.Flush(); err != nil {
			return err
		}
	}
	return ow.ss.w.Flush()
}

// send writes one line; false ends the session.
func (ow *overWriter) send(l []byte) bool {
	if ow.cfg.LineDelay > 0 {
		if ow.flush() != nil {
			return false
		}
		t := time.NewTimer(ow.cfg.LineDelay)
		select {
		case <-t.C:
		case <-ow.ss.s.done:
			t.Stop()
			return false
		}
	}
	if ow.cfg.CloseAfter > 0 && ow.sent >= ow.cfg.CloseAfter {
		ow.flush()
		return false
	}
	if len(l) > 0 && l[0] == '.' {
		ow.write(dot)
	}
	ow.write(l)
	err := ow.write(crlf)
	ow.sent++
	if ow.cfg.DeflateBreak > 0 && ow.sent == ow.cfg.DeflateBreak && ow.ss.z != nil {
		return ow.ss.breakDeflate(ow.cfg.DeflateCorrupt)
	}
	return err == nil
}

// write writes b to the body, a byte at a time with a flush and a pause
// after each when Trickle is set.
func (ow *overWriter) write(b []byte) error {
	if ow.cfg.Trickle <= 0 {
		_, err := ow.body.Write(b)
		return err
	}
	for i := range b {
		if _, err := ow.body.Write(b[i : i+1]); err != nil {
			return err
		}
		if err := ow.flush(); err != nil {
			return err
		}
		t := time.NewTimer(ow.cfg.Trickle)
		select {
		case <-t.C:
		case <-ow.ss.s.done:
			t.Stop()
			return io.ErrClosedPipe
		}
	}
	return nil
}

// sendLong writes a line numbered n of size bytes, generated in pieces;
// false ends the session.
func (ow *overWriter) sendLong(n int64, size int) bool {
	head := strconv.AppendInt(nil, n, 10)
	head = append(head, '\t')
	if ow.write(head) != nil {
		return false
	}
	piece := bytes.Repeat([]byte("y"), 64<<10)
	for left := size - len(head); left > 0; {
		k := min(left, len(piece))
		if ow.write(piece[:k]) != nil {
			return false
		}
		left -= k
	}
	return ow.write(crlf) == nil
}

// end writes the terminator and ends the compressed stream; false ends the
// session.
func (ow *overWriter) end() bool {
	if ow.zw == nil {
		return ow.write([]byte(".\r\n")) == nil
	}
	if !ow.cfg.TerminatorOutside {
		ow.body.Write([]byte(".\r\n"))
		if left := ow.cfg.TrailingZeros; left > 0 {
			zeros := make([]byte, 64<<10)
			for left > 0 {
				k := min(left, int64(len(zeros)))
				// Flushed a piece at a time, so the client sees the response
				// and the first zeros at once, not after a buffer's worth of
				// compressed zeros (a gigabyte of them).
				if _, err := ow.body.Write(zeros[:k]); err != nil || ow.flush() != nil {
					return false
				}
				left -= k
				select {
				case <-ow.ss.s.done:
					return false
				default:
				}
			}
		}
	}
	if ow.zw.Close() != nil {
		return false
	}
	if ow.cfg.TerminatorOutside {
		ow.ss.w.WriteString(".\r\n")
	}
	return true
}

var dot, crlf = []byte("."), []byte("\r\n")

func parseRange(s string) (from, to int64, ok bool) {
	a, b, dash := strings.Cut(s, "-")
	from, err := strconv.ParseInt(a, 10, 64)
	if err != nil || from < 0 {
		return 0, 0, false
	}
	switch {
	case !dash:
		return from, from, true
	case b == "":
		return from, 1<<63 - 1, true
	}
	to, err = strconv.ParseInt(b, 10, 64)
	if err != nil || to < 0 {
		return 0, 0, false
	}
	return from, to, true
}

// lineNumber is the number a line starts with, or -1.
func lineNumber(l []byte) int64 {
	i := bytes.IndexByte(l, '\t')
	if i < 0 {
		i = len(l)
	}
	n, err := strconv.ParseInt(string(l[:i]), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// selfSigned makes a certificate for 127.0.0.1 and localhost.
func selfSigned() (*tls.Config, *x509.CertPool, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "nntptest"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	tc := &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}},
		MinVersion:   tls.VersionTLS12,
	}
	return tc, pool, nil
}

// body answers BODY from cfg.Bodies; false ends the session.
func (ss *session) body(cfg Config, f []string) bool {
	text, ok := "", false
	if len(f) == 2 {
		text, ok = cfg.Bodies[f[1]]
	}
	if !ok {
		ss.reply(430, "no such article")
		return true
	}
	id := f[1]
	if cfg.BodyOtherID {
		id = "<other@example.test>"
	}
	ss.reply(222, "0 "+id+" body follows")
	if cfg.EndlessBody {
		line := strings.Repeat("x", 1000) + "\r\n"
		for {
			if _, err := ss.w.WriteString(line); err != nil {
				return false
			}
		}
	}
	for _, l := range strings.SplitAfter(text, "\n") {
		if l == "" {
			continue
		}
		l = strings.TrimSuffix(l, "\n")
		if strings.HasPrefix(l, ".") {
			l = "." + l
		}
		ss.w.WriteString(l + "\r\n")
	}
	ss.w.WriteString(".\r\n")
	return true
}
