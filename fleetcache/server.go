package fleetcache

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Server defaults, used when a ServerConfig field is zero.
const (
	DefaultAddr              = "127.0.0.1:7071"
	DefaultReadyPath         = "/readyz"
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 10 * time.Second
	DefaultWriteTimeout      = 30 * time.Second
	DefaultIdleTimeout       = 60 * time.Second
	DefaultShutdownTimeout   = 2 * time.Second
	DefaultMaxHeaderBytes    = 64 << 10
)

// RouteFunc answers one GET (or HEAD) request of a route. An error is answered
// as {"error": err.Error()} with the status of its kind: see ServerConfig.
type RouteFunc func(r *http.Request) (Reply, error)

// Route is a path served by a Server. Paths match exactly.
type Route struct {
	Path   string
	Handle RouteFunc
}

// Reply is what a route answers.
type Reply struct {
	// Status is the HTTP status; 0 means 200.
	Status int
	// Body is sent as it is when it is not nil; otherwise Value is encoded
	// as JSON. The Server never changes Body.
	Body  []byte
	Value any
	// ContentType defaults to "application/json".
	ContentType string
	// Meta sets Cache-Control (max-age: what is left of the keep,
	// stale-while-revalidate) and Age when Meta.PolledAt is set; otherwise the
	// reply is sent with Cache-Control: no-store.
	Meta Meta
}

// ReadyState is handed to ServerConfig.Ready.
type ReadyState struct {
	// Ready is false while the server drains.
	Ready     bool
	Draining  bool
	StartedAt time.Time
	ServedAt  time.Time
}

// ServerConfig configures a Server. Its zero value means the defaults, and a
// server with only the ready route.
//
// Route errors are answered with: the status of a StatusError (see
// WithStatus); 400 for ErrBadRequest; 404 for ErrNotFound; 504 for
// context.DeadlineExceeded; 502 for the failed reads of a Cache or Seats
// (ErrReadFailed, ErrRejected, ErrPanic, ErrTooStale); 500 otherwise.
type ServerConfig struct {
	// Addr is where Listen binds. "" means 127.0.0.1:7071; an empty host (as
	// in ":7071") means 127.0.0.1 too. Bind to all interfaces with
	// "0.0.0.0:7071" or "[::]:7071".
	Addr string
	// Routes are served for GET and HEAD.
	Routes []Route
	// ReadyPath is the readiness route. "" means /readyz. It is answered by
	// the process alone: 200, or 503 while draining.
	ReadyPath string
	// Ready returns the body of the readiness route. nil means
	// {"ready", "startedAt", "servedAt"}.
	Ready func(ReadyState) any
	// StaleWhileRevalidate is the stale-while-revalidate of Cache-Control.
	// 0 means the reply's Meta.KeptForSeconds.
	StaleWhileRevalidate time.Duration
	// Timeouts of the http.Server; 0 means 5 s, 10 s, 30 s and 60 s.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	// MaxHeaderBytes; 0 means 64 KiB.
	MaxHeaderBytes int
	// DrainDelay is how long Serve keeps answering, with the ready route at
	// 503, after its context is done and before it shuts down, so that a load
	// balancer can see it leave. It counts within ShutdownTimeout. 0 means none.
	DrainDelay time.Duration
	// ShutdownTimeout bounds the whole stop, from the context being done to
	// Serve returning; connections still open then are closed. 0 means 2 s.
	ShutdownTimeout time.Duration
	// Clock is the clock. nil means RealClock.
	Clock Clock
	// ErrorLog receives the http.Server's errors. nil means the log package's
	// standard logger.
	ErrorLog *log.Logger
}

// withDefaults returns c with every zero field that has a default set to
// it, and an Addr with an empty host given 127.0.0.1.
func (c ServerConfig) withDefaults() ServerConfig {
	setDefault(&c.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	setDefault(&c.ReadTimeout, DefaultReadTimeout)
	setDefault(&c.WriteTimeout, DefaultWriteTimeout)
	setDefault(&c.IdleTimeout, DefaultIdleTimeout)
	setDefault(&c.ShutdownTimeout, DefaultShutdownTimeout)
	setDefault(&c.MaxHeaderBytes, DefaultMaxHeaderBytes)
	setDefault(&c.Addr, DefaultAddr)
	if host, port, err := net.SplitHostPort(c.Addr); err == nil && host == "" {
		c.Addr = net.JoinHostPort("127.0.0.1", port)
	}
	setDefault(&c.ReadyPath, DefaultReadyPath)
	if c.Clock == nil {
		c.Clock = RealClock
	}
	return c
}

// validate checks a ServerConfig that has its defaults.
func (c ServerConfig) validate() error {
	if c.ReadHeaderTimeout < 0 || c.ReadTimeout < 0 || c.WriteTimeout < 0 || c.IdleTimeout < 0 ||
		c.DrainDelay < 0 || c.ShutdownTimeout < 0 || c.StaleWhileRevalidate < 0 || c.MaxHeaderBytes < 0 {
		return invalidf("fleetcache: timeouts, StaleWhileRevalidate and MaxHeaderBytes cannot be negative")
	}
	if c.DrainDelay >= c.ShutdownTimeout {
		return invalidf("fleetcache: DrainDelay (%s) must be less than ShutdownTimeout (%s)", c.DrainDelay, c.ShutdownTimeout)
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return invalidf("fleetcache: Addr %q: %v", c.Addr, err)
	}
	seen := map[string]bool{c.ReadyPath: true}
	for _, rt := range c.Routes {
		if !strings.HasPrefix(rt.Path, "/") {
			return invalidf("fleetcache: route path %q does not start with /", rt.Path)
		}
		if rt.Handle == nil {
			return invalidf("fleetcache: route %s has no Handle", rt.Path)
		}
		if seen[rt.Path] {
			return invalidf("fleetcache: route %s is given twice (or is the ready path)", rt.Path)
		}
		seen[rt.Path] = true
	}
	return nil
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// Server is the read-only reader's HTTP server: an http.Handler over the
// configured routes, plus Listen/Serve/Run with a graceful stop.
//
// Every route answers GET and HEAD only (405 with Allow: GET, HEAD
// otherwise); an unknown path gets 404. 200 replies carry a strong ETag made
// from the body, and a matching If-None-Match gets 304 with no body.
type Server struct {
	cfg       ServerConfig
	routes    map[string]RouteFunc
	startedAt time.Time
	draining  atomic.Bool

	mu   sync.Mutex
	ln   net.Listener
	http *http.Server
}

var _ http.Handler = (*Server)(nil)

// NewServer returns a Server. It does not listen yet.
func NewServer(cfg ServerConfig) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, routes: make(map[string]RouteFunc, len(cfg.Routes)), startedAt: cfg.Clock.Now()}
	for _, rt := range cfg.Routes {
		s.routes[rt.Path] = rt.Handle
	}
	return s, nil
}

// Drain marks the server as draining: the ready route answers 503 from now
// on. Serve calls it when its context is done.
func (s *Server) Drain() { s.draining.Store(true) }

// Draining reports whether Drain was called.
func (s *Server) Draining() bool { return s.draining.Load() }

// Header values shared by every response. net/http only reads them, and
// Header.Set or Add replace or grow a copy, so sharing them is safe.
var (
	headerJSON    = []string{"application/json"}
	headerNoSt    = []string{"no-store"}
	headerAllow   = []string{"GET, HEAD"}
	headerNoSniff = []string{"nosniff"}
)

// ServeHTTP answers one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	route, ok := s.routes[r.URL.Path]
	isReady := r.URL.Path == s.cfg.ReadyPath
	if !ok && !isReady {
		s.writeError(w, r, http.StatusNotFound, fmt.Sprintf("nothing is served at %s", r.URL.Path))
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header()["Allow"] = headerAllow
		s.writeError(w, r, http.StatusMethodNotAllowed, fmt.Sprintf("method %s is not allowed: use GET or HEAD", r.Method))
		return
	}
	if isReady {
		s.serveReady(w, r)
		return
	}
	reply, err := route(r)
	if err != nil {
		s.writeError(w, r, statusOf(err), err.Error())
		return
	}
	s.writeReply(w, r, reply)
}

// writeReply writes a route's reply: its body (Value encoded when Body is
// nil), its headers, and 304 when the client's ETag matches.
func (s *Server) writeReply(w http.ResponseWriter, r *http.Request, reply Reply) {
	body := reply.Body
	if body == nil {
		var err error
		if body, err = json.Marshal(reply.Value); err != nil {
			s.writeError(w, r, http.StatusInternalServerError, "cannot encode the reply: "+err.Error())
			return
		}
	}
	status := cmp.Or(reply.Status, http.StatusOK)
	h := w.Header()
	s.setHeaders(h, reply, status)
	if status == http.StatusOK {
		etag := ETag(body)
		h["Etag"] = []string{etag}
		if inm := r.Header.Get("If-None-Match"); inm != "" && etagMatch(inm, etag) {
			delete(h, "Content-Type")
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// setHeaders sets a reply's Content-Type, X-Content-Type-Options and
// caching headers (Cache-Control and Age from its Meta for a 200 of a
// cached read, no-store otherwise).
func (s *Server) setHeaders(h http.Header, reply Reply, status int) {
	h["Content-Type"] = headerJSON
	if reply.ContentType != "" {
		h["Content-Type"] = []string{reply.ContentType}
	}
	h["X-Content-Type-Options"] = headerNoSniff
	if status == http.StatusOK && !reply.Meta.PolledAt.IsZero() {
		h["Cache-Control"] = []string{s.cacheControl(reply.Meta)}
		h["Age"] = []string{strconv.FormatInt(int64(math.Max(0, reply.Meta.CacheAgeSeconds)), 10)}
	} else {
		h["Cache-Control"] = headerNoSt
	}
}

func (s *Server) cacheControl(m Meta) string {
	left := int64(math.Max(0, m.KeptForSeconds-m.CacheAgeSeconds))
	swr := int64(m.KeptForSeconds)
	if s.cfg.StaleWhileRevalidate > 0 {
		swr = int64(s.cfg.StaleWhileRevalidate.Seconds())
	}
	b := make([]byte, 0, 64)
	b = append(b, "max-age="...)
	b = strconv.AppendInt(b, left, 10)
	b = append(b, ", stale-while-revalidate="...)
	b = strconv.AppendInt(b, swr, 10)
	return string(b)
}

func (s *Server) serveReady(w http.ResponseWriter, r *http.Request) {
	draining := s.draining.Load()
	st := ReadyState{Ready: !draining, Draining: draining, StartedAt: s.startedAt.UTC(), ServedAt: s.cfg.Clock.Now().UTC()}
	var v any
	if s.cfg.Ready != nil {
		v = s.cfg.Ready(st)
	} else {
		v = struct {
			Ready     bool      `json:"ready"`
			StartedAt time.Time `json:"startedAt"`
			ServedAt  time.Time `json:"servedAt"`
		}{st.Ready, st.StartedAt, st.ServedAt}
	}
	body, err := json.Marshal(v)
	if err != nil {
		s.writeError(w, r, http.StatusInternalServerError, "cannot encode the ready reply: "+err.Error())
		return
	}
	status := http.StatusOK
	if draining {
		status = http.StatusServiceUnavailable
	}
	writeRaw(w, r, status, body)
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, status int, msg string) {
	body, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{msg})
	writeRaw(w, r, status, body)
}

func writeRaw(w http.ResponseWriter, r *http.Request, status int, body []byte) {
	h := w.Header()
	h["Content-Type"] = headerJSON
	h["Cache-Control"] = headerNoSt
	h["X-Content-Type-Options"] = headerNoSniff
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// statusOf is the one table from error kinds to HTTP statuses.
func statusOf(err error) int {
	var se *StatusError
	switch {
	case errors.As(err, &se):
		return se.Status
	case errors.Is(err, ErrBadRequest):
		return http.StatusBadRequest
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	case errors.Is(err, ErrTooStale), errors.Is(err, ErrRejected), errors.Is(err, ErrPanic), errors.Is(err, ErrReadFailed):
		return http.StatusBadGateway
	}
	return http.StatusInternalServerError
}

// ETag returns the strong entity tag of body: a quoted hex prefix of its
// SHA-256.
func ETag(body []byte) string {
	sum := sha256.Sum256(body)
	var b [34]byte
	b[0] = '"'
	hex.Encode(b[1:33], sum[:16])
	b[33] = '"'
	return string(b[:])
}

// etagMatch reports whether the If-None-Match header value inm matches etag,
// by weak comparison as RFC 9110 asks for If-None-Match.
func etagMatch(inm, etag string) bool {
	for {
		inm = strings.TrimLeft(inm, " \t,")
		if inm == "" {
			return false
		}
		if inm[0] == '*' {
			return true
		}
		inm = strings.TrimPrefix(inm, "W/")
		if inm == "" || inm[0] != '"' {
			return false
		}
		end := strings.IndexByte(inm[1:], '"')
		if end < 0 {
			return false
		}
		if inm[:end+2] == etag {
			return true
		}
		inm = inm[end+2:]
	}
}

// Listen binds the configured address, so that a busy port is an error here
// and not later inside Serve.
func (s *Server) Listen() (net.Addr, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		return nil, fmt.Errorf("fleetcache: already listening on %s", s.ln.Addr())
	}
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("fleetcache: listen: %w", err)
	}
	s.ln = ln
	s.http = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    s.cfg.MaxHeaderBytes,
		ErrorLog:          s.cfg.ErrorLog,
	}
	return ln.Addr(), nil
}

// Serve serves on the listener bound by Listen until ctx is done. Then it
// drains (the ready route answers 503), waits DrainDelay, shuts down
// gracefully, and returns nil within ShutdownTimeout of ctx being done;
// connections still busy by then are closed. The caller wires
// signal.NotifyContext for SIGTERM and SIGINT.
func (s *Server) Serve(ctx context.Context) error {
	s.mu.Lock()
	ln, srv := s.ln, s.http
	s.mu.Unlock()
	if ln == nil {
		return ErrNotListening
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("fleetcache: serve: %w", err)
	case <-ctx.Done():
	}
	s.Drain()
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	if s.cfg.DrainDelay > 0 {
		t := time.NewTimer(s.cfg.DrainDelay)
		select {
		case <-t.C:
		case <-sctx.Done():
		}
		t.Stop()
	}
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close() // the deadline passed: close what is left
	}
	<-errc // http.ErrServerClosed
	return nil
}

// Run is Listen then Serve.
func (s *Server) Run(ctx context.Context) error {
	if _, err := s.Listen(); err != nil {
		return err
	}
	return s.Serve(ctx)
}
