package fleetcache

import (
	"errors"
	"fmt"
	"time"
)

// ErrInvalid is the error of a configuration or an argument the package
// refuses; every such error wraps it, for errors.Is.
var ErrInvalid = errors.New("fleetcache: invalid")

// invalidf returns an error that is ErrInvalid (for errors.Is) and whose
// text is only the sentence saying what is wrong.
func invalidf(format string, args ...any) error {
	return invalidError(fmt.Sprintf(format, args...))
}

type invalidError string

func (e invalidError) Error() string        { return string(e) }
func (e invalidError) Is(target error) bool { return target == ErrInvalid }

// Clock tells the time. Any clock with a Now method will do (edgeindex's
// clock.Clock is one); the package depends on no other of edgeindex.
type Clock interface {
	Now() time.Time
}

// realClock is the wall clock, the default.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// RealClock is the wall clock, which a nil Config.Clock means.
var RealClock Clock = realClock{}
