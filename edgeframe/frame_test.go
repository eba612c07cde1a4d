package edgeframe_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/edgeframe"
)

func newReader(t *testing.T, b []byte, cfg edgeframe.Config) *edgeframe.Reader {
	t.Helper()
	r, err := edgeframe.NewReader(bytes.NewReader(b), cfg)
	require.NoError(t, err)
	return r
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	require.NoError(t, err)
	return b
}

func TestWriterEncodesAPIBytes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		write func(w *edgeframe.Writer) error
		frame edgeframe.Frame
		want  string
	}{
		{"keepalive", (*edgeframe.Writer).Keepalive, edgeframe.Frame{Type: edgeframe.TypeKeepalive}, "00 00000000"},
		{"end", (*edgeframe.Writer).End, edgeframe.Frame{Type: edgeframe.TypeEnd}, "02 00000000"},
		{
			"chunk",
			func(w *edgeframe.Writer) error { return w.Chunk(1000, 1999, []byte("ab")) },
			edgeframe.Frame{Type: edgeframe.TypeChunk, From: 1000, To: 1999, Data: []byte("ab")},
			"01 00000012 00000000000003e8 00000000000007cf 6162",
		},
		{
			"chunk past 2^31 with no data",
			func(w *edgeframe.Writer) error { return w.Chunk(1<<32, 1<<32+5, nil) },
			edgeframe.Frame{Type: edgeframe.TypeChunk, From: 1 << 32, To: 1<<32 + 5},
			"01 00000010 0000000100000000 0000000100000005",
		},
		{
			"error",
			func(w *edgeframe.Writer) error { return w.Error("gave up: é") },
			edgeframe.Frame{Type: edgeframe.TypeError, Message: "gave up: é"},
			"03 0000000b 67617665207570 3a 20 c3a9",
		},
		{
			"error with invalid UTF-8 replaced",
			func(w *edgeframe.Writer) error { return w.Error("a\xffb") },
			edgeframe.Frame{Type: edgeframe.TypeError, Message: "a\xffb"},
			"03 00000005 61 efbfbd 62",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			want := unhex(t, tt.want)

			var buf bytes.Buffer
			require.NoError(t, tt.write(edgeframe.NewWriter(&buf)))
			require.Equal(t, want, buf.Bytes())

			buf.Reset()
			require.NoError(t, edgeframe.NewWriter(&buf).WriteFrame(tt.frame))
			require.Equal(t, want, buf.Bytes())

			got, err := edgeframe.AppendFrame([]byte("x"), tt.frame)
			require.NoError(t, err)
			require.Equal(t, append([]byte("x"), want...), got)
		})
	}
}

func TestWriterRefusesInvalidFrames(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w := edgeframe.NewWriter(&buf)

	err := w.Chunk(10, 9, []byte("x"))
	require.ErrorIs(t, err, edgeframe.ErrMalformed)
	require.ErrorContains(t, err, "from 10 is after to 9")

	err = w.WriteFrame(edgeframe.Frame{Type: 4})
	require.ErrorIs(t, err, edgeframe.ErrUnknownType)

	_, err = edgeframe.AppendFrame(nil, edgeframe.Frame{Type: edgeframe.TypeChunk, From: 2, To: 1})
	require.ErrorIs(t, err, edgeframe.ErrMalformed)
	require.Zero(t, buf.Len(), "nothing is written for a refused frame")

	// A refused frame does not break the stream.
	require.NoError(t, w.End())
	require.Equal(t, []byte{2, 0, 0, 0, 0}, buf.Bytes())
}

// recordingWriter records each Write's slice and fails from write number failAt on.
type recordingWriter struct {
	writes [][]byte
	failAt int
}

var errDisk = errors.New("disk on fire")

func (w *recordingWriter) Write(p []byte) (int, error) {
	w.writes = append(w.writes, p)
	if w.failAt > 0 && len(w.writes) >= w.failAt {
		return 0, errDisk
	}
	return len(p), nil
}

func TestWriterWritesChunkDataUncopied(t *testing.T) {
	t.Parallel()
	rec := &recordingWriter{}
	data := bytes.Repeat([]byte("z"), 1<<20)
	require.NoError(t, edgeframe.NewWriter(rec).Chunk(1, 2000, data))
	require.Len(t, rec.writes, 2, "header, then data")
	require.Len(t, rec.writes[0], edgeframe.HeaderLen+edgeframe.ChunkPrefixLen)
	require.Same(t, &data[0], &rec.writes[1][0], "the data is passed through, not copied")
	require.Len(t, rec.writes[1], len(data))
}

func TestWriterErrorIsSticky(t *testing.T) {
	t.Parallel()
	rec := &recordingWriter{failAt: 1}
	w := edgeframe.NewWriter(rec)
	err := w.Chunk(1, 2, []byte("data"))
	require.ErrorIs(t, err, errDisk)
	for _, call := range []func() error{w.Keepalive, w.End, func() error { return w.Error("x") }, func() error { return w.Chunk(1, 1, nil) }} {
		require.ErrorIs(t, call(), errDisk)
	}
	require.Len(t, rec.writes, 1, "no write after the failure")
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte{0xab, 0xcd}, 300_000)
	want := []edgeframe.Frame{
		{Type: edgeframe.TypeKeepalive},
		{Type: edgeframe.TypeChunk, From: 1000, To: 2999, Data: []byte("\x1f\x8bgzip")},
		{Type: edgeframe.TypeChunk, From: math.MinInt64, To: math.MaxInt64, Data: big},
		{Type: edgeframe.TypeKeepalive},
		{Type: edgeframe.TypeChunk, From: 7, To: 7, Data: []byte{}},
		{Type: edgeframe.TypeChunk, From: 1 << 40, To: 1<<40 + 1999, Data: []byte("small after big")},
		{Type: edgeframe.TypeEnd},
	}
	var buf bytes.Buffer
	w := edgeframe.NewWriter(&buf)
	for _, f := range want {
		require.NoError(t, w.WriteFrame(f))
	}

	r := newReader(t, buf.Bytes(), edgeframe.Config{})
	for i, wf := range want {
		require.False(t, r.Complete())
		f, err := r.Next()
		require.NoError(t, err, "frame %d", i)
		require.Equal(t, wf.Type, f.Type, "frame %d", i)
		require.Equal(t, wf.From, f.From, "frame %d", i)
		require.Equal(t, wf.To, f.To, "frame %d", i)
		require.Equal(t, len(wf.Data), len(f.Data), "frame %d", i)
		require.True(t, bytes.Equal(wf.Data, f.Data), "frame %d", i)
	}
	require.True(t, r.Complete())
	for range 2 {
		_, err := r.Next()
		require.ErrorIs(t, err, io.EOF)
		require.NotErrorIs(t, err, io.ErrUnexpectedEOF)
	}
}

func TestReaderStopsAtEndFrame(t *testing.T) {
	t.Parallel()
	stream := append(unhex(t, "00 00000000 02 00000000"), "trailing bytes"...)
	src := bytes.NewReader(stream)
	r, err := edgeframe.NewReader(src, edgeframe.Config{})
	require.NoError(t, err)
	f, err := r.Next()
	require.NoError(t, err)
	require.Equal(t, edgeframe.TypeKeepalive, f.Type)
	f, err = r.Next()
	require.NoError(t, err)
	require.Equal(t, edgeframe.TypeEnd, f.Type)
	_, err = r.Next()
	require.ErrorIs(t, err, io.EOF)
	require.Equal(t, len("trailing bytes"), src.Len(), "nothing after the end frame is read")
}

func TestReaderErrorFrameEndsStream(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w := edgeframe.NewWriter(&buf)
	require.NoError(t, w.Chunk(1, 10, []byte("d")))
	require.NoError(t, w.Error("chunk 11-20 not fetched within 1h0m0s"))
	require.NoError(t, w.End()) // never read: the error frame is the last one

	r := newReader(t, buf.Bytes(), edgeframe.Config{})
	f, err := r.Next()
	require.NoError(t, err)
	require.NoError(t, f.Err())

	f, err = r.Next()
	require.NoError(t, err)
	require.Equal(t, edgeframe.TypeError, f.Type)
	require.Equal(t, "chunk 11-20 not fetched within 1h0m0s", f.Message)
	require.ErrorIs(t, f.Err(), edgeframe.ErrAborted)

	for range 2 {
		_, err = r.Next()
		require.ErrorIs(t, err, edgeframe.ErrAborted)
		se, ok := errors.AsType[*edgeframe.StreamError](err)
		require.True(t, ok)
		require.Equal(t, "chunk 11-20 not fetched within 1h0m0s", se.Message)
		require.EqualError(t, err, "stream aborted by an error frame: chunk 11-20 not fetched within 1h0m0s")
	}
	require.False(t, r.Complete())
}

type failingReader struct{ data []byte }

func (f *failingReader) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, errDisk
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

func TestReaderErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		stream string // hex
		cfg    edgeframe.Config
		frames int // good frames before the error
		want   error
		msg    string
	}{
		{name: "empty stream", stream: "", want: edgeframe.ErrCut},
		{name: "no end frame", stream: "00 00000000 01 00000010 0000000000000001 0000000000000002", frames: 2, want: edgeframe.ErrCut},
		{name: "cut in header", stream: "00 00000000 01 0000", frames: 1, want: edgeframe.ErrTruncated, msg: "3 bytes into a frame header"},
		{name: "cut in payload", stream: "01 00000014 0000000000000001 0000000000000002 6162", want: edgeframe.ErrTruncated, msg: "18 bytes into a payload of 20"},
		{name: "cut in error message", stream: "03 00000005 6869", want: edgeframe.ErrTruncated},
		{name: "over the configured max", stream: "01 00000065", cfg: edgeframe.Config{MaxFrame: 100}, want: edgeframe.ErrFrameTooLarge, msg: "a chunk frame of 101 bytes, over the limit of 100"},
		{name: "at the configured max", stream: "03 00000004 6f6f6f6f 02 00000000", cfg: edgeframe.Config{MaxFrame: 4}, frames: 1, want: edgeframe.ErrAborted},
		{name: "over the default max", stream: "01 04000001", want: edgeframe.ErrFrameTooLarge, msg: "over the limit of 67108864"},
		{name: "max uint32 length", stream: "03 ffffffff", want: edgeframe.ErrFrameTooLarge},
		{name: "at the default max but cut", stream: "01 04000000 00", want: edgeframe.ErrTruncated},
		{name: "unknown type 4", stream: "04 00000000", want: edgeframe.ErrUnknownType, msg: "0x04"},
		{name: "unknown type ff after a frame", stream: "00 00000000 ff 00000000", frames: 1, want: edgeframe.ErrUnknownType, msg: "0xff"},
		{name: "chunk payload too short", stream: "01 0000000f 000000000000000100000000000002", want: edgeframe.ErrMalformed, msg: "15 bytes, shorter than its 16-byte from and to"},
		{name: "chunk from after to", stream: "01 00000010 0000000000000002 0000000000000001", want: edgeframe.ErrMalformed, msg: "from 2 is after to 1"},
		{name: "keepalive with payload", stream: "00 00000001 00", want: edgeframe.ErrMalformed, msg: "keepalive frame has an empty payload"},
		{name: "end with payload", stream: "02 00000002 0000", want: edgeframe.ErrMalformed, msg: "end frame"},
		{name: "error message not UTF-8", stream: "03 00000002 c328", want: edgeframe.ErrMalformed, msg: "not valid UTF-8"},
		{name: "error frame", stream: "03 00000002 6f6b", want: edgeframe.ErrAborted, frames: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newReader(t, unhex(t, tt.stream), tt.cfg)
			for i := range tt.frames {
				_, err := r.Next()
				require.NoError(t, err, "frame %d", i)
			}
			_, err := r.Next()
			require.ErrorIs(t, err, tt.want)
			require.NotErrorIs(t, err, io.EOF)
			require.ErrorContains(t, err, tt.msg)
			require.False(t, r.Complete())
			_, again := r.Next()
			require.Equal(t, err, again, "errors are sticky")
		})
	}
}

func TestReaderCutErrorsWrapUnexpectedEOF(t *testing.T) {
	t.Parallel()
	require.ErrorIs(t, edgeframe.ErrCut, io.ErrUnexpectedEOF)
	require.ErrorIs(t, edgeframe.ErrTruncated, io.ErrUnexpectedEOF)
	require.NotErrorIs(t, edgeframe.ErrCut, edgeframe.ErrTruncated)
	require.NotErrorIs(t, edgeframe.ErrTruncated, edgeframe.ErrCut)
}

func TestReaderPassesReadErrors(t *testing.T) {
	t.Parallel()
	for _, stream := range []string{"", "00", "01 00000020 00"} {
		r, err := edgeframe.NewReader(&failingReader{data: unhex(t, stream)}, edgeframe.Config{})
		require.NoError(t, err)
		_, err = r.Next()
		require.ErrorIs(t, err, errDisk, "stream %q", stream)
		require.NotErrorIs(t, err, edgeframe.ErrTruncated)
		require.NotErrorIs(t, err, edgeframe.ErrCut)
	}
}

func TestNewReaderConfig(t *testing.T) {
	t.Parallel()
	_, err := edgeframe.NewReader(bytes.NewReader(nil), edgeframe.Config{MaxFrame: -1})
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
	require.ErrorContains(t, err, "MaxFrame")

	// A limit above what the length field holds accepts any length.
	r := newReader(t, unhex(t, "01 ffffffff"), edgeframe.Config{MaxFrame: math.MaxInt})
	_, err = r.Next()
	require.ErrorIs(t, err, edgeframe.ErrTruncated)
}

func TestReaderResetReusesBuffer(t *testing.T) { // not parallel: AllocsPerRun refuses it
	var buf bytes.Buffer
	w := edgeframe.NewWriter(&buf)
	require.NoError(t, w.Chunk(1, 2000, bytes.Repeat([]byte("x"), 256<<10)))
	require.NoError(t, w.Keepalive())
	require.NoError(t, w.End())
	stream := buf.Bytes()

	src := bytes.NewReader(stream)
	r, err := edgeframe.NewReader(src, edgeframe.Config{})
	require.NoError(t, err)
	decode := func() {
		src.Reset(stream)
		r.Reset(src)
		for {
			if _, err := r.Next(); err != nil {
				require.ErrorIs(t, err, io.EOF)
				return
			}
		}
	}
	decode()
	require.True(t, r.Complete())
	allocs := testing.AllocsPerRun(20, decode)
	require.Zero(t, allocs, "decoding a stream again allocates nothing")
}

func TestChunkFrom(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w := edgeframe.NewWriter(&buf)
	require.NoError(t, w.ChunkFrom(10, 19, strings.NewReader("hello"), 5))
	var want bytes.Buffer
	require.NoError(t, edgeframe.NewWriter(&want).Chunk(10, 19, []byte("hello")))
	require.Equal(t, want.Bytes(), buf.Bytes(), "the same bytes as Chunk")

	err := w.ChunkFrom(20, 29, strings.NewReader("abc"), 5)
	require.ErrorIs(t, err, edgeframe.ErrTruncated)
	require.ErrorIs(t, w.End(), edgeframe.ErrTruncated, "a partial frame ends the writer")
	require.ErrorIs(t, edgeframe.NewWriter(io.Discard).ChunkFrom(5, 4, strings.NewReader(""), 0), edgeframe.ErrMalformed)
	require.ErrorIs(t, edgeframe.NewWriter(io.Discard).ChunkFrom(1, 4, strings.NewReader(""), -1), edgeframe.ErrFrameTooLarge)
}
