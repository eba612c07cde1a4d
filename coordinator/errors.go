package coordinator

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/edgeindex/edgeindex/edgeframe"
	"github.com/edgeindex/edgeindex/lease"
)

// Errors of the HTTP layer itself.
var (
	errUnauthorized = errors.New("a known bearer token is required")
	errForbidden    = errors.New("this route needs the admin token, not a node's")
	errTooLarge     = errors.New("the body is over the limit")
)

// statuses is the one table from domain errors to HTTP statuses, in order:
// the first match wins. Anything else is a 500 whose detail is only logged.
var statuses = []struct {
	err    error
	status int
}{
	{errUnauthorized, http.StatusUnauthorized},
	{errForbidden, http.StatusForbidden},
	{edgeframe.ErrTooLarge, http.StatusRequestEntityTooLarge},
	{errTooLarge, http.StatusRequestEntityTooLarge},
	{lease.ErrInvalid, http.StatusBadRequest},
	{edgeframe.ErrBadBatch, http.StatusBadRequest},
	{lease.ErrNotFound, http.StatusNotFound},
	{lease.ErrLeaseLost, http.StatusConflict},
	{lease.ErrConflict, http.StatusConflict},
}

// StatusOf returns the HTTP status for err.
func StatusOf(err error) int {
	for _, s := range statuses {
		if errors.Is(err, s.err) {
			return s.status
		}
	}
	return http.StatusInternalServerError
}

// fail answers err as JSON with its status.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	status := StatusOf(err)
	msg := err.Error()
	if status == http.StatusInternalServerError {
		s.cfg.Logger.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		msg = "internal error; the coordinator's log has the detail"
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="edgeindex"`)
	}
	writeError(w, status, msg)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"encoding the answer failed"}`)
	}
	b = append(b, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}
