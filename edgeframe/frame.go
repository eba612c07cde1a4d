package edgeframe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
)

// ContentType is the media type of a frame stream, as sent by
// GET /v1/ranges/{id}/stream.
const ContentType = "application/vnd.edgeindex.frames"

// Frame layout sizes, in bytes.
const (
	// HeaderLen is the length of every frame's header: one type byte and a
	// big-endian uint32 payload length.
	HeaderLen = 5
	// ChunkPrefixLen is the part of a chunk payload before its data: from
	// and to, each a big-endian int64.
	ChunkPrefixLen = 16
	// DefaultMaxFrame is the largest payload a Reader accepts when its
	// Config leaves MaxFrame at zero: 64 MiB.
	DefaultMaxFrame = 64 << 20
)

// maxPayload is the largest payload the 4-byte length field can express.
const maxPayload = math.MaxUint32

// Sentinel errors. Functions wrap them with %w and a sentence saying what was
// wrong; test them with errors.Is.
var (
	// ErrFrameTooLarge means a frame's payload length is over the limit (the
	// Reader's MaxFrame, or what the length field can hold when writing).
	// The Reader refuses the length before allocating anything for it.
	ErrFrameTooLarge = errors.New("frame too large")
	// ErrTruncated means the stream ended inside a frame: in its header or
	// before its whole payload arrived. It wraps io.ErrUnexpectedEOF.
	ErrTruncated = fmt.Errorf("stream truncated inside a frame: %w", io.ErrUnexpectedEOF)
	// ErrCut means the stream ended cleanly between two frames but without
	// the end frame, so it is incomplete. It wraps io.ErrUnexpectedEOF.
	ErrCut = fmt.Errorf("stream cut before the end frame: %w", io.ErrUnexpectedEOF)
	// ErrUnknownType means a frame's type byte is not one of the four types.
	ErrUnknownType = errors.New("unknown frame type")
	// ErrMalformed means a frame's payload does not fit its type: a chunk
	// payload shorter than 16 bytes or with from > to, a keepalive or end
	// frame with a payload, an error message that is not UTF-8.
	ErrMalformed = errors.New("malformed frame")
	// ErrAborted means the sender ended the stream with an error frame. The
	// Reader returns it as a *StreamError once that frame has been read.
	ErrAborted = errors.New("stream aborted by an error frame")
)

// StreamError is the message of an error frame, as an error. It wraps
// ErrAborted.
type StreamError struct {
	// Message is the error frame's payload.
	Message string
}

var _ error = (*StreamError)(nil)

func (e *StreamError) Error() string { return ErrAborted.Error() + ": " + e.Message }

// Unwrap returns ErrAborted.
func (e *StreamError) Unwrap() error { return ErrAborted }

// Type is a frame's type byte.
type Type byte

// The four frame types.
const (
	// TypeKeepalive has an empty payload; the sender is waiting for a chunk.
	TypeKeepalive Type = 0x00
	// TypeChunk carries from, to and one chunk's data.
	TypeChunk Type = 0x01
	// TypeEnd has an empty payload and is the last frame of a complete stream.
	TypeEnd Type = 0x02
	// TypeError carries a UTF-8 message and is the last frame of a stream
	// whose sender gave up.
	TypeError Type = 0x03
)

// String returns the type's name as docs/api.md spells it.
func (t Type) String() string {
	switch t {
	case TypeKeepalive:
		return "keepalive"
	case TypeChunk:
		return "chunk"
	case TypeEnd:
		return "end"
	case TypeError:
		return "error"
	}
	return fmt.Sprintf("type(0x%02x)", byte(t))
}

// Frame is one decoded frame. Which fields are set depends on Type.
type Frame struct {
	Type Type
	// From and To are the chunk's inclusive span of article numbers (chunk
	// frames only).
	From, To int64
	// Data is the chunk's data (chunk frames only). A Frame returned by
	// Reader.Next shares Data with the Reader's buffer: it is valid until the
	// next call to Next or Reset. Copy it to keep it longer.
	Data []byte
	// Message is the error frame's message (error frames only).
	Message string
}

// Err returns the error frame's message as a *StreamError, and nil for every
// other type.
func (f Frame) Err() error {
	if f.Type != TypeError {
		return nil
	}
	return &StreamError{Message: f.Message}
}

// AppendFrame appends the encoding of f to dst and returns the extended
// slice. Keepalive and end frames use no field but Type; chunk frames use
// From, To and Data; error frames use Message, with invalid UTF-8 replaced by
// U+FFFD. It returns ErrMalformed for a chunk with From > To,
// ErrFrameTooLarge for a payload the length field cannot hold, and
// ErrUnknownType for any other type; dst is then returned unchanged.
func AppendFrame(dst []byte, f Frame) ([]byte, error) {
	switch f.Type {
	case TypeKeepalive, TypeEnd:
		return appendHeader(dst, f.Type, 0), nil
	case TypeChunk:
		if err := checkChunk(f.From, f.To, len(f.Data)); err != nil {
			return dst, err
		}
		dst = appendChunkHeader(dst, f.From, f.To, len(f.Data))
		return append(dst, f.Data...), nil
	case TypeError:
		msg := strings.ToValidUTF8(f.Message, "\uFFFD")
		if uint64(len(msg)) > maxPayload {
			return dst, fmt.Errorf("%w: an error message of %d bytes", ErrFrameTooLarge, len(msg))
		}
		dst = appendHeader(dst, TypeError, len(msg))
		return append(dst, msg...), nil
	}
	return dst, fmt.Errorf("%w: 0x%02x", ErrUnknownType, byte(f.Type))
}

func appendHeader(dst []byte, t Type, n int) []byte {
	dst = append(dst, byte(t))
	return binary.BigEndian.AppendUint32(dst, uint32(n))
}

// appendChunkHeader appends a chunk frame's header and from/to prefix: the
// HeaderLen+ChunkPrefixLen bytes before the data.
func appendChunkHeader(dst []byte, from, to int64, dataLen int) []byte {
	dst = appendHeader(dst, TypeChunk, ChunkPrefixLen+dataLen)
	dst = binary.BigEndian.AppendUint64(dst, uint64(from))
	return binary.BigEndian.AppendUint64(dst, uint64(to))
}

func checkChunk(from, to int64, dataLen int) error {
	if from > to {
		return fmt.Errorf("%w: chunk from %d is after to %d", ErrMalformed, from, to)
	}
	if uint64(dataLen) > maxPayload-ChunkPrefixLen {
		return fmt.Errorf("%w: a chunk of %d bytes", ErrFrameTooLarge, dataLen)
	}
	return nil
}
