package edge

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/clock"
)

// Defaults of Config.
const (
	DefaultTimeout     = 30 * time.Second
	DefaultBackoff     = 250 * time.Millisecond
	DefaultMaxBackoff  = 30 * time.Second
	DefaultAttempts    = 5
	DefaultMaxSnapshot = 64 << 20
)

// maxAnswer is the most the client reads of a JSON answer.
const maxAnswer = 1 << 20

// Config configures a Client. Its zero value means the defaults, except
// BaseURL and Token, which are required.
type Config struct {
	// BaseURL is the coordinator's address, such as "http://127.0.0.1:7070".
	// A path in it prefixes every route.
	BaseURL string
	// Failover lists more coordinators of the same database, tried in turn
	// after BaseURL (and round again) when one fails: see Client. Empty: the
	// client talks to BaseURL alone.
	Failover []string
	// Token is the node token, sent as "Authorization: Bearer <token>".
	Token string
	// HTTP sends the requests. Nil means a client of its own without an
	// overall timeout, since a stream may last as long as its range.
	HTTP *http.Client
	// Logger logs retries. Nil means no logging.
	Logger *slog.Logger
	// MaxFrame is the largest stream frame accepted; 0 means
	// edgeframe.DefaultMaxFrame (64 MiB). A worker reports a chunk whose
	// frame is larger corrupt, which counts an attempt of its range: set
	// it no lower than the coordinator's chunk bound (its NNTP source's
	// maxchunk, 16 MiB by default), or healthy ranges fail.
	MaxFrame int
	// MaxSnapshot is the largest snapshot GetSnapshot reads; 0 means 64 MiB.
	MaxSnapshot int64
	// Timeout bounds each attempt of every call; of a Stream only until its
	// answer's headers, as its body lasts as long as the range. 0 means
	// 30 s, negative means none.
	Timeout time.Duration
	// Backoff is the wait before the first retry; it doubles with every
	// further one, up to MaxBackoff. 0 means 250 ms and 30 s.
	Backoff, MaxBackoff time.Duration
	// Attempts is how many times an idempotent call is tried in all before
	// its error is returned; 0 means 5, and 1 means no retry.
	Attempts int
	// Clock times the waits between retries, and is the Worker's unless its
	// WorkerConfig names another. Nil means clock.Real. Tests inject one.
	Clock clock.Clock
	// Rand returns a number in [0, 1) that jitters each wait: a wait is
	// between half and all of its backoff. Nil means math/rand/v2.
	Rand func() float64
}

// withDefaults returns c with every zero field that has a default set to
// it, and a MaxBackoff below Backoff raised to it.
func (c Config) withDefaults() Config {
	if c.HTTP == nil {
		c.HTTP = &http.Client{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.MaxSnapshot == 0 {
		c.MaxSnapshot = DefaultMaxSnapshot
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Backoff == 0 {
		c.Backoff = DefaultBackoff
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	if c.MaxBackoff < c.Backoff {
		c.MaxBackoff = c.Backoff
	}
	if c.Attempts == 0 {
		c.Attempts = DefaultAttempts
	}
	if c.Clock == nil {
		c.Clock = clock.Real
	}
	if c.Rand == nil {
		c.Rand = rand.Float64
	}
	return c
}

// validate checks a Config that has its defaults.
func (c Config) validate() error {
	if c.BaseURL == "" {
		return edgeindex.Invalidf("edge: BaseURL is required")
	}
	for _, u := range append([]string{c.BaseURL}, c.Failover...) {
		if _, err := api.ParseBaseURL(u); err != nil {
			return fmt.Errorf("edge: %w", err)
		}
	}
	if c.Token == "" {
		return edgeindex.Invalidf("edge: Token is required")
	}
	switch {
	case c.MaxFrame < 0:
		return edgeindex.Invalidf("edge: MaxFrame %d is negative", c.MaxFrame)
	case c.MaxSnapshot < 0:
		return edgeindex.Invalidf("edge: MaxSnapshot %d is negative", c.MaxSnapshot)
	case c.Backoff < 0, c.MaxBackoff < 0:
		return edgeindex.Invalidf("edge: Backoff and MaxBackoff must not be negative")
	case c.Attempts < 0:
		return edgeindex.Invalidf("edge: Attempts %d is negative", c.Attempts)
	}
	return nil
}

// Client calls the coordinator's node API, one method per call of docs/api.md.
//
// Error answers come back as *HTTPError, decided by their status and code
// with the api package's table (api.ErrorOf): edgeindex.ErrLeaseLost (409
// lease_lost), edgeindex.ErrConflict (any other 409), edgeindex.ErrNotFound (404),
// edgeindex.ErrInvalid (400), ErrUnauthorized (401, 403), ErrTooLarge (413) and
// ErrServer (5xx) under errors.Is.
//
// Idempotent calls are retried on ErrServer and ErrNetwork, with exponential
// backoff and jitter, never on a 4xx. They are every call but the two grants
// (Lease and LeaseLane): a grant whose answer was lost would leave a lease
// nobody works until it expires, so the caller decides when to ask again.
// The fenced calls are safe to retry: a retried PostBatch that had been
// stored is answered as a duplicate, which counts as success, and a retried
// Finish, Release or Corrupt whose first attempt took effect gets a lost
// lease, as the lease is then no longer held.
//
// With Failover, the client talks to one coordinator at a time, the
// current one, and moves to the next in the list (BaseURL, then Failover,
// then BaseURL again) when a call to it meets a network error or a 5xx:
// leases live in the database, so any coordinator serves any call. A
// retried call goes to the next coordinator at once, and waits its backoff
// only after every coordinator failed it once; Attempts counts those
// rounds. A grant is not retried on another coordinator either, unless
// nothing of it was sent (the connection was refused: a coordinator that
// is down): then it asks the next one at once. A stream that a dying
// coordinator cut is reopened by the caller (the Worker does), from the
// range's next, on the coordinator the client has moved to.
//
// A Client is safe for concurrent use.
type Client struct {
	cfg   Config
	bases []*url.URL    // BaseURL, then Failover
	cur   atomic.Uint64 // the index of the current coordinator in bases
	// single is set once a coordinator answered a many-range call 404: it
	// predates them, and the client uses the single-range calls.
	single atomic.Bool
	// jsonBatches is set once a coordinator refused a binary batch body
	// that it then stored as JSON: it predates the binary layout.
	jsonBatches atomic.Bool
}

// NewClient returns a Client, or an error that is edgeindex.ErrInvalid.
func NewClient(cfg Config) (*Client, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg}
	for _, raw := range append([]string{cfg.BaseURL}, cfg.Failover...) {
		base, err := api.ParseBaseURL(raw)
		if err != nil {
			return nil, err
		}
		c.bases = append(c.bases, base)
	}
	return c, nil
}

// Coordinator is the base URL of the coordinator the client talks to now.
func (c *Client) Coordinator() string {
	_, base := c.current()
	return base.String()
}

// current returns the current coordinator and its index.
func (c *Client) current() (uint64, *url.URL) {
	i := c.cur.Load()
	return i, c.bases[i%uint64(len(c.bases))]
}

// failed moves the client off coordinator i, to the next one, when err
// says that coordinator failed (a network error or a 5xx) and the client
// has not moved since; it reports whether err was such a failure.
func (c *Client) failed(i uint64, err error) bool {
	if !retryable(err) {
		return false
	}
	if len(c.bases) > 1 && c.cur.CompareAndSwap(i, i+1) {
		c.cfg.Logger.Warn("edge: moving to the next coordinator", "from", c.bases[i%uint64(len(c.bases))].String(),
			"to", c.bases[(i+1)%uint64(len(c.bases))].String(), "err", err)
	}
	return true
}
