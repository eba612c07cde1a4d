package edge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/internal/backoff"
)

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
	// newBody, when body is nil, makes the body of each attempt anew, and
	// says its length: a body encoded as it is sent, not held whole.
	newBody func() (io.Reader, int64, error)
	ctype   string
	accept  string
	retry   bool
	limit   int64 // the most read of a 2xx answer
	// optional says an empty 2xx body is fine: the contract names no body.
	optional bool
}

func (cl *call) name() string { return cl.method + " " + cl.path }

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
	var lend *lent
	size := int64(-1)
	switch {
	case cl.body != nil:
		body = bytes.NewReader(cl.body)
	case cl.newBody != nil:
		var err error
		lend = new(lent)
		if body, size, err = lend.open(cl.newBody); err != nil {
			return nil, fmt.Errorf("edge: %s: %w", cl.name(), err)
		}
	}
	req, err := http.NewRequestWithContext(actx, cl.method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("edge: %s: %w", cl.name(), err)
	}
	if lend != nil {
		req.ContentLength = size
		req.GetBody = func() (io.ReadCloser, error) {
			r, _, err := lend.open(cl.newBody)
			return io.NopCloser(r), err
		}
	}
	resp, err := c.do(ctx, req, cl)
	if lend != nil {
		if err != nil {
			lend.end()
		} else {
			resp.Body = endOnClose{resp.Body, lend}
		}
	}
	return resp, err
}

// do sends req, the request of cl, and returns a 2xx response, its body
// still to read, or the error its status maps to.
func (c *Client) do(ctx context.Context, req *http.Request, cl *call) (*http.Response, error) {
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

// lent is what one attempt lends the transport of a body newBody makes:
// readers of the caller's data, which stop reading it when the attempt
// ends (end). The transport may go on reading a request's body after it
// has the answer (a server may answer before it has read the body, as a
// coordinator answers a stale fence), and the caller may change its data
// once the call returns: the transport's reads then fail, and it gives up
// the connection, not sending what nobody reads.
type lent struct {
	mu    sync.Mutex
	ended bool
}

// errEnded is what a body lent to an attempt that ended reads.
var errEnded = errors.New("edge: the call of this body ended")

// open makes a body with newBody, lent until l ends.
func (l *lent) open(newBody func() (io.Reader, int64, error)) (io.Reader, int64, error) {
	r, size, err := newBody()
	if err != nil {
		return nil, 0, err
	}
	return lentReader{l: l, r: r}, size, nil
}

// end stops every reader of l, waiting for a read under way.
func (l *lent) end() {
	l.mu.Lock()
	l.ended = true
	l.mu.Unlock()
}

// lentReader reads r until its lent ends.
type lentReader struct {
	l *lent
	r io.Reader
}

func (r lentReader) Read(p []byte) (int, error) {
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	if r.l.ended {
		return 0, errEnded
	}
	return r.r.Read(p)
}

// endOnClose is a response's body that ends a lent when it is closed.
type endOnClose struct {
	io.ReadCloser
	l *lent
}

func (b endOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.l.end()
	return err
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
