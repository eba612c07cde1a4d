package edge

import (
	"errors"

	"github.com/edgeindex/edgeindex/api"
)

// Sentinel errors of the client, tested with errors.Is. They are the api
// package's: a call that got an error answer returns an *HTTPError, which
// matches the sentinel api.ErrorOf names for the answer's status and code:
// edgeindex.ErrLeaseLost (409 lease_lost), edgeindex.ErrConflict (any other 409),
// edgeindex.ErrNotFound (404), edgeindex.ErrInvalid (400), ErrUnauthorized (401,
// 403), ErrTooLarge (413), ErrServer (5xx) and ErrProtocol (a status the
// contract does not name). Nothing is told apart by the server's sentence.
var (
	// ErrUnauthorized means the coordinator refused the node token (401 or 403).
	ErrUnauthorized = api.ErrUnauthorized
	// ErrTooLarge means the coordinator refused a body as too large (413), or
	// an answer was over the client's limit.
	ErrTooLarge = api.ErrTooLarge
	// ErrServer means the coordinator answered 5xx. Idempotent calls retry it.
	ErrServer = api.ErrServer
	// ErrNetwork means the request or its answer failed in transit: no
	// connection, a reset, a timeout. Idempotent calls retry it.
	ErrNetwork = api.ErrNetwork
	// ErrProtocol means the coordinator answered something the wire contract
	// does not allow: an unexpected status, a body that does not decode, a
	// stream of the wrong media type, a chunk outside the range.
	ErrProtocol = api.ErrProtocol
)

// HTTPError is an error answer from the coordinator: the call, the status,
// the code and the server's sentence (api.Error). It unwraps to the
// sentinel of its status and code, so callers test it with errors.Is; its
// text carries the server's own sentence.
type HTTPError = api.Error

// retryable reports whether a failed idempotent call may be tried again:
// only a 5xx or a failure in transit, never a 4xx.
func retryable(err error) bool {
	return errors.Is(err, ErrServer) || errors.Is(err, ErrNetwork)
}
