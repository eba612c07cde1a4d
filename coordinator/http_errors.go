package coordinator

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/lease"
)

// Errors of the HTTP layer itself.
var (
	errUnauthorized = fmt.Errorf("%w: a known bearer token is required", api.ErrUnauthorized)
	errForbidden    = fmt.Errorf("%w: this route needs the admin token, not a node's", api.ErrForbidden)
)

// retryAfter is the Retry-After, in seconds, of a busy answer.
const retryAfter = 1

// fail answers err as JSON with the status and code api.StatusOf gives it.
// A 500's detail goes to the log only.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, code := api.StatusOf(err)
	msg := err.Error()
	if status == http.StatusInternalServerError {
		s.cfg.Logger.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		msg = "internal error; the coordinator's log has the detail"
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="edgeindex"`)
	}
	if code == api.CodeBusy {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	}
	s.writeError(w, status, code, msg)
}

// maxMessage bounds an error sentence: a sentence that quotes a huge input
// (a group name, a path) does not echo all of it.
const maxMessage = 500

func (s *Server) writeError(w http.ResponseWriter, status int, code, msg string) {
	s.writeJSON(w, status, api.ErrorBody{Error: clipMessage(msg), Code: code})
}

// clipMessage cuts an error sentence to maxMessage bytes, on a rune.
func clipMessage(msg string) string {
	if len(msg) > maxMessage {
		msg = strings.ToValidUTF8(msg[:maxMessage], "") + "…"
	}
	return msg
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

// reply answers a call's result: 204 for lease.ErrNoWork, err for any other
// error, else v as JSON.
func (s *Server) reply(w http.ResponseWriter, v any, err error) error {
	if errors.Is(err, lease.ErrNoWork) {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, v)
	return nil
}

// okReply is the answer of calls that return nothing.
var okReply = api.OK{OK: true}
