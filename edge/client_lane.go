package edge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/lease"
)

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
