package edge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/edgeframe"
)

// Stream opens a range's stream of frames (GET /v1/ranges/{id}/stream). The
// caller reads it with Next and must Close it. Only the opening is retried;
// a stream cut later is reopened by the caller, from the range's next.
func (c *Client) Stream(ctx context.Context, rangeID, token int64) (*Stream, error) {
	return c.StreamFrom(ctx, rangeID, token, 0)
}

// StreamFrom is Stream, asking the coordinator to begin at the chunk that
// holds article from (GET /v1/ranges/{id}/stream?from=N) rather than at the
// range's next, so that a lane's new holder can hand the chunks an earlier
// holder stored to its handler again, to rebuild the window. from must lie
// between the range's start and its next; 0 or less sends no from, which
// is Stream. A coordinator that does not know from begins at next: the
// caller sees it in the first chunk frame.
func (c *Client) StreamFrom(ctx context.Context, rangeID, token, from int64) (*Stream, error) {
	cl := c.rangeCall(http.MethodGet, rangeID, "stream", token)
	if from > 0 {
		cl.query = url.Values{"from": {strconv.FormatInt(from, 10)}}
	}
	cl.accept = api.FramesType
	cl.retry = true
	var resp *http.Response
	var stop context.CancelFunc
	err := c.retry(ctx, cl, func(base *url.URL) error {
		// The answer's headers come within Timeout, or the attempt is
		// cut: a coordinator that takes the request and never answers
		// would hold the worker, whose heartbeats keep its lease, for good.
		// The body, which lasts, is not bounded so.
		actx, cancel := context.WithCancel(ctx)
		if c.cfg.Timeout > 0 {
			timer := time.AfterFunc(c.cfg.Timeout, cancel)
			defer timer.Stop()
		}
		r, err := c.roundTrip(ctx, actx, base, cl)
		if err != nil {
			cancel()
			return err
		}
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != api.FramesType {
			r.Body.Close()
			cancel()
			return fmt.Errorf("edge: %s: %w: the answer is %q, not %s", cl.name(), ErrProtocol, r.Header.Get("Content-Type"), api.FramesType)
		}
		resp, stop = r, cancel
		return nil
	})
	if err != nil {
		return nil, err
	}
	fr, err := edgeframe.NewReader(resp.Body, edgeframe.Config{MaxFrame: c.cfg.MaxFrame})
	if err != nil {
		resp.Body.Close()
		stop()
		return nil, err
	}
	return &Stream{r: fr, body: resp.Body, stop: stop}, nil
}

// Stream is an open stream of a range's frames.
type Stream struct {
	r    *edgeframe.Reader
	body io.ReadCloser
	stop context.CancelFunc // ends the request's context, at Close
}

var _ io.Closer = (*Stream)(nil)

// Next returns the next frame, keepalives included, with the
// edgeframe.Reader's errors: io.EOF after the end frame, a
// *edgeframe.StreamError after an error frame, edgeframe.ErrCut or
// ErrTruncated (both io.ErrUnexpectedEOF) when the stream stopped, and
// ErrNetwork when reading the body failed in transit. A frame's Data is
// valid until the next call to Next.
func (s *Stream) Next() (edgeframe.Frame, error) {
	f, err := s.r.Next()
	if err != nil && !isFrameErr(err) {
		err = fmt.Errorf("edge: stream: %w: %w", ErrNetwork, err)
	}
	return f, err
}

// isFrameErr reports whether err is one of the edgeframe.Reader's own
// verdicts on the bytes, rather than a failure to read them.
func isFrameErr(err error) bool {
	for _, e := range []error{io.EOF, io.ErrUnexpectedEOF, edgeframe.ErrAborted, edgeframe.ErrUnknownType,
		edgeframe.ErrFrameTooLarge, edgeframe.ErrMalformed} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Complete reports whether the end frame has been read.
func (s *Stream) Complete() bool { return s.r.Complete() }

// Close closes the stream's body.
func (s *Stream) Close() error {
	err := s.body.Close()
	s.stop()
	return err
}
