package coordinator

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/edgeindex/edgeindex/edgeframe"
	"github.com/edgeindex/edgeindex/lease"
)

// Errors of the HTTP layer itself.
var (
	errUnauthorized = errors.New("a known bearer token is required")
	errForbidden    = errors.New("this route needs the admin token, not a node's")
	errTooLarge     = errors.New("the body is over the limit")
	// errBusy means the coordinator refuses work it has no room for now;
	// the client tries again after Retry-After.
	errBusy = errors.New("the coordinator is busy")
)

// The error codes of API.md: clients decide by code and status.
const (
	CodeUnauthorized     = "unauthorized"
	CodeForbidden        = "forbidden"
	CodeNotFound         = "not_found"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeInvalid          = "invalid"
	CodeLeaseLost        = "lease_lost"
	CodeConflict         = "conflict"
	CodeTooLarge         = "too_large"
	CodeBusy             = "busy"
	CodeInternal         = "internal"
)

// retryAfter is the Retry-After, in seconds, of a busy answer.
const retryAfter = 1

// statuses is the one table from domain errors to HTTP statuses and codes,
// in order: the first match wins. Anything else is a 500 whose detail is
// only logged.
var statuses = []struct {
	err    error
	status int
	code   string
}{
	{errUnauthorized, http.StatusUnauthorized, CodeUnauthorized},
	{errForbidden, http.StatusForbidden, CodeForbidden},
	{errBusy, http.StatusServiceUnavailable, CodeBusy},
	{edgeframe.ErrTooLarge, http.StatusRequestEntityTooLarge, CodeTooLarge},
	{errTooLarge, http.StatusRequestEntityTooLarge, CodeTooLarge},
	{lease.ErrInvalid, http.StatusBadRequest, CodeInvalid},
	{edgeframe.ErrBadBatch, http.StatusBadRequest, CodeInvalid},
	{lease.ErrNotFound, http.StatusNotFound, CodeNotFound},
	{lease.ErrLeaseLost, http.StatusConflict, CodeLeaseLost},
	{lease.ErrConflict, http.StatusConflict, CodeConflict},
}

// StatusOf returns the HTTP status for err.
func StatusOf(err error) int {
	status, _ := statusCode(err)
	return status
}

// CodeOf returns the API.md error code for err.
func CodeOf(err error) string {
	_, code := statusCode(err)
	return code
}

func statusCode(err error) (int, string) {
	for _, s := range statuses {
		if errors.Is(err, s.err) {
			return s.status, s.code
		}
	}
	return http.StatusInternalServerError, CodeInternal
}

// fail answers err as JSON with its status and code.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, code := statusCode(err)
	msg := err.Error()
	if status == http.StatusInternalServerError {
		s.cfg.Logger.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		msg = "internal error; the coordinator's log has the detail"
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="edgeindex"`)
	}
	if code == CodeBusy {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	}
	s.writeError(w, status, code, msg)
}

// maxMessage bounds an error sentence: a sentence that quotes a huge input
// (a group name, a path) does not echo all of it.
const maxMessage = 500

func (s *Server) writeError(w http.ResponseWriter, status int, code, msg string) {
	if len(msg) > maxMessage {
		msg = strings.ToValidUTF8(msg[:maxMessage], "") + "…"
	}
	s.writeJSON(w, status, map[string]string{"error": msg, "code": code})
}

// writeJSON answers v, under a write deadline: a client that does not read
// its answer holds the handler at most WriteTimeout.
func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"encoding the answer failed","code":"internal"}`)
	}
	b = append(b, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	w.WriteHeader(status)
	w.Write(b)
}
