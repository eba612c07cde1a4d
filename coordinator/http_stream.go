package coordinator

import (
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// httpFrames is the FrameWriter of a stream's HTTP answer: it bounds every
// write to the worker by a deadline (a deadlineWriter), flushes with
// http.ResponseController (the deadline armed first), and sets
// Content-Length when the stream's length is known.
type httpFrames struct {
	*deadlineWriter
	flush     func() error
	setLength func(n int64)
}

var _ FrameWriter = (*httpFrames)(nil)

// newHTTPFrames returns the FrameWriter of w, each piece of a write
// bounded by timeout.
func newHTTPFrames(w http.ResponseWriter, timeout time.Duration) *httpFrames {
	rc := http.NewResponseController(w)
	return &httpFrames{deadlineWriter: newDeadlineWriter(w, rc.SetWriteDeadline, timeout), flush: rc.Flush,
		setLength: func(n int64) { w.Header().Set("Content-Length", strconv.FormatInt(n, 10)) }}
}

// Flush pushes the frames to the worker, under a fresh deadline.
func (f *httpFrames) Flush() error {
	f.Arm()
	return f.flush()
}

// SetLength sets the answer's Content-Length.
func (f *httpFrames) SetLength(n int64) { f.setLength(n) }

// Hurry gives every write from now on drainGrace at most.
func (f *httpFrames) Hurry() { f.Shorten(drainGrace) }

// writePiece is the most a deadlineWriter writes under one deadline.
const writePiece = 256 << 10

// drainGrace is the write deadline of a stream whose context ended.
const drainGrace = time.Second

// deadlineWriter bounds every write to a peer that may stop reading. Before
// each piece of at most writePiece bytes it sets the write deadline Timeout
// from now, so a peer that stops reading costs at most one Timeout, and one
// that reads slowly but steadily is never cut. ReadFrom keeps the
// underlying writer's ReadFrom (sendfile) for each piece. Errors from the
// deadline setter are ignored: a writer that takes no deadline cannot be
// bounded.
type deadlineWriter struct {
	w       io.Writer
	set     func(time.Time) error
	timeout time.Duration

	mu    sync.Mutex
	grace time.Duration // > 0 once Shorten was called
}

// newDeadlineWriter returns a deadlineWriter that writes to w and sets
// deadlines with set, timeout from the start of each piece.
func newDeadlineWriter(w io.Writer, set func(time.Time) error, timeout time.Duration) *deadlineWriter {
	return &deadlineWriter{w: w, set: set, timeout: timeout}
}

// Arm sets the deadline of the next write: Timeout from now, or the grace
// from now once Shorten was called.
func (d *deadlineWriter) Arm() {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.timeout
	if d.grace > 0 {
		t = min(t, d.grace)
	}
	d.set(time.Now().Add(t))
}

// Shorten makes the write in progress, and every later one, end within
// grace from now. It is safe to call from another goroutine.
func (d *deadlineWriter) Shorten(grace time.Duration) {
	d.mu.Lock()
	d.grace = max(grace, time.Nanosecond)
	d.mu.Unlock()
	d.Arm()
}

// Write writes p in pieces, each under its own deadline.
func (d *deadlineWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		n := min(len(p), writePiece)
		d.Arm()
		m, err := d.w.Write(p[:n])
		written += m
		if err != nil {
			return written, err
		}
		p = p[n:]
	}
	return written, nil
}

// ReadFrom copies r in pieces, each under its own deadline. A limited
// reader is unwrapped, so each piece is one *io.LimitedReader over the
// source and the kernel can still send a file.
func (d *deadlineWriter) ReadFrom(r io.Reader) (int64, error) {
	src, remain := r, int64(-1)
	if lr, ok := r.(*io.LimitedReader); ok {
		if lr.N <= 0 {
			return 0, nil
		}
		src, remain = lr.R, lr.N
		defer func() { lr.N = remain }()
	}
	var total int64
	for remain != 0 {
		n := int64(writePiece)
		if remain > 0 {
			n = min(n, remain)
		}
		d.Arm()
		m, err := io.Copy(d.w, &io.LimitedReader{R: src, N: n})
		total += m
		if remain > 0 {
			remain -= m
		}
		if err != nil || m < n {
			return total, err
		}
	}
	return total, nil
}
