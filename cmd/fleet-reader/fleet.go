package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/fleetcache"
)

// The statuses of a host in a fleet read.
const (
	StatusOK           = "ok"
	StatusUnreachable  = "unreachable"
	StatusError        = "error"
	StatusUnauthorized = "unauthorized"
)

// hostRead is one coordinator's part of a fleet read.
type hostRead struct {
	Host   string     `json:"host"`
	Status string     `json:"status"`
	Detail string     `json:"detail,omitempty"`
	Fleet  *api.Fleet `json:"fleet,omitempty"`
}

// fleetRead is one read of every coordinator. It is never changed once made.
type fleetRead struct {
	hosts []hostRead
	// hostsJSON is hosts encoded once, so that an answer costs one copy.
	hostsJSON []byte
	// history holds the samples of the last kept reads, this one included
	// when it is kept; rates are computed from it, and encoded, once.
	history   *rateHistory
	rates     *fleetRates
	ratesJSON []byte
}

// allOK is the cache's Good predicate: a read in which any host failed is
// never kept.
func (f *fleetRead) allOK() bool {
	for _, h := range f.hosts {
		if h.Status != StatusOK {
			return false
		}
	}
	return true
}

// readFleet reads every coordinator at once. It never fails: a host that
// fails has its status and detail, and the Good predicate refuses the read.
func (m *Main) readFleet(ctx context.Context, previous *fleetRead) (*fleetRead, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(m.base, cancel)()

	hosts := make([]hostRead, len(m.hosts))
	var wg sync.WaitGroup
	for i, h := range m.hosts {
		wg.Go(func() { hosts[i] = m.readHost(ctx, h) })
	}
	wg.Wait()
	var problems []string
	for _, h := range hosts {
		if h.Status != StatusOK {
			problems = append(problems, fmt.Sprintf("%s %s: %s", h.Host, h.Status, h.Detail))
		}
	}
	problem := strings.Join(problems, "; ")
	m.lastProblem.Store(&problem)
	b, err := json.Marshal(hosts)
	if err != nil {
		return nil, fmt.Errorf("encoding the fleet read: %w", err)
	}
	f := &fleetRead{hosts: hosts, hostsJSON: b}
	if err := f.addRates(previous, m.rateWindow, m.maxLanes); err != nil {
		return nil, err
	}
	return f, nil
}

// addRates computes f's rates from the last kept read. A read that will be
// kept (every host answered: the Good predicate) adds its sample to the
// history; one that will not be kept adds nothing and carries the last kept
// read's rates, so a failed read never makes a step.
func (f *fleetRead) addRates(previous *fleetRead, window, maxLanes int) error {
	var h *rateHistory
	if previous != nil {
		h = previous.history
	}
	if !f.allOK() && previous != nil {
		f.history, f.rates, f.ratesJSON = h, previous.rates, previous.ratesJSON
		return nil
	}
	if f.allOK() {
		h = h.with(newSample(f.hosts, maxLanes), window)
	}
	f.history = h
	f.rates = computeRates(h, window, maxLanes)
	var err error
	f.ratesJSON, err = f.rates.encode()
	return err
}

// readHost reads one coordinator's GET /v1/fleet.
func (m *Main) readHost(ctx context.Context, h host) hostRead {
	out := hostRead{Host: h.name}
	f, err := h.admin.Fleet(ctx)
	var ae *api.Error
	switch {
	case err == nil:
		out.Status, out.Fleet = StatusOK, &f
	case errors.Is(err, api.ErrUnauthorized):
		out.Status, out.Detail = StatusUnauthorized, "the coordinator refused the admin token: "+answerText(err)
	case errors.As(err, &ae):
		out.Status, out.Detail = StatusError, "the coordinator answered "+answerText(err)
	case errors.Is(err, api.ErrProtocol), errors.Is(err, api.ErrTooLarge):
		out.Status, out.Detail = StatusError, "the coordinator's answer is not a fleet: "+err.Error()
	default:
		out.Status, out.Detail = StatusUnreachable, describe(ctx, err, m.Timeout)
	}
	return out
}

// describe says why a coordinator could not be read.
func describe(ctx context.Context, err error, timeout time.Duration) string {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Sprintf("no answer within %s", timeout)
	}
	if errors.Is(err, context.Canceled) {
		return "the read was stopped: the reader is closing"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // drop the `Get "URL": ` prefix: the host is named already
	}
	return err.Error()
}

// answerText is "401: <the coordinator's error sentence>" for an error
// answer, or "401 Unauthorized" when it had no sentence.
func answerText(err error) string {
	var ae *api.Error
	if !errors.As(err, &ae) {
		return err.Error()
	}
	if ae.Message != "" {
		return fmt.Sprintf("%d: %s", ae.Status, ae.Message)
	}
	return fmt.Sprintf("%d %s", ae.Status, http.StatusText(ae.Status))
}

// fleetAnswer returns the fleet read to serve and whether it was kept. A
// read that the Good predicate refused is served to the request that waited
// for it, marked as not kept.
func (m *Main) fleetAnswer(r *http.Request) (a fleetcache.Answer[*fleetRead], kept bool, err error) {
	a, err = m.fleet.Get(r.Context())
	if err != nil {
		if errors.Is(err, fleetcache.ErrRejected) && a.Value != nil {
			return a, false, nil
		}
		return a, false, err
	}
	return a, true, nil
}

// handleFleet answers GET /v1/fleet.
func (m *Main) handleFleet(r *http.Request) (fleetcache.Reply, error) {
	a, kept, err := m.fleetAnswer(r)
	if err != nil {
		return fleetcache.Reply{}, err
	}
	reply := fleetcache.Reply{Body: a.Value.body(a.Meta)}
	if kept {
		reply.Meta = a.Meta // Cache-Control and Age; a read not kept is no-store
	}
	return reply, nil
}

// body encodes the answer {"polledAt", "hosts", "rates", "served"}: the
// hosts and the rates were encoded once, when read; only the times and ages
// are encoded here.
func (f *fleetRead) body(meta fleetcache.Meta) []byte {
	b := make([]byte, 0, len(f.hostsJSON)+len(f.ratesJSON)+330)
	b = append(b, `{"polledAt":`...)
	b = appendTime(b, meta.PolledAt)
	b = append(b, `,"hosts":`...)
	b = append(b, f.hostsJSON...)
	if f.ratesJSON != nil { // always, but for a read made by hand
		b = append(b, `,"rates":`...)
		b = append(b, f.ratesJSON...)
	}
	b = append(b, `,"served":`...)
	b = appendMeta(b, meta)
	return append(b, '}')
}

// appendMeta appends meta as encoding/json would encode fleetcache.Meta.
func appendMeta(b []byte, m fleetcache.Meta) []byte {
	b = append(b, `{"servedAt":`...)
	b = appendTime(b, m.ServedAt)
	b = append(b, `,"polledAt":`...)
	b = appendTime(b, m.PolledAt)
	b = append(b, `,"cacheAgeSeconds":`...)
	b = strconv.AppendFloat(b, m.CacheAgeSeconds, 'f', -1, 64)
	b = append(b, `,"keptForSeconds":`...)
	b = strconv.AppendFloat(b, m.KeptForSeconds, 'f', -1, 64)
	b = append(b, `,"fromCache":`...)
	b = strconv.AppendBool(b, m.FromCache)
	b = append(b, `,"stale":`...)
	b = strconv.AppendBool(b, m.Stale)
	b = append(b, `,"refreshing":`...)
	b = strconv.AppendBool(b, m.Refreshing)
	return append(b, '}')
}

// appendTime appends t as a JSON string, RFC 3339 as time.Time encodes it.
func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}
