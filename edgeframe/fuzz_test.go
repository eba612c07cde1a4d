package edgeframe

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// fuzzMaxFrame is the Reader limit under fuzzing: small, so that lengths
// above it are common in random input.
const fuzzMaxFrame = 1 << 16

// FuzzReader decodes arbitrary bytes as a frame stream. The seed corpus is in
// testdata/fuzz/FuzzReader. Invariants:
//   - Next never panics and its buffer never exceeds MaxFrame;
//   - each frame re-encodes to exactly the bytes it was decoded from, and the
//     Reader consumes nothing else;
//   - the final error says truthfully how the stream ended, and is sticky.
func FuzzReader(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		src := bytes.NewReader(data)
		r, err := NewReader(src, Config{MaxFrame: fuzzMaxFrame})
		require.NoError(t, err)
		var (
			consumed int
			last     Frame
			frames   int
			reenc    []byte
		)
		for {
			fr, err := r.Next()
			require.LessOrEqual(t, cap(r.buf), fuzzMaxFrame)
			if err != nil {
				checkStreamEnd(t, data, consumed, src.Len(), last, frames, r, err)
				_, again := r.Next()
				require.Equal(t, err, again, "errors are sticky")
				return
			}
			now := len(data) - src.Len()
			reenc, err = AppendFrame(reenc[:0], fr)
			require.NoError(t, err)
			require.Equal(t, data[consumed:now], reenc, "frame %d re-encodes to its bytes", frames)
			consumed, last = now, fr
			frames++
		}
	})
}

func checkStreamEnd(t *testing.T, data []byte, consumed, unread int, last Frame, frames int, r *Reader, err error) {
	t.Helper()
	rest := data[consumed:]
	switch {
	case errors.Is(err, io.EOF):
		require.True(t, r.Complete())
		require.Equal(t, TypeEnd, last.Type)
	case errors.Is(err, ErrAborted):
		require.Equal(t, TypeError, last.Type)
		require.Equal(t, last.Message, err.(*StreamError).Message)
	case errors.Is(err, ErrCut):
		require.Empty(t, rest, "cut only at the end of the input")
	case errors.Is(err, ErrTruncated):
		require.NotEmpty(t, rest)
		require.Zero(t, unread, "truncated only when the input ran out inside a frame")
	case errors.Is(err, ErrUnknownType):
		require.Greater(t, rest[0], byte(TypeError))
	case errors.Is(err, ErrFrameTooLarge):
		require.Greater(t, binary.BigEndian.Uint32(rest[1:HeaderLen]), uint32(fuzzMaxFrame))
	case errors.Is(err, ErrMalformed):
		_, encErr := AppendFrame(nil, Frame{Type: Type(rest[0])})
		require.NoError(t, encErr, "malformed means a known type")
	default:
		t.Fatalf("unexpected error after %d frames: %v", frames, err)
	}
	if !errors.Is(err, io.EOF) {
		require.False(t, r.Complete())
	}
}

// fuzzMaxBatch is the DecodeBatch limit under fuzzing.
const fuzzMaxBatch = 4096

// FuzzDecodeBatch decodes arbitrary bytes as a batch body. The seed corpus is
// in testdata/fuzz/FuzzDecodeBatch. Invariants:
//   - DecodeBatch never panics and refuses only with ErrBadBatch or
//     ErrTooLarge, the latter exactly when the body is over the limit;
//   - what it accepts is valid UTF-8 JSON that encoding/json, with unknown
//     fields disallowed, decodes to the same batch, and that Validate accepts;
//   - an accepted batch survives json.Marshal and DecodeBatch again;
//   - what the fast path accepts, the token-by-token decoder accepts with
//     the same batch;
//   - the fast path reading the body in parts gives what it gives reading
//     it on one goroutine.
func FuzzDecodeBatch(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		// Read in parts, a body decodes as it does on one goroutine.
		one, oneOK := decodeFastSplit(data, split{})
		parts, partsOK := decodeFastSplit(data, split{parts: 3, above: 8})
		require.Equal(t, oneOK, partsOK, "read in parts")
		require.Equal(t, one, parts, "read in parts")
		if fb, ok := decodeFast(data); ok && len(data) <= fuzzMaxBatch {
			sb, err := decodeSlow(bytes.NewReader(data), fuzzMaxBatch)
			require.NoError(t, err, "the fast path accepted what the slow one refuses")
			require.Equal(t, sb, fb)
		}
		b, err := DecodeBatch(bytes.NewReader(data), fuzzMaxBatch)
		if len(data) > fuzzMaxBatch {
			require.ErrorIs(t, err, ErrTooLarge)
			return
		}
		if err != nil {
			require.ErrorIs(t, err, ErrBadBatch)
			require.NotErrorIs(t, err, ErrTooLarge)
			require.Zero(t, b)
			return
		}
		require.True(t, utf8.Valid(data))
		require.True(t, json.Valid(data))
		require.NoError(t, ValidateBatch(b))
		require.NotNil(t, b.Items)

		var std struct {
			From, To, Headers *int64
			Missing           []int64
			Final             bool
			Items             []struct {
				Key   *string
				Value json.RawMessage
			}
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&std))
		require.Equal(t, b.From, *std.From)
		require.Equal(t, b.To, *std.To)
		require.Equal(t, b.Headers, *std.Headers)
		require.Equal(t, b.Missing, std.Missing)
		require.Equal(t, b.Final, std.Final)
		require.Len(t, std.Items, len(b.Items))
		for i, it := range std.Items {
			require.Equal(t, b.Items[i].Key, *it.Key)
			require.Equal(t, string(b.Items[i].Value), string(it.Value))
		}

		var again bytes.Buffer
		enc := json.NewEncoder(&again)
		enc.SetEscapeHTML(false)
		require.NoError(t, enc.Encode(b))
		b2, err := DecodeBatch(&again, 0)
		require.NoError(t, err)
		require.Equal(t, b.From, b2.From)
		require.Equal(t, b.To, b2.To)
		require.Equal(t, b.Headers, b2.Headers)
		require.Len(t, b2.Items, len(b.Items))
		for i := range b.Items {
			require.Equal(t, b.Items[i].Key, b2.Items[i].Key)
			var compact bytes.Buffer
			require.NoError(t, json.Compact(&compact, b.Items[i].Value))
			require.Equal(t, compact.String(), string(b2.Items[i].Value))
		}
	})
}

// FuzzMarshalBatch encodes batches built from arbitrary keys and values.
// Invariants: MarshalBatch writes exactly what json.Marshal writes for the
// batch (its fast path is byte for byte encoding/json), and refuses exactly
// what ValidateBatch or json.Marshal refuses, with ErrBadBatch.
func FuzzMarshalBatch(f *testing.F) {
	for _, v := range []string{
		`{"a": [1, 2], "s": "<&>"}`, "\"\u2028\u2029\"", ` [ true , false , null , -1.5e+3 ] `, `"\u003c\\\"\/"`,
		`{bad`, ``, `1 2`, `{"a":1}x`, `"` + "\xff" + `"`, `[[[[]]]]`, `0`, `01`, `"\x01"`, "\t\"a b\"\n",
	} {
		f.Add("key", []byte(v), int64(1), int64(9), int64(9), false)
	}
	f.Add("k<e>y&\"\\\u2028é\xff\x01", []byte(`{}`), int64(-5), int64(5), int64(0), true)
	f.Add("", []byte(`1`), int64(1), int64(1), int64(0), false)
	f.Add("k", []byte(`1`), int64(2), int64(1), int64(0), false)
	f.Fuzz(func(t *testing.T, key string, value []byte, from, to, headers int64, final bool) {
		b := Batch{From: from, To: to, Headers: headers, Final: final, Items: []Item{
			{Key: key, Value: value}, {Key: "nil", Value: nil}, {Key: key + "2", Value: json.RawMessage(value)},
		}}
		if from < to {
			b.Missing = []int64{from, to}
		}
		got, err := MarshalBatch(b)
		want, werr := json.Marshal(b)
		if verr := ValidateBatch(b); verr != nil || werr != nil {
			require.ErrorIs(t, err, ErrBadBatch)
			require.Nil(t, got)
			if verr == nil {
				_, ok := appendBatch(nil, b)
				require.False(t, ok, "the fast path accepted what json.Marshal refuses")
			}
			return
		}
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
		if fast, ok := appendBatch(nil, b); ok {
			require.Equal(t, string(want), string(fast))
		}
		b.Items = nil
		got, err = MarshalBatch(b)
		require.NoError(t, err)
		want, _ = json.Marshal(Batch{From: b.From, To: b.To, Headers: b.Headers, Missing: b.Missing, Final: b.Final, Items: []Item{}})
		require.Equal(t, string(want), string(got))
	})
}
