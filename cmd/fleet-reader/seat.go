package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/fleetcache"
	"github.com/edgeindex/edgeindex/node"
)

// seatKey names one seat read: a node of a host, and a page of its batches.
type seatKey struct {
	host, node, cursor string
}

// seatRead is one node's detail, as a host gave it.
type seatRead struct {
	Host string          `json:"host"`
	Node *api.NodeDetail `json:"node"`
}

// upstreamError is a seat read that failed, with the status to answer.
type upstreamError struct {
	status int
	msg    string
}

func (e *upstreamError) Error() string { return e.msg }

// Is makes a 404 match fleetcache.ErrNotFound.
func (e *upstreamError) Is(target error) bool {
	return target == fleetcache.ErrNotFound && e.status == http.StatusNotFound
}

// readSeat reads one node's detail from its host. Its errors are
// *upstreamError.
func (m *Main) readSeat(ctx context.Context, k seatKey) (*seatRead, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(m.base, cancel)()

	d, err := m.byName[k.host].admin.Node(ctx, k.node, k.cursor)
	if err != nil {
		return nil, seatError(ctx, k, err, m.Timeout)
	}
	return &seatRead{Host: k.host, Node: &d}, nil
}

// seatError is the *upstreamError of a seat read that failed, decided by
// the error's sentinel (the answer's status and code).
func seatError(ctx context.Context, k seatKey, err error, timeout time.Duration) *upstreamError {
	var ae *api.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &upstreamError{http.StatusGatewayTimeout, fmt.Sprintf("coordinator %s did not answer within %s", k.host, timeout)}
	case errors.Is(err, api.ErrNotFound):
		return &upstreamError{http.StatusNotFound, fmt.Sprintf("coordinator %s has no node %q: %s", k.host, k.node, answerText(err))}
	case errors.Is(err, api.ErrUnauthorized):
		return &upstreamError{http.StatusBadGateway, fmt.Sprintf("coordinator %s refused the admin token: %s", k.host, answerText(err))}
	case errors.Is(err, api.ErrInvalid):
		return &upstreamError{http.StatusBadRequest, fmt.Sprintf("coordinator %s refused the request: %s", k.host, answerText(err))}
	case errors.As(err, &ae):
		return &upstreamError{http.StatusBadGateway, fmt.Sprintf("coordinator %s answered %s", k.host, answerText(err))}
	case errors.Is(err, api.ErrProtocol), errors.Is(err, api.ErrTooLarge):
		return &upstreamError{http.StatusBadGateway, fmt.Sprintf("coordinator %s: the answer is not a node's detail: %s", k.host, err.Error())}
	}
	return &upstreamError{http.StatusBadGateway, fmt.Sprintf("coordinator %s is unreachable: %s", k.host, describe(ctx, err, timeout))}
}

// parseSeatKey reads ?key=HOST/NODE[&cursor=C]. Its errors wrap
// fleetcache.ErrBadRequest (400) or fleetcache.ErrNotFound (404).
func (m *Main) parseSeatKey(q url.Values) (seatKey, error) {
	key := q.Get("key")
	if key == "" {
		return seatKey{}, fmt.Errorf("%w: key is missing: ask for /v1/seat?key=HOST/NODE", fleetcache.ErrBadRequest)
	}
	hostName, nodeName, ok := strings.Cut(key, "/")
	if !ok || hostName == "" || nodeName == "" {
		return seatKey{}, fmt.Errorf("%w: key %q is not HOST/NODE", fleetcache.ErrBadRequest, key)
	}
	if err := node.ValidName(nodeName); err != nil {
		return seatKey{}, fmt.Errorf("%w: key %q: %s", fleetcache.ErrBadRequest, key, err.Error())
	}
	if _, known := m.byName[hostName]; !known {
		names := make([]string, len(m.hosts))
		for i, h := range m.hosts {
			names[i] = h.name
		}
		return seatKey{}, fmt.Errorf("%w: host %q is not read here; the hosts are %s",
			fleetcache.ErrNotFound, hostName, strings.Join(names, ", "))
	}
	return seatKey{host: hostName, node: nodeName, cursor: q.Get("cursor")}, nil
}

// handleSeat answers GET /v1/seat.
func (m *Main) handleSeat(r *http.Request) (fleetcache.Reply, error) {
	k, err := m.parseSeatKey(r.URL.Query())
	if err != nil {
		return fleetcache.Reply{}, err
	}
	// A seat belongs to the fleet read it was made under. A fleet read that
	// was not kept has generation 0, which no other fleet read shares: the
	// seat is read for this request alone, and not kept.
	fa, kept, err := m.fleetAnswer(r)
	if err != nil {
		return fleetcache.Reply{}, err
	}
	a, err := m.seats.Get(r.Context(), k, fa.Generation)
	if err != nil {
		var ue *upstreamError
		if errors.As(err, &ue) {
			return fleetcache.Reply{}, fleetcache.WithStatus(ue.status, ue)
		}
		return fleetcache.Reply{}, err
	}
	reply := fleetcache.Reply{
		Value: struct {
			*seatRead
			Served fleetcache.Meta `json:"served"`
		}{a.Value, a.Meta},
	}
	if kept {
		reply.Meta = a.Meta // Cache-Control and Age; a seat not kept is no-store
	}
	return reply, nil
}
