package coordinator

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/internal/connlimit"
	"github.com/edgeindex/edgeindex/node"
)

// Server is the coordinator's HTTP API, as docs/api.md gives it, over a
// Service: an http.Handler, so another program can embed it. Its handlers
// parse a request, call the Service, and write its answer.
type Server struct {
	svc       *Service
	cfg       Config
	mux       *http.ServeMux
	patterns  []string // every pattern on mux, in the order routes adds them
	adminHash [32]byte
	batches   budget
}

var _ http.Handler = (*Server)(nil)

// NewServer returns the HTTP API over svc, with the HTTP layer's settings
// of the Service's Config: AdminToken guards the admin routes (empty: they
// answer 401), MaxBody and MaxBatchBytes bound batch bodies, WriteTimeout
// every write. The batch memory budget is the Server's: two Servers over
// one Service may hold twice MaxBatchBytes.
func NewServer(svc *Service) *Server {
	s := &Server{svc: svc, cfg: svc.cfg, mux: http.NewServeMux(), adminHash: sha256.Sum256([]byte(svc.cfg.AdminToken)),
		batches: budget{max: svc.cfg.MaxBatchBytes}}
	s.routes()
	return s
}

// Service is the Service the Server calls.
func (s *Server) Service() *Service { return s.svc }

// handle registers h for pattern on the mux.
func (s *Server) handle(pattern string, h http.Handler) {
	s.patterns = append(s.patterns, pattern)
	s.mux.Handle(pattern, h)
}

func (s *Server) routes() {
	node := func(pattern string, h func(w http.ResponseWriter, r *http.Request, n string) error) {
		s.handle(pattern, s.instrument(pattern, s.asNode(h)))
	}
	admin := func(pattern string, h func(w http.ResponseWriter, r *http.Request) error) {
		s.handle(pattern, s.instrument(pattern, s.asAdmin(h)))
	}
	node("POST /v1/lease", s.handleLease)
	node("POST /v1/leases", s.handleLeases)
	node("POST /v1/batches", s.handleBatches)
	node("POST /v1/finishes", s.handleFinishes)
	node("POST /v1/heartbeats", s.handleHeartbeats)
	node("GET /v1/ranges/{id}/stream", s.handleStream)
	node("POST /v1/ranges/{id}/batch", s.handleBatch)
	node("POST /v1/ranges/{id}/heartbeat", s.handleHeartbeat)
	node("POST /v1/ranges/{id}/finish", s.handleFinish)
	node("POST /v1/ranges/{id}/corrupt", s.handleCorrupt)
	node("POST /v1/ranges/{id}/release", s.handleRelease)
	node("POST /v1/groups/lease", s.handleLaneLease)
	node("POST /v1/groups/{id}/next", s.handleNext)
	node("POST /v1/groups/{id}/heartbeat", s.handleLaneHeartbeat)
	node("POST /v1/groups/{id}/release", s.handleLaneRelease)
	node("PUT /v1/groups/{id}/snapshot", s.handlePutSnapshot)
	node("GET /v1/groups/{id}/snapshot", s.handleGetSnapshot)
	admin("GET /v1/fleet", s.handleFleet)
	admin("GET /v1/nodes/{name}", s.handleNode)
	admin("GET /v1/ranges", s.handleRanges)
	admin("GET /v1/results", s.handleResults)
	admin("DELETE /v1/groups/{id}/snapshot", s.handleResetSnapshot)
	admin("GET /v1/releases", s.handleReleases)
	admin("GET /v1/releases/{id}", s.handleReleaseByID)
	admin("GET /v1/releases/{id}/nzb", s.handleNZB)
	s.handle("GET /healthz", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.writeJSON(w, http.StatusOK, api.OK{OK: true})
	}))
	s.handle("GET /readyz", http.HandlerFunc(s.handleReady))
	if s.cfg.Metrics != nil {
		s.handle("GET /metrics", s.cfg.Metrics.Handler())
	}
}

func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.svc.Ping(ctx); err != nil {
		// No driver error, address or user name goes to the client.
		s.cfg.Logger.Warn("readyz: the database does not answer", "err", err)
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
		s.writeError(w, http.StatusServiceUnavailable, api.CodeBusy, "the database does not answer; the coordinator's log has the detail")
		return
	}
	s.writeJSON(w, http.StatusOK, api.OK{OK: true})
}

// ServeHTTP serves the API. A route it does not know gets a JSON 404, a
// method a route does not take a JSON 405 with Allow.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, pattern := s.mux.Handler(r); pattern == "" {
		rec := &statusRecorder{header: http.Header{}}
		s.mux.ServeHTTP(rec, r)
		if allow := rec.header.Get("Allow"); allow != "" {
			w.Header().Set("Allow", allow)
		}
		if rec.status == http.StatusMethodNotAllowed {
			s.writeError(w, http.StatusMethodNotAllowed, api.CodeMethodNotAllowed, fmt.Sprintf("%s is not allowed on %s", r.Method, r.URL.Path))
			return
		}
		s.writeError(w, http.StatusNotFound, api.CodeNotFound, fmt.Sprintf("no route %s %s", r.Method, r.URL.Path))
		return
	}
	s.mux.ServeHTTP(w, r)
}

// Drain ends the streams in flight with an error frame; call it before
// http.Server.Shutdown, which waits for them.
func (s *Server) Drain() { s.svc.Drain() }

// statusRecorder catches the mux's own 404 and 405 answers.
type statusRecorder struct {
	header http.Header
	status int
}

func (r *statusRecorder) Header() http.Header         { return r.header }
func (r *statusRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (r *statusRecorder) WriteHeader(status int)      { r.status = status }

// asNode authenticates a node token and passes the node's name.
func (s *Server) asNode(h func(http.ResponseWriter, *http.Request, string) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearer(r)
		if !ok {
			s.fail(w, r, errUnauthorized)
			return
		}
		n, err := s.cfg.Store.Authenticate(r.Context(), node.HashToken(token))
		if errors.Is(err, edgeindex.ErrNotFound) {
			s.fail(w, r, errUnauthorized)
			return
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if err := h(w, r, n.Name); err != nil {
			s.fail(w, r, err)
		}
	})
}

// asAdmin checks the admin token in constant time; a node's token gets 403.
func (s *Server) asAdmin(h func(http.ResponseWriter, *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearer(r)
		if !ok {
			s.fail(w, r, errUnauthorized)
			return
		}
		sum := sha256.Sum256([]byte(token))
		if s.cfg.AdminToken == "" || subtle.ConstantTimeCompare(sum[:], s.adminHash[:]) != 1 {
			if _, err := s.cfg.Store.Authenticate(r.Context(), node.HashToken(token)); err == nil {
				s.fail(w, r, errForbidden)
				return
			}
			s.fail(w, r, errUnauthorized)
			return
		}
		if err := h(w, r); err != nil {
			s.fail(w, r, err)
		}
	})
}

// HTTPServer returns an http.Server for s with the coordinator's timeouts,
// logging to the Service's Logger when the Config has one. Its WriteTimeout is zero, as streams
// are long: the Server sets a write deadline before each write it makes
// instead (Config.WriteTimeout).
func (s *Server) HTTPServer() *http.Server {
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       5 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	if s.svc.logs { // else net/http's own log, stderr: a recovered panic is never silent
		hs.ErrorLog = slog.NewLogLogger(s.cfg.Logger.Handler(), slog.LevelWarn)
	}
	return hs
}

// MaxConns and MaxConnsPerIP bound the connections a listener of Listen
// holds open, in all and from one IP address (or IPv6 /64). A worker
// holds a few (a stream, a batch, a heartbeat), so a fleet of hundreds
// behind one NAT fits; a host that opens connections and sends nothing
// holds at most MaxConnsPerIP of them, each for HTTPServer's header
// timeout.
const (
	MaxConns      = 4096
	MaxConnsPerIP = 1024
)

// Listen binds addr before serving, so a busy port is an error at once.
// A connection past MaxConns or MaxConnsPerIP is closed as it is
// accepted.
func Listen(addr string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("coordinator: listen %s: %w", addr, err)
	}
	return connlimit.New(l, connlimit.Config{Max: MaxConns, PerIP: MaxConnsPerIP})
}
