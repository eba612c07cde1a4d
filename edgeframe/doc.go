// Package edgeframe is the wire codec between the coordinator and its edge
// workers: the frames of GET /v1/ranges/{id}/stream and the body of
// POST /v1/ranges/{id}/batch, as docs/api.md defines them.
//
// # Frames
//
// A frame stream (media type ContentType) is a sequence of frames, each one
// type byte, a big-endian uint32 payload length and the payload:
//
//	0x00 keepalive  empty
//	0x01 chunk      from (int64 BE), to (int64 BE), the chunk's data
//	0x02 end        empty; the last frame of a complete stream
//	0x03 error      a UTF-8 message; the last frame when the sender gives up
//
// Writer encodes frames; a chunk is written as its 21-byte header followed by
// the caller's data, uncopied. AppendFrame encodes into a byte slice.
//
// Reader decodes them. It refuses a payload length above Config.MaxFrame (64
// MiB by default) with ErrFrameTooLarge before allocating anything for it, and
// reuses one buffer across frames, so Frame.Data is valid only until the next
// call to Next. Its errors say how a stream went wrong:
//
//   - io.EOF: the end frame was read; the stream is complete (Complete is true);
//   - ErrCut: the stream stopped between frames without the end frame;
//   - ErrTruncated: the stream stopped inside a frame;
//   - ErrAborted (as a *StreamError): the sender sent an error frame;
//   - ErrUnknownType, ErrFrameTooLarge, ErrMalformed: the bytes are not a
//     valid frame.
//
// ErrCut and ErrTruncated both wrap io.ErrUnexpectedEOF. Errors are sticky: a
// stream cannot be resumed after one.
//
// # Batches
//
// Batch, Item and BatchResult are the JSON bodies of the batch call.
// DecodeBatch reads a Batch strictly (exact field names, no unknown, missing
// or repeated field, integers that fit int64, from <= to, headers >= 0, a
// non-empty key and a value in every item, nothing after the object, valid
// UTF-8), returning errors that wrap ErrBadBatch (HTTP 400) or ErrTooLarge
// (HTTP 413). Whether to is within the range and whether from is the range's
// next article are the store's checks, not this package's.
//
// MarshalBatchBinary and DecodeBatchBinary are the same batch in a binary
// layout (media type BatchType): length-prefixed keys and values, so the
// sender copies the values instead of checking and encoding them. The
// decoder checks what DecodeBatch checks and bounds every count and length
// by the bytes left; each value is kept as sent, the same JSON as
// MarshalBatch would have sent. BatchBinaryReader encodes that layout as it
// is read, so a sender streams a batch without holding it encoded, and
// DecodeBatchBinary checks the values as the body arrives.
package edgeframe
