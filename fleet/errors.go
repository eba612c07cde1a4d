package fleet

import (
	"fmt"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/fleetcache"
)

// kindError is an error of the caller's, named in both vocabularies: the
// root package's for a caller of Coordinators, fleetcache's for the status
// the Server answers it with.
type kindError struct {
	err  error // the sentence, wrapping the fleetcache sentinel
	kind error // the edgeindex sentinel
}

func (e kindError) Error() string   { return e.err.Error() }
func (e kindError) Unwrap() []error { return []error{e.err, e.kind} }

// badRequestf is a malformed request: "bad request: ...", answered 400.
func badRequestf(format string, args ...any) error {
	return kindError{fmt.Errorf("%w: %s", fleetcache.ErrBadRequest, fmt.Sprintf(format, args...)), edgeindex.ErrInvalid}
}

// notFoundf is a request for what is not read here: "not found: ...",
// answered 404.
func notFoundf(format string, args ...any) error {
	return kindError{fmt.Errorf("%w: %s", fleetcache.ErrNotFound, fmt.Sprintf(format, args...)), edgeindex.ErrNotFound}
}
