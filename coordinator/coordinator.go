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

	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/corpus"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/node"
	"github.com/edgeindex/edgeindex/spool"
)

// Store is every store the coordinator uses; sqlstore.Store is one.
type Store interface {
	lease.Store
	batch.Store
	grouplease.Catalog
	grouplease.Store
	grouplease.SnapshotStore
	node.Store
	spool.Claims
	Ping(ctx context.Context) error
}

// Defaults of Config.
const (
	DefaultLeaseTTL    = 60 * time.Second
	DefaultMaxBody     = 64 << 20
	DefaultMaxSnapshot = 64 << 20
	// DefaultWriteTimeout bounds one write to a client.
	DefaultWriteTimeout = 30 * time.Second
)

// Config configures a Server. Store, Spool and SnapshotDir are required;
// the zero value of every other field means its default.
type Config struct {
	Store Store
	Spool spool.Store
	// Corpus holds capture ranges' chunks; nil: they stay in the spool.
	Corpus corpus.Store
	// SnapshotDir holds the lanes' snapshot files.
	SnapshotDir string
	// Prefetcher, when set, is kicked when a range is leased or a chunk
	// dropped, and tells streams when a chunk arrives.
	Prefetcher *spool.Prefetcher
	// AdminToken guards the admin API; empty: the admin API answers 401.
	AdminToken string
	// LeaseTTL is the TTL of every grant. Default 60s.
	LeaseTTL time.Duration
	// MaxBody caps a batch body (413 above it). Default 64 MiB.
	MaxBody int64
	// MaxSnapshot caps a snapshot body (413 above it). Default 64 MiB.
	MaxSnapshot int64
	// MaxBatchBytes bounds the bytes of batch bodies decoded and stored at
	// once (a body of unknown length counts as MaxBody); a batch with no
	// room gets 503 busy with Retry-After. Decoding takes a few times a
	// body's size in memory, so this bounds the memory batches take. At
	// least MaxBody; default 2 × MaxBody.
	MaxBatchBytes int64
	// WriteTimeout bounds each write to a client: a piece of a stream or of
	// a snapshot (spool.WritePiece bytes), or a JSON answer. A worker that
	// stops reading loses its stream after it. Default 30s.
	WriteTimeout time.Duration
	// Keepalive and WaitLimit tune streams (spool.StreamConfig); defaults 20s and 1h.
	Keepalive, WaitLimit time.Duration
	Logger               *slog.Logger
	// Metrics, when set, counts what the coordinator does. See NewMetrics.
	Metrics *Metrics
}

func (c *Config) validate() error {
	if c.Store == nil || c.Spool == nil || c.SnapshotDir == "" {
		return lease.Invalidf("coordinator: Store, Spool and SnapshotDir are required")
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = DefaultLeaseTTL
	}
	if c.MaxBody == 0 {
		c.MaxBody = DefaultMaxBody
	}
	if c.MaxSnapshot == 0 {
		c.MaxSnapshot = DefaultMaxSnapshot
	}
	if c.MaxBatchBytes == 0 && c.MaxBody > 0 {
		c.MaxBatchBytes = 2 * c.MaxBody
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.LeaseTTL < time.Second || c.MaxBody < 1 || c.MaxSnapshot < 1 || c.MaxBatchBytes < c.MaxBody || c.WriteTimeout < 0 {
		return lease.Invalidf("coordinator: LeaseTTL must be at least 1s, MaxBody and MaxSnapshot at least 1, MaxBatchBytes at least MaxBody, WriteTimeout not negative")
	}
	return nil
}

// Server is the coordinator's HTTP API, as shared/API.md gives it: an
// http.Handler, so another program can embed it.
type Server struct {
	cfg       Config
	mux       *http.ServeMux
	snaps     *snapshotFiles
	adminHash [32]byte
	batches   budget

	streams    context.Context // cancelled by Drain: streams end with an error frame
	stopStream context.CancelFunc
}

var _ http.Handler = (*Server)(nil)

// New checks cfg and returns a Server.
func New(cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	snaps, err := openSnapshotFiles(cfg.SnapshotDir)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), snaps: snaps, adminHash: sha256.Sum256([]byte(cfg.AdminToken)),
		batches: budget{max: cfg.MaxBatchBytes}}
	s.streams, s.stopStream = context.WithCancel(context.Background())
	s.routes()
	return s, nil
}

func (s *Server) routes() {
	node := func(pattern string, h func(w http.ResponseWriter, r *http.Request, n string) error) {
		s.mux.Handle(pattern, s.instrument(pattern, s.asNode(h)))
	}
	admin := func(pattern string, h func(w http.ResponseWriter, r *http.Request) error) {
		s.mux.Handle(pattern, s.instrument(pattern, s.asAdmin(h)))
	}
	node("POST /v1/lease", s.handleLease)
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
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		s.writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
	})
	s.mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := s.cfg.Store.Ping(ctx); err != nil {
			// No driver error, address or user name goes to the client.
			s.cfg.Logger.Warn("readyz: the database does not answer", "err", err)
			w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
			s.writeError(w, http.StatusServiceUnavailable, CodeBusy, "the database does not answer; the coordinator's log has the detail")
			return
		}
		s.writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
	})
	if s.cfg.Metrics != nil {
		s.mux.Handle("GET /metrics", s.cfg.Metrics.Handler())
	}
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
			s.writeError(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed, fmt.Sprintf("%s is not allowed on %s", r.Method, r.URL.Path))
			return
		}
		s.writeError(w, http.StatusNotFound, CodeNotFound, fmt.Sprintf("no route %s %s", r.Method, r.URL.Path))
		return
	}
	s.mux.ServeHTTP(w, r)
}

// Drain ends the streams in flight with an error frame; call it before
// http.Server.Shutdown, which waits for them.
func (s *Server) Drain() { s.stopStream() }

// statusRecorder catches the mux's own 404 and 405 answers.
type statusRecorder struct {
	header http.Header
	status int
}

func (r *statusRecorder) Header() http.Header         { return r.header }
func (r *statusRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (r *statusRecorder) WriteHeader(status int)      { r.status = status }

type nodeKey struct{}

// asNode authenticates a node token and passes the node's name.
func (s *Server) asNode(h func(http.ResponseWriter, *http.Request, string) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearer(r)
		if !ok {
			s.fail(w, r, errUnauthorized)
			return
		}
		n, err := s.cfg.Store.Authenticate(r.Context(), node.HashToken(token))
		if errors.Is(err, lease.ErrNotFound) {
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

// HTTPServer returns an http.Server for h with the coordinator's timeouts.
// Its WriteTimeout is zero, as streams are long: the Server sets a write
// deadline before each write it makes instead (Config.WriteTimeout).
func HTTPServer(h http.Handler, log *slog.Logger) *http.Server {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       5 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	if log != nil {
		srv.ErrorLog = slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	}
	return srv
}

// Listen binds addr before serving, so a busy port is an error at once.
func Listen(addr string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("coordinator: listen %s: %w", addr, err)
	}
	return l, nil
}
