package newznab

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/edgeindex/edgeindex"
)

// Config configures a Handler. The zero value of every field but Store
// means its default.
type Config struct {
	Store Store
	// URL is the base URL users reach the handler at, as the links in
	// the feeds and pages carry it ("https://indexer.example/nz"); empty:
	// http:// and the Host of each request.
	URL string
	// Title names the indexer in caps and on the page; "edgeindex".
	Title string
	// MaxLimit is the most items a search answers (caps limits max);
	// DefaultLimit those it answers when no limit is asked for. 100 and
	// 100; at most release.MaxSearchLimit.
	MaxLimit, DefaultLimit int
	// MinCompletion is the share of its parts, in percent, a release
	// needs to be listed; 0: 100, complete releases only.
	MinCompletion int
	// Logger takes what a 900 answer does not tell the client;
	// slog.Default() when nil.
	Logger *slog.Logger
	// Now is the clock the daily limits and maxage count by; time.Now
	// when nil.
	Now func() time.Time
	// Timeout is the deadline of each request's work in the store (a
	// search, a key check, a grab); DefaultTimeout when 0. A request past
	// it answers 900 (a 503 page) and is logged as a warning.
	Timeout time.Duration
	// MaxRequests bounds the requests that read the store (a search, a
	// release's details, an NZB) being answered at once, and
	// MaxRequestsPerKey those of one key; DefaultMaxRequests and
	// DefaultMaxRequestsPerKey when 0. A request over either is refused
	// with ErrBusy, never queued, and counts nothing.
	MaxRequests, MaxRequestsPerKey int
	// BusyDelay is how long a refused request waits, doing nothing,
	// before its answer: a client that retries at once then sends at
	// most one request a BusyDelay on each connection, instead of
	// thousands a second that cost the machine what they cost the
	// coordination path. The connection limits bound the waits.
	// DefaultBusyDelay when 0; negative: none.
	BusyDelay time.Duration
}

// DefaultBusyDelay is a refusal's wait when Config.BusyDelay is 0.
const DefaultBusyDelay = 500 * time.Millisecond

// DefaultTimeout is the deadline of a request when Config.Timeout is 0.
const DefaultTimeout = 10 * time.Second

// errDeadline is the cause of a request's context when Config.Timeout
// passed; any other end of the context is the client's leaving.
var errDeadline = errors.New("newznab: the request's deadline (Config.Timeout) passed")

// Handler serves the Newznab API and the search page.
type Handler struct {
	cfg  Config
	mux  *http.ServeMux
	gate *gate
}

// CookieName is the cookie the search page keeps the key in.
const CookieName = "edgeindex_apikey"

// New returns a Handler over cfg.Store.
func New(cfg Config) (*Handler, error) {
	if cfg.Store == nil {
		return nil, edgeindex.Invalidf("newznab: Config.Store is required")
	}
	cfg.Title = cmp.Or(cfg.Title, "edgeindex")
	cfg.MaxLimit = cmp.Or(cfg.MaxLimit, 100)
	cfg.DefaultLimit = cmp.Or(cfg.DefaultLimit, min(100, cfg.MaxLimit))
	cfg.MinCompletion = cmp.Or(cfg.MinCompletion, 100)
	cfg.URL = strings.TrimSuffix(cfg.URL, "/")
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Timeout = cmp.Or(cfg.Timeout, DefaultTimeout)
	cfg.BusyDelay = cmp.Or(cfg.BusyDelay, DefaultBusyDelay)
	cfg.MaxRequests = cmp.Or(cfg.MaxRequests, DefaultMaxRequests)
	cfg.MaxRequestsPerKey = cmp.Or(cfg.MaxRequestsPerKey, min(DefaultMaxRequestsPerKey, cfg.MaxRequests))
	switch {
	case cfg.MaxRequests < 1 || cfg.MaxRequests > 1024:
		return nil, edgeindex.Invalidf("newznab: MaxRequests %d must be 1 to 1024", cfg.MaxRequests)
	case cfg.MaxRequestsPerKey < 1 || cfg.MaxRequestsPerKey > cfg.MaxRequests:
		return nil, edgeindex.Invalidf("newznab: MaxRequestsPerKey %d must be 1 to MaxRequests", cfg.MaxRequestsPerKey)
	case cfg.Timeout < 0:
		return nil, edgeindex.Invalidf("newznab: Timeout %v must not be negative", cfg.Timeout)
	case cfg.MaxLimit < 1 || cfg.MaxLimit > 1000:
		return nil, edgeindex.Invalidf("newznab: MaxLimit %d must be 1 to 1000", cfg.MaxLimit)
	case cfg.DefaultLimit < 1 || cfg.DefaultLimit > cfg.MaxLimit:
		return nil, edgeindex.Invalidf("newznab: DefaultLimit %d must be 1 to MaxLimit", cfg.DefaultLimit)
	case cfg.MinCompletion < 1 || cfg.MinCompletion > 100:
		return nil, edgeindex.Invalidf("newznab: MinCompletion %d must be 1 to 100", cfg.MinCompletion)
	}
	h := &Handler{cfg: cfg, mux: http.NewServeMux(), gate: newGate(cfg.MaxRequests, cfg.MaxRequestsPerKey)}
	for _, r := range h.routes() {
		h.mux.HandleFunc(r.pattern, r.serve)
	}
	return h, nil
}

// route is one pattern of the Handler's mux.
type route struct {
	pattern string
	serve   http.HandlerFunc
}

// routes are the Handler's routes, as docs/api.md's "Front door" part
// names them: /api's other methods get 405, and the paths under /api/ 404.
func (h *Handler) routes() []route {
	return []route{
		{"GET /api", h.serveAPI},
		{"/api", h.serveAPIMethod},
		{"/api/", h.serveAPINotFound},
		{"GET /{$}", h.servePage},
		{"GET /details/{id}", h.serveDetails},
		{"GET /nzb/{id}", h.serveNZB},
		{"POST /login", h.serveLogin},
		{"POST /logout", h.serveLogout},
	}
}

// ServeHTTP implements http.Handler. Every request runs under the
// deadline of Config.Timeout.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeoutCause(r.Context(), h.cfg.Timeout, errDeadline)
	defer cancel()
	ctx = context.WithValue(ctx, userKey{}, new(string))
	h.mux.ServeHTTP(w, r.WithContext(ctx))
}

// userKey is the context key of the name of the user a request's key
// belongs to, once use has read it: failure logs it. ServeHTTP puts a
// *string there for use to fill.
type userKey struct{}

// requestUser returns where ctx's request keeps its user's name: a
// place of its own outside ServeHTTP.
func requestUser(ctx context.Context) *string {
	if p, ok := ctx.Value(userKey{}).(*string); ok {
		return p
	}
	return new(string)
}

// queryShape is what failure logs of request r's query: the names of its
// parameters in order, with the values of cat and of the API's t (a
// function and categories), never a key, the NZB link's token t or the
// words searched for: "cat=5030 maxage minsize q t=search".
func queryShape(r *http.Request) string {
	p := r.URL.Query()
	names := slices.Sorted(maps.Keys(p))
	var b strings.Builder
	for _, n := range names[:min(len(names), 16)] {
		switch {
		case n == "apikey":
			continue
		case n == "cat", n == "t" && strings.HasSuffix(r.URL.Path, "/api"):
			n += "=" + shorten(p.Get(n), 40)
		default:
			n = shorten(n, 20)
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(n)
	}
	return b.String()
}

// base is the base URL links carry for request r.
func (h *Handler) base(r *http.Request) string {
	if h.cfg.URL != "" {
		return h.cfg.URL
	}
	return "http://" + r.Host
}

// apiKey returns the apikey parameter of an /api request. The API never
// reads the page's cookie: a link from another site to /api would
// otherwise spend the browser's requests and grabs, and a feed would
// write the cookie's key into its links.
func apiKey(r *http.Request) string { return r.URL.Query().Get("apikey") }

// use checks key and counts one request under it. A request whose
// context is done (the client left, or the deadline passed) counts
// nothing.
func (h *Handler) use(ctx context.Context, key string) (Account, error) {
	if key == "" {
		return Account{}, ErrBadKey
	}
	if err := ctx.Err(); err != nil {
		return Account{}, fmt.Errorf("newznab: key check: %w", context.Cause(ctx))
	}
	acct, err := h.cfg.Store.UseKey(ctx, HashKey(key), h.cfg.Now())
	if err == nil {
		*requestUser(ctx) = acct.Name
	}
	return acct, err
}

// failure says what an internal error of request r was: a deadline
// passing (Config.Timeout, or one of the store's own, such as a
// statement timeout, which wraps context.DeadlineExceeded), the client
// leaving, or a failure of the server. It logs it: the first as a
// warning, the second at debug level, the third as an error; each with
// the user the key belongs to (once known; never the key) and the shape
// of the query (queryShape).
func (h *Handler) failure(r *http.Request, what string, err error) (timedOut bool) {
	ctx := r.Context()
	attrs := []any{"path", r.URL.Path, "user", *requestUser(ctx), "query", queryShape(r), "err", err}
	switch {
	case errors.Is(context.Cause(ctx), errDeadline):
		h.cfg.Logger.WarnContext(ctx, what+": the deadline passed", append(attrs, "timeout", h.cfg.Timeout)...)
		return true
	case ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
		h.cfg.Logger.WarnContext(ctx, what+": the store's deadline passed", attrs...)
		return true
	case ctx.Err() != nil:
		h.cfg.Logger.DebugContext(ctx, what+": the client left", attrs...)
	default:
		h.cfg.Logger.ErrorContext(ctx, what, attrs...)
	}
	return false
}

// internal reports whether err is none of the errors a client caused:
// those are logged, and the client is told only that something failed.
func internal(err error) bool {
	for _, known := range []error{ErrBusy, ErrBadKey, ErrSuspended, ErrRequestLimit, ErrGrabLimit, edgeindex.ErrInvalid, edgeindex.ErrNotFound} {
		if errors.Is(err, known) {
			return false
		}
	}
	return true
}
