package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/edgeframe"
)

// The error codes of docs/api.md. Every error answer carries one in its body,
// {"error": "<one sentence>", "code": "<code>"}; clients decide by the code
// and the status, never by the sentence.
const (
	CodeUnauthorized     = "unauthorized"       // 401
	CodeForbidden        = "forbidden"          // 403
	CodeNotFound         = "not_found"          // 404
	CodeMethodNotAllowed = "method_not_allowed" // 405
	CodeInvalid          = "invalid"            // 400
	CodeLeaseLost        = "lease_lost"         // 409
	CodeConflict         = "conflict"           // 409: a gap, an overlap, a finish before the end, an older snapshot
	CodeTooLarge         = "too_large"          // 413
	CodeBusy             = "busy"               // 503 (or 429), with Retry-After
	CodeInternal         = "internal"           // 500
)

// ErrorBody is the body of every error answer.
type ErrorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

// The sentinels of the wire contract, tested with errors.Is. The domain's
// own are re-exported, so that a client needs only this package; they are
// the same values as package edgeindex's.
var (
	ErrInvalid   = edgeindex.ErrInvalid   // 400 invalid
	ErrNotFound  = edgeindex.ErrNotFound  // 404 not_found
	ErrLeaseLost = edgeindex.ErrLeaseLost // 409 lease_lost
	ErrConflict  = edgeindex.ErrConflict  // 409 conflict

	// ErrUnauthorized means a missing or unknown token (401).
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden means a node's token on an admin route (403). It is an
	// ErrUnauthorized too: either way the token was refused.
	ErrForbidden error = &kind{"forbidden", ErrUnauthorized}
	// ErrMethodNotAllowed means a route that does not take the method (405).
	ErrMethodNotAllowed = errors.New("method not allowed")
	// ErrTooLarge means a body over the server's limit (413), or, in a
	// client, an answer over the client's.
	ErrTooLarge = errors.New("too large")
	// ErrServer is any 5xx: the call may succeed if tried again.
	ErrServer = errors.New("server error")
	// ErrBusy means the server has no room for the call now (503 or 429
	// busy, with Retry-After). It is an ErrServer.
	ErrBusy error = &kind{"busy", ErrServer}
	// ErrInternal is a 500 whose detail only the server's log has. It is an
	// ErrServer.
	ErrInternal error = &kind{"internal error", ErrServer}

	// ErrNetwork means a call failed in transit: no connection, a reset, a
	// timeout. The clients' own; no status maps to it.
	ErrNetwork = errors.New("network error")
	// ErrProtocol means an answer the contract does not allow: a status it
	// does not name, a body that does not decode, a wrong media type.
	ErrProtocol = errors.New("protocol error")
)

// kind is a sentinel that is also a broader one.
type kind struct {
	msg    string
	parent error
}

func (k *kind) Error() string { return k.msg }
func (k *kind) Unwrap() error { return k.parent }

// table is the one table between errors and (status, code), in order.
// StatusOf, for the server, takes the first row whose err the error
// matches: a row that is also a broader one (forbidden, busy) comes before
// it. ErrorOf, for the clients, takes the first row of the answer's code
// that its status agrees with; an answer without a known code falls back on
// the row its status alone names (bare). No status alone means lease_lost:
// a 409 without the code is a conflict.
var table = []struct {
	err    error
	status int
	code   string
	bare   bool
}{
	{ErrForbidden, http.StatusForbidden, CodeForbidden, true},
	{ErrUnauthorized, http.StatusUnauthorized, CodeUnauthorized, true},
	{ErrMethodNotAllowed, http.StatusMethodNotAllowed, CodeMethodNotAllowed, true},
	{ErrBusy, http.StatusServiceUnavailable, CodeBusy, false},
	{ErrBusy, http.StatusTooManyRequests, CodeBusy, true},
	{ErrTooLarge, http.StatusRequestEntityTooLarge, CodeTooLarge, true},
	{edgeframe.ErrTooLarge, http.StatusRequestEntityTooLarge, CodeTooLarge, false},
	{ErrInvalid, http.StatusBadRequest, CodeInvalid, true},
	{edgeframe.ErrBadBatch, http.StatusBadRequest, CodeInvalid, false},
	{ErrNotFound, http.StatusNotFound, CodeNotFound, true},
	{ErrLeaseLost, http.StatusConflict, CodeLeaseLost, false},
	{ErrConflict, http.StatusConflict, CodeConflict, true},
	{ErrInternal, http.StatusInternalServerError, CodeInternal, false},
}

// StatusOf returns the status and code a server answers err with: the
// first row of the table err matches, else 500 internal.
func StatusOf(err error) (status int, code string) {
	for _, row := range table {
		if errors.Is(err, row.err) {
			return row.status, row.code
		}
	}
	return http.StatusInternalServerError, CodeInternal
}

// ErrorOf returns the sentinel an error answer (a status that is not 2xx)
// stands for, decided by its code and status: the code's row when the
// status agrees with it, else the row the status alone names, else
// ErrServer for any 5xx and ErrProtocol for anything else.
func ErrorOf(status int, code string) error {
	for _, row := range table {
		if row.code == code && row.status == status {
			return row.err
		}
	}
	for _, row := range table {
		if row.bare && row.status == status {
			return row.err
		}
	}
	if status >= 500 && status <= 599 {
		return ErrServer
	}
	return ErrProtocol
}

// Error is an error answer as a client reads it. It unwraps to the
// sentinel ErrorOf names for its status and code, so callers test it with
// errors.Is; Message is the server's sentence, for people.
type Error struct {
	Method, Path string // the call, as docs/api.md names its route
	Status       int
	Code         string // "" when the answer carried none
	// Message is the body's "error", or its text when it is not JSON.
	Message string
}

var _ error = (*Error)(nil)

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	return fmt.Sprintf("%s %s: %v (%d): %s", e.Method, e.Path, e.Unwrap(), e.Status, msg)
}

// Unwrap returns the sentinel of the answer's status and code.
func (e *Error) Unwrap() error { return ErrorOf(e.Status, e.Code) }

// maxErrorBody is the most read of an error answer, and maxMessage the most
// kept of its message (the JSON error's, or a body that is not JSON) and of
// its code.
const (
	maxErrorBody = 64 << 10
	maxMessage   = 512
)

// ReadError reads the error answer resp of the call method path (a status
// that is not 2xx) into an *Error. It reads at most 64 KiB of the body and
// does not close it; the Message and Code it keeps are at most 512 bytes
// each, the cut marked with "…", so a peer's answer cannot fill a log.
func ReadError(method, path string, resp *http.Response) *Error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e := &Error{Method: method, Path: path, Status: resp.StatusCode}
	var body ErrorBody
	if json.Unmarshal(raw, &body) == nil && (body.Error != "" || body.Code != "") {
		e.Message, e.Code = clip(body.Error), clip(body.Code)
		return e
	}
	e.Message = clip(strings.TrimSpace(strings.ToValidUTF8(string(raw), "\uFFFD")))
	return e
}

// clip cuts s to maxMessage bytes, on a rune's boundary, marking the cut.
func clip(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	return strings.ToValidUTF8(s[:maxMessage], "") + "…"
}

// Err returns the error of an entry of POST /v1/batches that was refused
// (Code set) as an *Error with the status its code has in the table, so
// callers test it with errors.Is as they test a call's; nil when it was
// stored or a duplicate.
func (r RangeBatchReply) Err() error {
	return entryErr("/v1/batches", r.Range, r.Code, r.Error)
}

// Err returns the error of a range refused in a call of many (Code set),
// as RangeBatchReply.Err does; nil when it succeeded.
func (r RangeReply) Err() error {
	return entryErr("/v1/finishes", r.Range, r.Code, r.Error)
}

// entryErr is the *Error of a refused entry of a call of many to path, or
// nil when the entry has neither code nor message.
func entryErr(path string, rangeID int64, code, msg string) error {
	if code == "" && msg == "" {
		return nil
	}
	e := &Error{Method: http.MethodPost, Path: path, Status: http.StatusConflict, Code: clip(code),
		Message: clip(fmt.Sprintf("range %d: %s", rangeID, msg))}
	for _, row := range table {
		if row.code == code {
			e.Status = row.status
			break
		}
	}
	return e
}

// Err returns the error of a range whose lease POST /v1/heartbeats did not
// renew (Code set), as RangeBatchReply.Err does; nil when it was renewed.
func (r HeartbeatReply) Err() error {
	return entryErr("/v1/heartbeats", r.Range, r.Code, r.Error)
}
