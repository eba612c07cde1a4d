package edge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/edgeframe"
	"github.com/edgeindex/edgeindex/internal/backoff"
	"github.com/edgeindex/edgeindex/lease"
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
	// Timeout bounds each attempt of every call but Stream, whose body lasts
	// as long as the range; 0 means 30 s, negative means none.
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

// notSent reports whether err is a failure to connect, before a byte of
// the request was sent: a grant may then go to another coordinator.
func notSent(err error) bool {
	if op, ok := errors.AsType[*net.OpError](err); ok && op.Op == "dial" {
		return true
	}
	_, dns := errors.AsType[*net.DNSError](err)
	return dns
}

// call is one API call.
type call struct {
	method   string
	path     string // the route, as docs/api.md names it, for URLs and errors
	query    url.Values
	token    int64
	hasToken bool
	body     []byte
	ctype    string
	accept   string
	retry    bool
	limit    int64 // the most read of a 2xx answer
	// optional says an empty 2xx body is fine: the contract names no body.
	optional bool
}

func (cl *call) name() string { return cl.method + " " + cl.path }

// Lease asks for a range of an unordered group (POST /v1/lease). It returns
// false, with no error, when there is nothing to do (204). It is not retried.
func (c *Client) Lease(ctx context.Context) (api.Lease, bool, error) {
	var l api.Lease
	ok, err := c.json(ctx, &call{method: http.MethodPost, path: "/v1/lease"}, &l)
	if err != nil || !ok {
		return api.Lease{}, false, err
	}
	if err := checkLease(l); err != nil {
		return api.Lease{}, false, fmt.Errorf("edge: POST /v1/lease: %w", err)
	}
	return l, true, nil
}

// Stream opens a range's stream of frames (GET /v1/ranges/{id}/stream). The
// caller reads it with Next and must Close it. Only the opening is retried;
// a stream cut later is reopened by the caller, from the range's next.
func (c *Client) Stream(ctx context.Context, rangeID, token int64) (*Stream, error) {
	return c.StreamFrom(ctx, rangeID, token, 0)
}

// StreamFrom is Stream, asking the coordinator to begin at the chunk that
// holds article from (GET /v1/ranges/{id}/stream?from=N) rather than at the
// range's next, so that a lane's new holder can hand the chunks an earlier
// holder stored to its handler again, to rebuild the window. from must lie
// between the range's start and its next; 0 or less sends no from, which
// is Stream. A coordinator that does not know from begins at next: the
// caller sees it in the first chunk frame.
func (c *Client) StreamFrom(ctx context.Context, rangeID, token, from int64) (*Stream, error) {
	cl := c.rangeCall(http.MethodGet, rangeID, "stream", token)
	if from > 0 {
		cl.query = url.Values{"from": {strconv.FormatInt(from, 10)}}
	}
	cl.accept = api.FramesType
	cl.retry = true
	var resp *http.Response
	err := c.retry(ctx, cl, func(base *url.URL) error {
		r, err := c.roundTrip(ctx, ctx, base, cl)
		if err != nil {
			return err
		}
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != api.FramesType {
			r.Body.Close()
			return fmt.Errorf("edge: %s: %w: the answer is %q, not %s", cl.name(), ErrProtocol, r.Header.Get("Content-Type"), api.FramesType)
		}
		resp = r
		return nil
	})
	if err != nil {
		return nil, err
	}
	fr, err := edgeframe.NewReader(resp.Body, edgeframe.Config{MaxFrame: c.cfg.MaxFrame})
	if err != nil {
		resp.Body.Close()
		return nil, err
	}
	return &Stream{r: fr, body: resp.Body}, nil
}

// Stream is an open stream of a range's frames.
type Stream struct {
	r    *edgeframe.Reader
	body io.ReadCloser
}

var _ io.Closer = (*Stream)(nil)

// Next returns the next frame, keepalives included, with the
// edgeframe.Reader's errors: io.EOF after the end frame, a
// *edgeframe.StreamError after an error frame, edgeframe.ErrCut or
// ErrTruncated (both io.ErrUnexpectedEOF) when the stream stopped, and
// ErrNetwork when reading the body failed in transit. A frame's Data is
// valid until the next call to Next.
func (s *Stream) Next() (edgeframe.Frame, error) {
	f, err := s.r.Next()
	if err != nil && !isFrameErr(err) {
		err = fmt.Errorf("edge: stream: %w: %w", ErrNetwork, err)
	}
	return f, err
}

// isFrameErr reports whether err is one of the edgeframe.Reader's own
// verdicts on the bytes, rather than a failure to read them.
func isFrameErr(err error) bool {
	for _, e := range []error{io.EOF, io.ErrUnexpectedEOF, edgeframe.ErrAborted, edgeframe.ErrUnknownType,
		edgeframe.ErrFrameTooLarge, edgeframe.ErrMalformed} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Complete reports whether the end frame has been read.
func (s *Stream) Complete() bool { return s.r.Complete() }

// Close closes the stream's body.
func (s *Stream) Close() error { return s.body.Close() }

// PostBatch posts a batch of results (POST /v1/ranges/{id}/batch). A batch
// already stored is answered with Result.Duplicate set and no error. The
// batch is checked with edgeframe.ValidateBatch first; a bad one gets an
// error wrapping edgeindex.ErrInvalid and is not sent. Nil Items are sent as an
// empty list.
func (c *Client) PostBatch(ctx context.Context, rangeID, token int64, b api.Batch) (api.BatchReply, error) {
	return c.postBatch(ctx, rangeID, token, b, nil)
}

// PostBatchThenLease is PostBatch asking (?then=lease) that, when the batch
// finishes its range (a final batch: Done), the answer carry the node's
// next lease (BatchReply.Lease), as Lease would grant it: a cycle of lease,
// batch and finish then costs one call. Lease is nil when there is no work,
// or the coordinator predates the query (it ignores it); the caller then
// calls Lease. A lease handed over is the caller's to work or release. Like
// every batch the call is retried; a retry whose first answer was lost
// leaves the range that answer handed over to expire, as a lost answer of
// Lease does.
func (c *Client) PostBatchThenLease(ctx context.Context, rangeID, token int64, b api.Batch) (api.BatchReply, error) {
	res, err := c.postBatch(ctx, rangeID, token, b, url.Values{"then": {api.ThenLease}})
	if err == nil && res.Lease != nil {
		if lerr := checkLease(*res.Lease); lerr != nil {
			// The batch is stored: only the lease is dropped; it expires.
			c.cfg.Logger.Warn("edge: dropping a lease handed over that cannot be worked", "err", lerr)
			res.Lease = nil
		}
	}
	return res, err
}

func (c *Client) postBatch(ctx context.Context, rangeID, token int64, b api.Batch, q url.Values) (api.BatchReply, error) {
	body, err := edgeframe.MarshalBatch(b)
	if err != nil {
		return api.BatchReply{}, fmt.Errorf("edge: batch for range %d: %w: %w", rangeID, edgeindex.ErrInvalid, err)
	}
	cl := c.rangeCall(http.MethodPost, rangeID, "batch", token)
	cl.body, cl.ctype, cl.retry, cl.query = body, "application/json", true, q
	var res api.BatchReply
	if _, err := c.json(ctx, cl, &res); err != nil {
		return api.BatchReply{}, err
	}
	return res, nil
}

// Heartbeat renews a range lease (POST /v1/ranges/{id}/heartbeat) and
// returns its new expiry.
func (c *Client) Heartbeat(ctx context.Context, rangeID, token int64) (time.Time, error) {
	cl := c.rangeCall(http.MethodPost, rangeID, "heartbeat", token)
	cl.retry = true
	var ans api.Expiry
	_, err := c.json(ctx, cl, &ans)
	return ans.ExpiresAt, err
}

// Finish marks a range done (POST /v1/ranges/{id}/finish). It fails with
// edgeindex.ErrConflict when the stored batches do not reach the range's end.
func (c *Client) Finish(ctx context.Context, rangeID, token int64) error {
	cl := c.rangeCall(http.MethodPost, rangeID, "finish", token)
	cl.retry = true
	_, err := c.json(ctx, cl, nil)
	return err
}

// Release gives a range back as pending (POST /v1/ranges/{id}/release).
func (c *Client) Release(ctx context.Context, rangeID, token int64) error {
	cl := c.rangeCall(http.MethodPost, rangeID, "release", token)
	cl.retry = true
	_, err := c.json(ctx, cl, nil)
	return err
}

// Corrupt reports that the chunk starting at from does not inflate or parse
// (POST /v1/ranges/{id}/corrupt). The range is no longer held afterwards; it
// returns the range's new state (pending, or failed at the coordinator's
// maximum attempts) and its attempts.
func (c *Client) Corrupt(ctx context.Context, rangeID, token, from int64) (api.State, int, error) {
	cl := c.rangeCall(http.MethodPost, rangeID, "corrupt", token)
	cl.body, _ = json.Marshal(api.CorruptRequest{From: &from})
	cl.ctype, cl.retry = "application/json", true
	var ans api.CorruptReply
	if _, err := c.json(ctx, cl, &ans); err != nil {
		return "", 0, err
	}
	return ans.State, ans.Attempts, nil
}

// LeaseLane asks for a lane of an ordered group (POST /v1/groups/lease). It
// returns false, with no error, when no lane has work (204). It is not
// retried.
func (c *Client) LeaseLane(ctx context.Context, lane api.Lane) (api.GroupLease, bool, error) {
	q, err := laneQuery(lane)
	if err != nil {
		return api.GroupLease{}, false, err
	}
	var gl api.GroupLease
	ok, err := c.json(ctx, &call{method: http.MethodPost, path: "/v1/groups/lease", query: q}, &gl)
	if err != nil || !ok {
		return api.GroupLease{}, false, err
	}
	return gl, true, nil
}

// Next asks for the lane's next range in article order
// (POST /v1/groups/{id}/next), as a range lease with its own token. It
// returns false, with no error, when no range is ready (204).
func (c *Client) Next(ctx context.Context, groupID int64, lane api.Lane, token int64) (api.Lease, bool, error) {
	cl, err := c.laneCall(http.MethodPost, groupID, "next", lane, token)
	if err != nil {
		return api.Lease{}, false, err
	}
	var l api.Lease
	ok, err := c.json(ctx, cl, &l)
	if err != nil || !ok {
		return api.Lease{}, false, err
	}
	if err := checkLease(l); err != nil {
		return api.Lease{}, false, fmt.Errorf("edge: %s: %w", cl.name(), err)
	}
	return l, true, nil
}

// HeartbeatLane renews a lane grant (POST /v1/groups/{id}/heartbeat). It
// returns the new expiry when the coordinator sends one, else the zero time.
func (c *Client) HeartbeatLane(ctx context.Context, groupID int64, lane api.Lane, token int64) (time.Time, error) {
	cl, err := c.laneCall(http.MethodPost, groupID, "heartbeat", lane, token)
	if err != nil {
		return time.Time{}, err
	}
	cl.optional = true
	var ans api.Expiry
	_, err = c.json(ctx, cl, &ans)
	return ans.ExpiresAt, err
}

// ReleaseLane frees a lane (POST /v1/groups/{id}/release); the range it was
// working on goes back to its next holder.
func (c *Client) ReleaseLane(ctx context.Context, groupID int64, lane api.Lane, token int64) error {
	cl, err := c.laneCall(http.MethodPost, groupID, "release", lane, token)
	if err != nil {
		return err
	}
	_, err = c.json(ctx, cl, nil)
	return err
}

// PutSnapshot stores the lane's window state taken at next
// (PUT /v1/groups/{id}/snapshot); gz must be gzip. It fails with
// edgeindex.ErrConflict when next is older than the stored snapshot's.
func (c *Client) PutSnapshot(ctx context.Context, groupID int64, lane api.Lane, token, next int64, gz []byte) (api.Snapshot, error) {
	cl, err := c.laneCall(http.MethodPut, groupID, "snapshot", lane, token)
	if err != nil {
		return api.Snapshot{}, err
	}
	if len(gz) < 2 || gz[0] != 0x1f || gz[1] != 0x8b {
		return api.Snapshot{}, fmt.Errorf("edge: %s: %w: the snapshot is not gzip", cl.name(), edgeindex.ErrInvalid)
	}
	cl.query.Set("next", strconv.FormatInt(next, 10))
	cl.body, cl.ctype = gz, api.SnapshotType
	var s api.Snapshot
	if _, err := c.json(ctx, cl, &s); err != nil {
		return api.Snapshot{}, err
	}
	return s, nil
}

// GetSnapshot reads the lane's snapshot (GET /v1/groups/{id}/snapshot): its
// gzip bytes and the next it was taken at. found is false, with no error,
// when the lane has none (404).
func (c *Client) GetSnapshot(ctx context.Context, groupID int64, lane api.Lane, token int64) (gz []byte, next int64, found bool, err error) {
	cl, err := c.laneCall(http.MethodGet, groupID, "snapshot", lane, token)
	if err != nil {
		return nil, 0, false, err
	}
	cl.accept, cl.limit = api.SnapshotType, c.cfg.MaxSnapshot
	var hdr http.Header
	err = c.retry(ctx, cl, func(base *url.URL) error {
		var err error
		_, hdr, gz, err = c.attempt(ctx, base, cl)
		return err
	})
	if errors.Is(err, edgeindex.ErrNotFound) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, err
	}
	next, perr := strconv.ParseInt(hdr.Get(api.HeaderSnapshotNext), 10, 64)
	if perr != nil {
		return nil, 0, false, fmt.Errorf("edge: %s: %w: %s %q is not an article number", cl.name(), ErrProtocol, api.HeaderSnapshotNext, hdr.Get(api.HeaderSnapshotNext))
	}
	return gz, next, true, nil
}

func (c *Client) rangeCall(method string, rangeID int64, verb string, token int64) *call {
	return &call{
		method: method, path: "/v1/ranges/" + strconv.FormatInt(rangeID, 10) + "/" + verb,
		token: token, hasToken: true,
	}
}

func (c *Client) laneCall(method string, groupID int64, verb string, lane api.Lane, token int64) (*call, error) {
	q, err := laneQuery(lane)
	if err != nil {
		return nil, err
	}
	return &call{
		method: method, path: "/v1/groups/" + strconv.FormatInt(groupID, 10) + "/" + verb, query: q,
		token: token, hasToken: true, retry: true,
	}, nil
}

func laneQuery(lane api.Lane) (url.Values, error) {
	if lane == "" {
		lane = lease.LaneHistory
	}
	if !lane.Valid() {
		return nil, fmt.Errorf("edge: %w: lane: history or tail, not %q", edgeindex.ErrInvalid, lane)
	}
	return url.Values{"lane": {string(lane)}}, nil
}

// checkLease refuses a granted lease that cannot be worked.
func checkLease(l api.Lease) error {
	r := l.Range
	if r.Start > r.End || r.Next < r.Start || r.Next > r.End+1 {
		return fmt.Errorf("%w: range %d has start %d, end %d and next %d", ErrProtocol, r.ID, r.Start, r.End, r.Next)
	}
	return nil
}

// json sends cl and decodes a 200 answer into v (when v is not nil). It
// reports false for a 204.
func (c *Client) json(ctx context.Context, cl *call, v any) (bool, error) {
	if cl.accept == "" {
		cl.accept = "application/json"
	}
	if cl.limit == 0 {
		cl.limit = maxAnswer
	}
	var status int
	var body []byte
	err := c.retry(ctx, cl, func(base *url.URL) error {
		var err error
		status, _, body, err = c.attempt(ctx, base, cl)
		return err
	})
	if err != nil {
		return false, err
	}
	if status == http.StatusNoContent {
		return false, nil
	}
	if v != nil && !(cl.optional && len(bytes.TrimSpace(body)) == 0) {
		if err := json.Unmarshal(body, v); err != nil {
			return false, fmt.Errorf("edge: %s: %w: the answer does not decode: %w", cl.name(), ErrProtocol, err)
		}
	}
	return true, nil
}

// retry runs try on the current coordinator until it succeeds or fails
// for good. A failure of the coordinator (a network error, a 5xx) moves
// the client to the next one; a call that may be retried is tried there at
// once, until every coordinator failed it in this round, then it sleeps a
// jittered exponential backoff, for Attempts rounds in all. A call that
// may not be retried (a grant) is tried on the next coordinator only when
// nothing of it was sent.
func (c *Client) retry(ctx context.Context, cl *call, try func(base *url.URL) error) error {
	for round, tried := 1, 0; ; {
		i, base := c.current()
		err := try(base)
		if err == nil || !c.failed(i, err) || ctx.Err() != nil {
			return err
		}
		tried++
		if !cl.retry {
			if !notSent(err) || tried >= len(c.bases) {
				return err
			}
			continue
		}
		if tried < len(c.bases) {
			c.cfg.Logger.Debug("edge: retrying on the next coordinator", "call", cl.name(), "err", err)
			continue
		}
		if round >= c.cfg.Attempts {
			return err
		}
		d := c.backoff(round)
		c.cfg.Logger.Debug("edge: retrying", "call", cl.name(), "attempt", round, "wait", d, "err", err)
		if serr := clock.Sleep(ctx, c.cfg.Clock, d); serr != nil {
			return fmt.Errorf("%w; gave up waiting to retry: %w", err, serr)
		}
		round, tried = round+1, 0
	}
}

// backoff returns the wait after the n-th failed attempt: Backoff doubled
// n-1 times, at most MaxBackoff, jittered to between half and all of it.
func (c *Client) backoff(n int) time.Duration {
	return backoff.Wait(n, c.cfg.Backoff, c.cfg.MaxBackoff, c.cfg.Rand())
}

// attempt sends cl once to base, within the attempt timeout, and reads the
// whole 2xx answer.
func (c *Client) attempt(ctx context.Context, base *url.URL, cl *call) (int, http.Header, []byte, error) {
	actx := ctx
	if c.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
	}
	resp, err := c.roundTrip(ctx, actx, base, cl)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, cl.limit+1))
	if err != nil {
		return 0, nil, nil, c.transportErr(ctx, cl, err)
	}
	if int64(len(body)) > cl.limit {
		return 0, nil, nil, fmt.Errorf("edge: %s: %w: the answer is over %d bytes", cl.name(), ErrTooLarge, cl.limit)
	}
	return resp.StatusCode, resp.Header, body, nil
}

// roundTrip sends cl to base under actx and returns a 2xx response, its
// body still to read, or the error its status maps to. ctx is the caller's
// context, which tells a cancelled call from a timed-out attempt.
func (c *Client) roundTrip(ctx, actx context.Context, base *url.URL, cl *call) (*http.Response, error) {
	u := base.JoinPath(cl.path)
	if cl.query != nil {
		u.RawQuery = cl.query.Encode()
	}
	var body io.Reader
	if cl.body != nil {
		body = bytes.NewReader(cl.body)
	}
	req, err := http.NewRequestWithContext(actx, cl.method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("edge: %s: %w", cl.name(), err)
	}
	req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	if cl.hasToken {
		req.Header.Set(api.HeaderLeaseToken, strconv.FormatInt(cl.token, 10))
	}
	if cl.ctype != "" {
		req.Header.Set("Content-Type", cl.ctype)
	}
	if cl.accept != "" {
		req.Header.Set("Accept", cl.accept)
	}
	resp, err := c.cfg.HTTP.Do(req)
	if err != nil {
		return nil, c.transportErr(ctx, cl, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, statusErr(cl, resp)
	}
	return resp, nil
}

// transportErr wraps a failure in transit: as the caller's cancellation when
// ctx is done, else as ErrNetwork.
func (c *Client) transportErr(ctx context.Context, cl *call, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("edge: %s: %w", cl.name(), context.Cause(ctx))
	}
	return fmt.Errorf("edge: %s: %w: %w", cl.name(), ErrNetwork, err)
}

// statusErr reads an error answer into an *HTTPError: its status, code
// and sentence, matching the sentinel api.ErrorOf names for them.
func statusErr(cl *call, resp *http.Response) error {
	return fmt.Errorf("edge: %w", api.ReadError(cl.method, cl.path, resp))
}
