package fleetcache

import (
	"errors"
)

// Sentinel errors. The package wraps them with %w; callers test them with
// errors.Is.
var (
	// ErrReadFailed wraps the error a reader returned. Nothing was kept.
	ErrReadFailed = errors.New("fleetcache: read failed")
	// ErrPanic means the reader panicked. The panic was recovered and the read
	// counts as failed: nothing was kept.
	ErrPanic = errors.New("fleetcache: the reader panicked")
	// ErrRejected means the read returned no error but the Good predicate
	// refused it, so it was not kept.
	ErrRejected = errors.New("fleetcache: the read was rejected as not good")
	// ErrTooStale means the last good read is older than Config.MaxStale and
	// the refresh that should have replaced it failed.
	ErrTooStale = errors.New("fleetcache: the last good read is too old and the refresh failed")
	// ErrBadRequest is answered by the Server with 400. Routes wrap it to say
	// what was wrong with the request.
	ErrBadRequest = errors.New("bad request")
	// ErrNotFound is answered by the Server with 404. Routes wrap it to say what
	// was not found.
	ErrNotFound = errors.New("not found")
	// ErrNotListening means Server.Serve was called before Server.Listen.
	ErrNotListening = errors.New("fleetcache: the server is not listening")
)

// StatusError is an error that the Server answers with its own HTTP status.
// Build one with WithStatus.
type StatusError struct {
	Status int
	Err    error
}

// WithStatus returns err marked to be answered with the HTTP status. The
// error's text becomes the body's "error" sentence.
func WithStatus(status int, err error) error {
	return &StatusError{Status: status, Err: err}
}

func (e *StatusError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *StatusError) Unwrap() error { return e.Err }
