package edgeframe

import (
	"fmt"
	"io"
	"math"
)

// Writer encodes frames onto an io.Writer. Each method writes one whole frame
// or returns an error; after a write error every later call returns that
// error, because the stream then holds a partial frame.
//
// A chunk is written as two writes, its 21-byte header and then the caller's
// data, so the data is never copied by the Writer. Writer does not buffer and
// does not flush: an HTTP handler flushes each frame itself (for example with
// http.ResponseController). A Writer is not safe for concurrent use.
type Writer struct {
	w   io.Writer
	err error
	hdr []byte // scratch for headers, HeaderLen+ChunkPrefixLen bytes of capacity
}

// NewWriter returns a Writer that writes frames to w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: w, hdr: make([]byte, 0, HeaderLen+ChunkPrefixLen)}
}

// Keepalive writes a keepalive frame.
func (w *Writer) Keepalive() error { return w.header(TypeKeepalive) }

// End writes the end frame: the last frame of a complete stream.
func (w *Writer) End() error { return w.header(TypeEnd) }

// Chunk writes a chunk frame for the inclusive span [from, to] carrying data.
// It returns ErrMalformed, writing nothing, when from > to.
func (w *Writer) Chunk(from, to int64, data []byte) error {
	if w.err != nil {
		return w.err
	}
	if err := checkChunk(from, to, len(data)); err != nil {
		return err
	}
	if err := w.write(appendChunkHeader(w.hdr[:0], from, to, len(data))); err != nil {
		return err
	}
	if len(data) == 0 {
		return nil
	}
	return w.write(data)
}

// Error writes an error frame carrying msg; invalid UTF-8 in msg is replaced
// by U+FFFD. It is the last frame of a stream whose sender gives up.
func (w *Writer) Error(msg string) error {
	return w.WriteFrame(Frame{Type: TypeError, Message: msg})
}

// WriteFrame writes f, encoded as AppendFrame encodes it.
func (w *Writer) WriteFrame(f Frame) error {
	switch f.Type {
	case TypeChunk:
		return w.Chunk(f.From, f.To, f.Data)
	case TypeKeepalive, TypeEnd:
		return w.header(f.Type)
	}
	if w.err != nil {
		return w.err
	}
	b, err := AppendFrame(nil, f)
	if err != nil {
		return err
	}
	return w.write(b)
}

func (w *Writer) header(t Type) error {
	if w.err != nil {
		return w.err
	}
	return w.write(appendHeader(w.hdr[:0], t, 0))
}

func (w *Writer) write(b []byte) error {
	if _, err := w.w.Write(b); err != nil {
		w.err = fmt.Errorf("edgeframe: write frame: %w", err)
		return w.err
	}
	return nil
}

// ChunkFrom writes a chunk frame for [from, to] whose n bytes of data it
// copies from r, such as a spool file, without holding them in memory. It
// fails with ErrTruncated when r ends before n bytes; the stream then holds
// a partial frame and the Writer refuses every later call.
func (w *Writer) ChunkFrom(from, to int64, r io.Reader, n int64) error {
	if w.err != nil {
		return w.err
	}
	if n < 0 || n > math.MaxInt32 {
		return fmt.Errorf("%w: a chunk of %d bytes", ErrFrameTooLarge, n)
	}
	if err := checkChunk(from, to, int(n)); err != nil {
		return err
	}
	if err := w.write(appendChunkHeader(w.hdr[:0], from, to, int(n))); err != nil {
		return err
	}
	copied, err := io.CopyN(w.w, r, n)
	if err != nil {
		if copied < n && (err == io.EOF || err == io.ErrUnexpectedEOF) {
			err = fmt.Errorf("%w: the chunk's source ended after %d of %d bytes", ErrTruncated, copied, n)
		}
		w.err = fmt.Errorf("edgeframe: write frame: %w", err)
		return w.err
	}
	return nil
}
