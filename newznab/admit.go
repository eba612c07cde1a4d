package newznab

import (
	"errors"
	"net/http"
	"sync"
	"time"
)

// DefaultMaxRequests and DefaultMaxRequestsPerKey are the bounds on the
// requests that read the store at once when Config.MaxRequests and
// Config.MaxRequestsPerKey are 0.
const (
	DefaultMaxRequests       = 16
	DefaultMaxRequestsPerKey = 2
)

// ErrBusy is the error of a request refused because too many requests,
// overall or under its key, are being answered at once
// (Config.MaxRequests, Config.MaxRequestsPerKey). It counts nothing; the
// API answers it as code 500, "Request limit reached", the page as a 503,
// both with Retry-After.
var ErrBusy = errors.New("newznab: too many requests at once")

// retryBusy is the Retry-After, in seconds, of an answer to ErrBusy.
const retryBusy = "1"

// gate admits requests up to a bound overall and per key. It never
// queues: a request over a bound is refused, so a user who sends
// a hundred slow searches holds only as many slots as the bound, and the
// others' wait for nothing that grows.
type gate struct {
	mu          sync.Mutex
	max, perKey int
	n           int
	keys        map[string]int // in flight per key
}

func newGate(max, perKey int) *gate {
	return &gate{max: max, perKey: perKey, keys: make(map[string]int)}
}

// enter admits one request under key, or returns ErrBusy.
// The caller calls leave once it is done.
func (g *gate) enter(key string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n >= g.max || g.keys[key] >= g.perKey {
		return ErrBusy
	}
	g.n++
	g.keys[key]++
	return nil
}

func (g *gate) leave(key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n--
	if g.keys[key]--; g.keys[key] <= 0 {
		delete(g.keys, key)
	}
}

// admit admits r under key through the Handler's gate, and returns the
// function that lets it go. A refusal waits Config.BusyDelay (or until
// the client leaves), holding no slot, and sets Retry-After on w. The
// key is held only while its requests run.
func (h *Handler) admit(w http.ResponseWriter, r *http.Request, key string) (leave func(), err error) {
	if err := h.gate.enter(key); err != nil {
		if h.cfg.BusyDelay > 0 {
			t := time.NewTimer(h.cfg.BusyDelay)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
			}
		}
		w.Header().Set("Retry-After", retryBusy)
		return nil, err
	}
	return func() { h.gate.leave(key) }, nil
}
