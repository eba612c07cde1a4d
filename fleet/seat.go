package fleet

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/fleetcache"
	"github.com/edgeindex/edgeindex/node"
)

// SeatKey names one seat read: a node of a host, and a page of its
// batches (the cursor of GET /v1/nodes/{name}; "" for the first).
type SeatKey struct {
	Host, Node, Cursor string
}

// Seat is one node's detail, as a host gave it.
type Seat struct {
	Host string          `json:"host"`
	Node *api.NodeDetail `json:"node"`
}

// SeatAnswer is a seat read as it was served.
type SeatAnswer struct {
	Seat *Seat
	// Meta is how the seat was served.
	Meta fleetcache.Meta
	// Kept is false when the fleet read it was made under was not kept:
	// the seat was read for this caller alone, and not kept either.
	Kept bool
}

// upstreamError is a seat read that failed, with the status to answer.
type upstreamError struct {
	status int
	msg    string
}

func (e *upstreamError) Error() string { return e.msg }

// Is makes a 404 match fleetcache.ErrNotFound and edgeindex.ErrNotFound,
// and a 400 edgeindex.ErrInvalid.
func (e *upstreamError) Is(target error) bool {
	switch e.status {
	case http.StatusNotFound:
		return target == fleetcache.ErrNotFound || target == edgeindex.ErrNotFound
	case http.StatusBadRequest:
		return target == edgeindex.ErrInvalid
	}
	return false
}

// Seat returns a node's detail from its coordinator's GET
// /v1/nodes/{name}. A seat belongs to the fleet read it was made under: it
// is kept 10 s (at most 64 of them) for callers under the same fleet read.
// Its errors wrap edgeindex.ErrInvalid for a malformed key or a cursor the
// coordinator refused, edgeindex.ErrNotFound for a host not read here or a
// node the coordinator does not know, and context.DeadlineExceeded when it
// does not answer within Config.Timeout.
func (c *Coordinators) Seat(ctx context.Context, k SeatKey) (SeatAnswer, error) {
	if err := c.checkSeatKey(k); err != nil {
		return SeatAnswer{}, err
	}
	// A fleet read that was not kept has generation 0, which no other fleet
	// read shares: the seat is read for this call alone, and not kept.
	fa, err := c.Fleet(ctx)
	if err != nil {
		return SeatAnswer{}, err
	}
	a, err := c.seats.Get(ctx, k, fa.Generation)
	if err != nil {
		return SeatAnswer{}, err
	}
	return SeatAnswer{Seat: a.Value, Meta: a.Meta, Kept: fa.Kept}, nil
}

// readSeat reads one node's detail from its host. Its errors are
// *upstreamError.
func (c *Coordinators) readSeat(ctx context.Context, k SeatKey) (*Seat, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(c.base, cancel)()

	d, err := c.byName[k.Host].admin.Node(ctx, k.Node, k.Cursor)
	if err != nil {
		return nil, seatError(ctx, k, err, c.cfg.Timeout)
	}
	return &Seat{Host: k.Host, Node: &d}, nil
}

// seatError is the *upstreamError of a seat read that failed, decided by
// the error's sentinel (the answer's status and code).
func seatError(ctx context.Context, k SeatKey, err error, timeout time.Duration) *upstreamError {
	var ae *api.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &upstreamError{http.StatusGatewayTimeout, fmt.Sprintf("coordinator %s did not answer within %s", k.Host, timeout)}
	case errors.Is(err, api.ErrNotFound):
		return &upstreamError{http.StatusNotFound, fmt.Sprintf("coordinator %s has no node %q: %s", k.Host, k.Node, answerText(err))}
	case errors.Is(err, api.ErrUnauthorized):
		return &upstreamError{http.StatusBadGateway, fmt.Sprintf("coordinator %s refused the admin token: %s", k.Host, answerText(err))}
	case errors.Is(err, api.ErrInvalid):
		return &upstreamError{http.StatusBadRequest, fmt.Sprintf("coordinator %s refused the request: %s", k.Host, answerText(err))}
	case errors.As(err, &ae):
		return &upstreamError{http.StatusBadGateway, fmt.Sprintf("coordinator %s answered %s", k.Host, answerText(err))}
	case errors.Is(err, api.ErrProtocol), errors.Is(err, api.ErrTooLarge):
		return &upstreamError{http.StatusBadGateway, fmt.Sprintf("coordinator %s: the answer is not a node's detail: %s", k.Host, err.Error())}
	}
	return &upstreamError{http.StatusBadGateway, fmt.Sprintf("coordinator %s is unreachable: %s", k.Host, describe(ctx, err, timeout))}
}

// parseSeatKey reads ?key=HOST/NODE[&cursor=C]. Its errors wrap
// fleetcache.ErrBadRequest (400) and edgeindex.ErrInvalid.
func parseSeatKey(q url.Values) (SeatKey, error) {
	key := q.Get("key")
	if key == "" {
		return SeatKey{}, badRequestf("key is missing: ask for /v1/seat?key=HOST/NODE")
	}
	hostName, nodeName, ok := strings.Cut(key, "/")
	if !ok || hostName == "" || nodeName == "" {
		return SeatKey{}, badRequestf("key %q is not HOST/NODE", key)
	}
	return SeatKey{Host: hostName, Node: nodeName, Cursor: q.Get("cursor")}, nil
}

// checkSeatKey checks that k names a node by a valid name on a host read
// here. Its errors wrap fleetcache.ErrBadRequest (400) and
// edgeindex.ErrInvalid, or fleetcache.ErrNotFound (404) and
// edgeindex.ErrNotFound.
func (c *Coordinators) checkSeatKey(k SeatKey) error {
	if k.Host == "" || k.Node == "" {
		return badRequestf("key %q is not HOST/NODE", k.Host+"/"+k.Node)
	}
	if err := node.ValidName(k.Node); err != nil {
		return badRequestf("key %q: %s", k.Host+"/"+k.Node, err.Error())
	}
	if _, known := c.byName[k.Host]; !known {
		return notFoundf("host %q is not read here; the hosts are %s", k.Host, strings.Join(c.Hosts(), ", "))
	}
	return nil
}

// handleSeat answers GET /v1/seat.
func (c *Coordinators) handleSeat(r *http.Request) (fleetcache.Reply, error) {
	k, err := parseSeatKey(r.URL.Query())
	if err != nil {
		return fleetcache.Reply{}, err
	}
	a, err := c.Seat(r.Context(), k)
	if err != nil {
		var ue *upstreamError
		if errors.As(err, &ue) {
			return fleetcache.Reply{}, fleetcache.WithStatus(ue.status, ue)
		}
		return fleetcache.Reply{}, err
	}
	reply := fleetcache.Reply{
		Value: struct {
			*Seat
			Served fleetcache.Meta `json:"served"`
		}{a.Seat, a.Meta},
	}
	if a.Kept {
		reply.Meta = a.Meta // Cache-Control and Age; a seat not kept is no-store
	}
	return reply, nil
}
