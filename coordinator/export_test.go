package coordinator

import (
	"io"
	"net/http"
	"time"
)

// The HTTP layer's stream writing, for the stream's tests.
const (
	WritePiece = writePiece
	DrainGrace = drainGrace
)

// NewDeadlineWriter is newDeadlineWriter.
var NewDeadlineWriter = newDeadlineWriter

// Frames is the HTTP layer's FrameWriter over w: each piece of a write
// under a deadline set with set (nil: none) timeout from its start, the
// stream's length told to setLength (nil: ignored).
func Frames(w io.Writer, set func(time.Time) error, timeout time.Duration, setLength func(int64)) FrameWriter {
	if set == nil {
		set = func(time.Time) error { return nil }
	}
	if setLength == nil {
		setLength = func(int64) {}
	}
	return &httpFrames{deadlineWriter: newDeadlineWriter(w, set, timeout), flush: func() error { return nil }, setLength: setLength}
}

// HTTPFrames is the FrameWriter of a stream's HTTP answer.
func HTTPFrames(w http.ResponseWriter, timeout time.Duration) FrameWriter {
	return newHTTPFrames(w, timeout)
}

// Patterns lists every pattern registered on s's mux.
func Patterns(s *Server) []string { return s.patterns }

// BatchBytesHeld is what batch bodies hold of s's batch budget now.
func BatchBytesHeld(s *Server) int64 {
	s.batches.mu.Lock()
	defer s.batches.mu.Unlock()
	return s.batches.used
}
