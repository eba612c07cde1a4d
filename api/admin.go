package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/grouplease"
)

// DefaultMaxAnswer is the most an AdminClient reads of one answer.
const DefaultMaxAnswer = 32 << 20

// The queries of the admin API's lists: the stores' own filters.
type (
	// RangesQuery selects GET /v1/ranges?group=&state=&after=&limit=.
	RangesQuery = grouplease.RangeFilter
	// ResultsQuery selects GET /v1/results?group=&after=&limit=.
	ResultsQuery = batch.Query
)

// AdminConfig configures an AdminClient. BaseURL and Token are required;
// the zero value of every other field means its default.
type AdminConfig struct {
	// BaseURL is the coordinator's address, such as "http://127.0.0.1:7070".
	// A path in it prefixes every route.
	BaseURL string
	// Token is the admin token, sent as "Authorization: Bearer <token>".
	Token string
	// HTTP sends the requests. Nil means a client of its own that follows
	// no redirect, so the token goes to no other place.
	HTTP *http.Client
	// MaxAnswer is the most read of one answer; 0 means 32 MiB.
	MaxAnswer int64
}

// AdminClient calls the coordinator's admin API: the fleet, a node's
// detail, the ranges, the results feed, a lane's snapshot reset, and
// /readyz. Each method makes one request, never retried: a reader that
// polls asks again itself.
//
// An error answer comes back as an *Error, which matches the sentinels of
// this package under errors.Is (ErrUnauthorized for 401 and 403,
// ErrNotFound, ErrInvalid, ErrServer...). A failure in transit matches
// ErrNetwork, or is the context's error once ctx is done; an answer that
// does not decode, or a fleet of another schema, matches ErrProtocol; an
// answer over MaxAnswer matches ErrTooLarge.
//
// An AdminClient is safe for concurrent use.
type AdminClient struct {
	cfg  AdminConfig
	base *url.URL
}

// withDefaults returns c with every zero field that has a default set to it.
func (c AdminConfig) withDefaults() AdminConfig {
	if c.HTTP == nil {
		c.HTTP = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if c.MaxAnswer == 0 {
		c.MaxAnswer = DefaultMaxAnswer
	}
	return c
}

// validate checks an AdminConfig that has its defaults.
func (c AdminConfig) validate() error {
	if _, err := ParseBaseURL(c.BaseURL); err != nil {
		return fmt.Errorf("api: %w", err)
	}
	if c.Token == "" {
		return edgeindex.Invalidf("api: the admin Token is required")
	}
	if c.MaxAnswer < 0 {
		return edgeindex.Invalidf("api: MaxAnswer %d is negative", c.MaxAnswer)
	}
	return nil
}

// ParseBaseURL parses a client's BaseURL: an http or https URL with a
// host, whose path (if any) prefixes every route. Its error is ErrInvalid.
// The edge client and the AdminClient both use it.
func ParseBaseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, edgeindex.Invalidf("BaseURL %q is not an http or https URL", raw)
	}
	return u, nil
}

// NewAdminClient checks cfg and returns an AdminClient, or an error that
// is ErrInvalid.
func NewAdminClient(cfg AdminConfig) (*AdminClient, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	u, err := ParseBaseURL(cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	return &AdminClient{cfg: cfg, base: u}, nil
}

// Fleet reads GET /v1/fleet. An answer of another schema than FleetSchema
// is an ErrProtocol.
func (c *AdminClient) Fleet(ctx context.Context) (Fleet, error) {
	var f Fleet
	if err := c.do(ctx, http.MethodGet, "/v1/fleet", nil, &f); err != nil {
		return Fleet{}, err
	}
	if f.Schema != FleetSchema {
		return Fleet{}, fmt.Errorf("GET /v1/fleet: %w: the answer has schema %q, not %q", ErrProtocol, f.Schema, FleetSchema)
	}
	return f, nil
}

// Node reads GET /v1/nodes/{name}: the node's detail, with the page of its
// batches that cursor names ("" for the newest). An unknown node is an
// ErrNotFound.
func (c *AdminClient) Node(ctx context.Context, name, cursor string) (NodeDetail, error) {
	var q url.Values
	if cursor != "" {
		q = url.Values{"cursor": {cursor}}
	}
	var d NodeDetail
	if err := c.do(ctx, http.MethodGet, "/v1/nodes/"+url.PathEscape(name), q, &d); err != nil {
		return NodeDetail{}, err
	}
	if d.Name == "" {
		return NodeDetail{}, fmt.Errorf("GET /v1/nodes/{name}: %w: the answer has no name", ErrProtocol)
	}
	return d, nil
}

// Ranges reads a page of GET /v1/ranges.
func (c *AdminClient) Ranges(ctx context.Context, rq RangesQuery) (RangesPage, error) {
	q := url.Values{}
	setQuery(q, "group", rq.Group)
	setQuery(q, "state", string(rq.State))
	if rq.After != 0 {
		q.Set("after", strconv.FormatInt(rq.After, 10))
	}
	if rq.Limit != 0 {
		q.Set("limit", strconv.Itoa(rq.Limit))
	}
	var p RangesPage
	err := c.do(ctx, http.MethodGet, "/v1/ranges", q, &p)
	return p, err
}

// Results reads a page of the results feed, GET /v1/results. Poll with the
// page's Next as the next query's After.
func (c *AdminClient) Results(ctx context.Context, rq ResultsQuery) (ResultsPage, error) {
	q := url.Values{}
	setQuery(q, "group", rq.Group)
	setQuery(q, "after", rq.After)
	if rq.Limit != 0 {
		q.Set("limit", strconv.Itoa(rq.Limit))
	}
	var p ResultsPage
	err := c.do(ctx, http.MethodGet, "/v1/results", q, &p)
	return p, err
}

// ResetSnapshot forgets a lane's snapshot, whoever holds the lane
// (DELETE /v1/groups/{id}/snapshot?lane=).
func (c *AdminClient) ResetSnapshot(ctx context.Context, groupID int64, lane Lane) (SnapshotReset, error) {
	var r SnapshotReset
	err := c.do(ctx, http.MethodDelete, "/v1/groups/"+strconv.FormatInt(groupID, 10)+"/snapshot",
		url.Values{"lane": {string(lane)}}, &r)
	return r, err
}

// Ready asks GET /readyz: nil when the coordinator's database answers, an
// *Error matching ErrBusy when it does not.
func (c *AdminClient) Ready(ctx context.Context) error {
	var ok OK
	return c.do(ctx, http.MethodGet, "/readyz", nil, &ok)
}

func setQuery(q url.Values, name, value string) {
	if value != "" {
		q.Set(name, value)
	}
}

// do makes one call and decodes its 2xx answer into v.
func (c *AdminClient) do(ctx context.Context, method, path string, q url.Values, v any) error {
	u := c.base.JoinPath(path)
	if len(q) > 0 {
		u.RawQuery = q.Encode()
	}
	name := method + " " + path
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	req.Header.Set("Accept", "application/json")
	resp, err := c.cfg.HTTP.Do(req)
	if err != nil {
		return transportErr(ctx, name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return ReadError(method, path, resp)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.cfg.MaxAnswer+1))
	if err != nil {
		return transportErr(ctx, name, err)
	}
	if int64(len(body)) > c.cfg.MaxAnswer {
		return fmt.Errorf("%s: %w: the answer is over %d bytes", name, ErrTooLarge, c.cfg.MaxAnswer)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s: %w: the answer does not decode: %w", name, ErrProtocol, err)
	}
	return nil
}

// transportErr wraps a failure in transit: as the context's error once ctx
// is done, else as ErrNetwork. Both keep err, so a deadline is still
// context.DeadlineExceeded under errors.Is.
func transportErr(ctx context.Context, name string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w: %w", name, context.Cause(ctx), err)
	}
	return fmt.Errorf("%s: %w: %w", name, ErrNetwork, err)
}
