package edgeindex

import (
	"errors"
	"fmt"
)

// The error vocabulary. Every package wraps these with %w; callers test them
// with errors.Is, and package api maps each to one HTTP status and code.
var (
	// ErrInvalid means an argument was malformed: from > to, an unknown lane,
	// a size of zero or below, a body that does not decode. Nothing was
	// written.
	ErrInvalid = errors.New("invalid argument")
	// ErrNotFound means no such range (or group, node, user, release) exists.
	ErrNotFound = errors.New("not found")
	// ErrConflict means the request is well formed but contradicts the stored
	// state: a range that overlaps another, finishing before next > end, an
	// older snapshot.
	ErrConflict = errors.New("conflict")
	// ErrLeaseLost means the caller's fencing token is not the current one,
	// the caller is not the holder, or the range is no longer leased. Nothing
	// was written.
	ErrLeaseLost = errors.New("lease lost")
	// ErrFinished comes only with ErrLeaseLost, when the range is done and
	// its last grant was the caller's token: the caller's own grant finished
	// it. A retried final batch is answered as done on it.
	ErrFinished = errors.New("finished under this token")
)

// Invalidf returns an error that is ErrInvalid (for errors.Is) and whose
// text is only the sentence saying what was wrong, fit for a 400 answer.
func Invalidf(format string, args ...any) error {
	return invalidError(fmt.Sprintf(format, args...))
}

type invalidError string

func (e invalidError) Error() string        { return string(e) }
func (e invalidError) Is(target error) bool { return target == ErrInvalid }

// FinishedLost returns lost, a lease-lost error for a range the fence's own
// grant finished, so that it is also ErrFinished; its text is lost's.
func FinishedLost(lost error) error { return finishedError{lost} }

type finishedError struct{ error }

func (e finishedError) Unwrap() error        { return e.error }
func (e finishedError) Is(target error) bool { return target == ErrFinished }
