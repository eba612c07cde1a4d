package coordinator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/lease"
)

func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	token, ok := strings.CutPrefix(h, "Bearer ")
	return strings.TrimSpace(token), ok && strings.TrimSpace(token) != ""
}

// pathID reads the {id} path value.
func pathID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		return 0, edgeindex.Invalidf("id: a positive integer, not %q", r.PathValue("id"))
	}
	return id, nil
}

// fence reads the Lease-Token header for node n.
func fence(r *http.Request, n string) (lease.Fence, error) {
	raw := r.Header.Get(api.HeaderLeaseToken)
	t, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || t < 1 {
		return lease.Fence{}, edgeindex.Invalidf("Lease-Token: a positive integer is required, not %q", raw)
	}
	return lease.Fence{Node: n, Token: t}, nil
}

func lane(r *http.Request) (lease.Lane, error) {
	return lease.ParseLane(r.URL.Query().Get("lane"))
}

// queryInt reads an optional integer query parameter.
func queryInt(r *http.Request, name string) (int64, bool, error) {
	raw := r.URL.Query().Get(name)
	if raw == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return 0, false, edgeindex.Invalidf("%s: an integer, not %q", name, raw)
	}
	return n, true, nil
}

// decodeJSON strictly reads a small JSON body into v: one object, nothing
// but white space after it, the whole body at most limit bytes.
func decodeJSON(r *http.Request, limit int64, v any) error {
	body := http.MaxBytesReader(nil, r.Body, limit)
	tooBig := func(err error) bool {
		var e *http.MaxBytesError
		return errors.As(err, &e)
	}
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if tooBig(err) {
			return fmt.Errorf("%w: at most %d bytes", api.ErrTooLarge, limit)
		}
		if errors.Is(err, io.EOF) {
			return edgeindex.Invalidf("body: a JSON object is required")
		}
		return edgeindex.Invalidf("body: %v", err)
	}
	// The rest of the body, read to its end: a body over the limit is too
	// large even when its object came first.
	rest, err := io.ReadAll(io.MultiReader(dec.Buffered(), body))
	if tooBig(err) {
		return fmt.Errorf("%w: at most %d bytes", api.ErrTooLarge, limit)
	}
	if err != nil {
		return edgeindex.Invalidf("body: %v", err)
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return edgeindex.Invalidf("body: one JSON object, nothing after it")
	}
	return nil
}
