package fleet

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
	"github.com/edgeindex/edgeindex/grouplease"
)

// The statuses of a host in a fleet read.
const (
	StatusOK           = "ok"
	StatusUnreachable  = "unreachable"
	StatusError        = "error"
	StatusUnauthorized = "unauthorized"
)

// Host is one coordinator's part of a fleet read: its status (StatusOK,
// StatusUnreachable, StatusUnauthorized or StatusError), why it failed, and
// its fleet when it answered.
type Host struct {
	Host   string     `json:"host"`
	Status string     `json:"status"`
	Detail string     `json:"detail,omitempty"`
	Fleet  *api.Fleet `json:"fleet,omitempty"`
}

// Read is one read of every coordinator, with the rates of the kept reads.
// It is never changed once made, and every caller shares it: read it, do
// not change what it holds.
type Read struct {
	hosts []Host
	// hostsJSON is hosts encoded once, so that an answer costs one copy.
	hostsJSON []byte
	// history holds the samples of the last kept reads, this one included
	// when it is kept; rates are computed from it, and encoded, once.
	history   *rateHistory
	rates     *Rates
	ratesJSON []byte
}

// Hosts returns every coordinator's part of the read, in Config's order.
func (f *Read) Hosts() []Host { return f.hosts }

// Rates returns the rates of the last kept reads, this one included when it
// was kept; never nil.
func (f *Read) Rates() *Rates { return f.rates }

// allOK is the cache's Good predicate: a read in which any host failed is
// never kept.
func (f *Read) allOK() bool {
	for _, h := range f.hosts {
		if h.Status != StatusOK {
			return false
		}
	}
	return true
}

// readFleet reads every coordinator at once. It never fails: a host that
// fails has its status and detail, and the Good predicate refuses the read.
func (c *Coordinators) readFleet(ctx context.Context, previous *Read) (*Read, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(c.base, cancel)()

	hosts := make([]Host, len(c.hosts))
	var wg sync.WaitGroup
	for i, h := range c.hosts {
		wg.Go(func() { hosts[i] = c.readHost(ctx, h) })
	}
	wg.Wait()
	var problems []string
	for _, h := range hosts {
		if h.Status != StatusOK {
			problems = append(problems, fmt.Sprintf("%s %s: %s", h.Host, h.Status, h.Detail))
		}
	}
	problem := strings.Join(problems, "; ")
	c.lastProblem.Store(&problem)
	b, err := json.Marshal(hosts)
	if err != nil {
		return nil, fmt.Errorf("encoding the fleet read: %w", err)
	}
	f := &Read{hosts: hosts, hostsJSON: b}
	if err := f.addRates(previous, c.cfg.RateReads, c.cfg.MaxLanes); err != nil {
		return nil, err
	}
	return f, nil
}

// addRates computes f's rates from the last kept read. A read that will be
// kept (every host answered: the Good predicate) adds its sample to the
// history; one that will not be kept adds nothing and carries the last kept
// read's rates, so a failed read never makes a step.
func (f *Read) addRates(previous *Read, window, maxLanes int) error {
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
func (c *Coordinators) readHost(ctx context.Context, h host) Host {
	out := Host{Host: h.name}
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
		out.Status, out.Detail = StatusUnreachable, describe(ctx, err, c.cfg.Timeout)
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
// answer, or "401 Unauthorized" when it had no sentence. The sentence is
// a peer's text: it is shown on one line, cut to grouplease.MaxPlanError
// bytes (grouplease.PeerText).
func answerText(err error) string {
	var ae *api.Error
	if !errors.As(err, &ae) {
		return err.Error()
	}
	if ae.Message != "" {
		return fmt.Sprintf("%d: %s", ae.Status, grouplease.PeerText(ae.Message, grouplease.MaxPlanError))
	}
	return fmt.Sprintf("%d %s", ae.Status, http.StatusText(ae.Status))
}

// Answer is a fleet read as it was served.
type Answer struct {
	Read *Read
	// Meta is how the read was served: its times and age, and whether it
	// came from the cache, is stale, and is being refreshed.
	Meta fleetcache.Meta
	// Generation numbers the kept reads 1, 2, 3...; it is 0 for a read
	// that was not kept.
	Generation uint64
	// Kept is false for a read in which a coordinator failed: it was made
	// for this caller, who waited for it, and was not kept; the next call
	// reads again.
	Kept bool
}

// Fleet returns the fleet read to serve. The first call waits for the first
// read; later ones are answered at once from the last kept read, current
// within Config.Keep and stale after it, when exactly one background read
// starts. A read in which a coordinator failed is never kept: it is
// answered to the call that waited for it, with Kept false.
func (c *Coordinators) Fleet(ctx context.Context) (Answer, error) {
	a, err := c.fleet.Get(ctx)
	out := Answer{Read: a.Value, Meta: a.Meta, Generation: a.Generation}
	if err != nil {
		if errors.Is(err, fleetcache.ErrRejected) && a.Value != nil {
			return out, nil
		}
		return out, err
	}
	out.Kept = true
	return out, nil
}

// handleFleet answers GET /v1/fleet.
func (c *Coordinators) handleFleet(r *http.Request) (fleetcache.Reply, error) {
	a, err := c.Fleet(r.Context())
	if err != nil {
		return fleetcache.Reply{}, err
	}
	reply := fleetcache.Reply{Body: a.Read.body(a.Meta)}
	if a.Kept {
		reply.Meta = a.Meta // Cache-Control and Age; a read not kept is no-store
	}
	return reply, nil
}

// body encodes the answer {"polledAt", "hosts", "rates", "served"}: the
// hosts and the rates were encoded once, when read; only the times and ages
// are encoded here.
func (f *Read) body(meta fleetcache.Meta) []byte {
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
