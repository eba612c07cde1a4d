package edgeframe

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"unicode/utf8"

	"github.com/edgeindex/edgeindex"
)

// Config configures a Reader. Its zero value means the defaults.
type Config struct {
	// MaxFrame is the largest payload length accepted, in bytes; a frame
	// claiming more is refused with ErrFrameTooLarge before anything is
	// allocated for it. Zero means DefaultMaxFrame (64 MiB); negative is
	// invalid. Values above what the 4-byte length can hold act as no limit.
	MaxFrame int
}

// withDefaults returns c with every zero field that has a default set to
// it, and a MaxFrame above what the length field holds lowered to that.
func (c Config) withDefaults() Config {
	if c.MaxFrame == 0 {
		c.MaxFrame = DefaultMaxFrame
	}
	if c.MaxFrame > 0 && uint64(c.MaxFrame) > maxPayload {
		c.MaxFrame = int(min(uint64(maxPayload), uint64(math.MaxInt)))
	}
	return c
}

// validate checks a Config that has its defaults.
func (c Config) validate() error {
	if c.MaxFrame < 0 {
		return edgeindex.Invalidf("edgeframe: MaxFrame must be zero (64 MiB) or positive, not %d", c.MaxFrame)
	}
	return nil
}

// firstGrow is the most the Reader allocates for a payload before any of its
// bytes have arrived; beyond it the buffer doubles as the bytes come, so a
// header that claims a large length on a stream that then stops costs little.
const firstGrow = 1 << 20

// Reader decodes a stream of frames from an io.Reader.
//
// Next returns frames one by one, keepalives included. It returns io.EOF only
// after the end frame, so io.EOF always means a complete stream; Complete
// reports the same. A stream that stops without the end frame gives ErrCut
// (between frames) or ErrTruncated (inside a frame); after an error frame,
// Next returns a *StreamError wrapping ErrAborted. Every error is sticky: once
// Next has failed it keeps returning the same error.
//
// The Reader reads exactly the frames it returns and nothing after them (it
// does no read-ahead; wrap an unbuffered source such as a net.Conn in a
// bufio.Reader). It keeps one payload buffer, reused from frame to frame and
// grown to the largest frame seen (never above MaxFrame), so Frame.Data is
// valid only until the next call to Next or Reset. A Reader is not safe for
// concurrent use.
type Reader struct {
	src      io.Reader
	max      int
	hdr      [HeaderLen]byte
	buf      []byte
	err      error
	complete bool
}

// NewReader returns a Reader that decodes frames from src. It returns an
// error that is edgeindex.ErrInvalid when cfg is invalid.
func NewReader(src io.Reader, cfg Config) (*Reader, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Reader{src: src, max: cfg.MaxFrame}, nil
}

// Reset makes r decode a new stream from src, keeping its configuration and
// its buffer.
func (r *Reader) Reset(src io.Reader) {
	r.src = src
	r.err = nil
	r.complete = false
}

// Complete reports whether the end frame has been read.
func (r *Reader) Complete() bool { return r.complete }

// Next reads and returns the next frame. See Reader for its errors.
func (r *Reader) Next() (Frame, error) {
	if r.err != nil {
		return Frame{}, r.err
	}
	f, err := r.next()
	if err != nil {
		r.err = err
		return Frame{}, err
	}
	switch f.Type {
	case TypeEnd:
		r.complete = true
		r.err = io.EOF
	case TypeError:
		r.err = f.Err()
	}
	return f, nil
}

func (r *Reader) next() (Frame, error) {
	n, err := io.ReadFull(r.src, r.hdr[:])
	switch {
	case err == io.EOF:
		return Frame{}, ErrCut
	case err == io.ErrUnexpectedEOF:
		return Frame{}, fmt.Errorf("%w: the stream ends %d bytes into a frame header", ErrTruncated, n)
	case err != nil:
		return Frame{}, fmt.Errorf("edgeframe: read frame header: %w", err)
	}
	t := Type(r.hdr[0])
	size := binary.BigEndian.Uint32(r.hdr[1:])
	if t > TypeError {
		return Frame{}, fmt.Errorf("%w: 0x%02x", ErrUnknownType, byte(t))
	}
	if uint64(size) > uint64(r.max) {
		return Frame{}, fmt.Errorf("%w: a %s frame of %d bytes, over the limit of %d", ErrFrameTooLarge, t, size, r.max)
	}
	switch t {
	case TypeKeepalive, TypeEnd:
		if size != 0 {
			return Frame{}, fmt.Errorf("%w: a %s frame has an empty payload, not %d bytes", ErrMalformed, t, size)
		}
		return Frame{Type: t}, nil
	case TypeChunk:
		if size < ChunkPrefixLen {
			return Frame{}, fmt.Errorf("%w: a chunk payload of %d bytes, shorter than its %d-byte from and to", ErrMalformed, size, ChunkPrefixLen)
		}
	}
	p, err := r.fill(int(size))
	if err != nil {
		return Frame{}, err
	}
	if t == TypeError {
		if !utf8.Valid(p) {
			return Frame{}, fmt.Errorf("%w: the error frame's message is not valid UTF-8", ErrMalformed)
		}
		return Frame{Type: TypeError, Message: string(p)}, nil
	}
	f := Frame{
		Type: TypeChunk,
		From: int64(binary.BigEndian.Uint64(p[0:8])),
		To:   int64(binary.BigEndian.Uint64(p[8:16])),
		Data: p[ChunkPrefixLen:],
	}
	if f.From > f.To {
		return Frame{}, fmt.Errorf("%w: chunk from %d is after to %d", ErrMalformed, f.From, f.To)
	}
	return f, nil
}

// fill reads an n-byte payload into r.buf and returns it. When the buffer is
// too small it grows as the bytes arrive: first to at most firstGrow, then
// doubling, never above n.
func (r *Reader) fill(n int) ([]byte, error) {
	if n <= cap(r.buf) {
		p := r.buf[:n]
		if got, err := io.ReadFull(r.src, p); err != nil {
			return nil, r.payloadErr(got, n, err)
		}
		return p, nil
	}
	p := r.buf[:0]
	for len(p) < n {
		if len(p) == cap(p) {
			c := min(n, max(2*cap(p), firstGrow))
			grown := make([]byte, len(p), c)
			copy(grown, p)
			p = grown
			r.buf = grown[:0]
		}
		got, err := io.ReadFull(r.src, p[len(p):cap(p)])
		p = p[:len(p)+got]
		if err != nil {
			return nil, r.payloadErr(len(p), n, err)
		}
	}
	return p, nil
}

func (r *Reader) payloadErr(got, n int, err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("%w: the stream ends %d bytes into a payload of %d", ErrTruncated, got, n)
	}
	return fmt.Errorf("edgeframe: read frame payload: %w", err)
}
