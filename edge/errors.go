package edge

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/edgeindex/edgeindex/lease"
)

// Sentinel errors of the client, tested with errors.Is. A call that got an
// error status returns an *HTTPError, which also matches the lease package's
// sentinels (lease.ErrLeaseLost, ErrConflict, ErrNotFound, ErrInvalid) by the
// table in statusKind.
var (
	// ErrUnauthorized means the coordinator refused the node token (401 or 403).
	ErrUnauthorized = errors.New("unauthorized")
	// ErrTooLarge means the coordinator refused a body as too large (413), or
	// an answer was over the client's limit.
	ErrTooLarge = errors.New("too large")
	// ErrServer means the coordinator answered 5xx. Idempotent calls retry it.
	ErrServer = errors.New("server error")
	// ErrNetwork means the request or its answer failed in transit: no
	// connection, a reset, a timeout. Idempotent calls retry it.
	ErrNetwork = errors.New("network error")
	// ErrProtocol means the coordinator answered something the wire contract
	// does not allow: an unexpected status, a body that does not decode, a
	// stream of the wrong media type, a chunk outside the range.
	ErrProtocol = errors.New("protocol error")
	// ErrInvalidConfig means a Config or WorkerConfig field is out of range.
	ErrInvalidConfig = errors.New("invalid config")
)

// HTTPError is an error status from the coordinator. It unwraps to the
// sentinel its status maps to (see statusKind), so callers test it with
// errors.Is, and its text carries the server's own sentence.
type HTTPError struct {
	Method, Path string
	Status       int
	// Message is the "error" field of the JSON body, or the body's text.
	Message string
	// Kind is the sentinel the status maps to.
	Kind error
}

var _ error = (*HTTPError)(nil)

func (e *HTTPError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	return fmt.Sprintf("edge: %s %s: %v (%d): %s", e.Method, e.Path, e.Kind, e.Status, msg)
}

// Unwrap returns the sentinel the status maps to.
func (e *HTTPError) Unwrap() error { return e.Kind }

// statusKind is the one table from HTTP statuses back to domain errors, the
// inverse of the coordinator's. A 409 is a lost lease only when the server's
// sentence says so (API.md: 409 {"error": "... lease lost ..."}); any other
// 409 (a batch gap, finishing early, an older snapshot) is a conflict.
func statusKind(status int, msg string) error {
	switch {
	case status == http.StatusConflict:
		if strings.Contains(strings.ToLower(msg), "lease lost") {
			return lease.ErrLeaseLost
		}
		return lease.ErrConflict
	case status == http.StatusNotFound:
		return lease.ErrNotFound
	case status == http.StatusBadRequest:
		return lease.ErrInvalid
	case status == http.StatusUnauthorized, status == http.StatusForbidden:
		return ErrUnauthorized
	case status == http.StatusRequestEntityTooLarge:
		return ErrTooLarge
	case status >= 500 && status <= 599:
		return ErrServer
	}
	return ErrProtocol
}

// retryable reports whether a failed idempotent call may be tried again:
// only a 5xx or a failure in transit, never a 4xx.
func retryable(err error) bool {
	return errors.Is(err, ErrServer) || errors.Is(err, ErrNetwork)
}
