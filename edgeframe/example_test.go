package edgeframe_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/edgeindex/edgeindex/edgeframe"
)

// Encode a chunk and the end frame, then decode the stream.
func Example() {
	var stream bytes.Buffer
	w := edgeframe.NewWriter(&stream)
	if err := w.Keepalive(); err != nil {
		panic(err)
	}
	if err := w.Chunk(1000, 2999, []byte("gzip of overview lines")); err != nil {
		panic(err)
	}
	if err := w.End(); err != nil {
		panic(err)
	}

	r, err := edgeframe.NewReader(&stream, edgeframe.Config{})
	if err != nil {
		panic(err)
	}
	for {
		f, err := r.Next()
		if errors.Is(err, io.EOF) {
			fmt.Println("complete:", r.Complete())
			break
		}
		if err != nil { // ErrCut, ErrTruncated, ErrAborted, ...
			fmt.Println("stream failed:", err)
			return
		}
		switch f.Type {
		case edgeframe.TypeChunk:
			fmt.Printf("chunk %d-%d: %d bytes\n", f.From, f.To, len(f.Data))
		default:
			fmt.Println(f.Type)
		}
	}
	// Output:
	// keepalive
	// chunk 1000-2999: 22 bytes
	// end
	// complete: true
}

// A stream that stops without its end frame is reported as cut.
func ExampleReader_Next_cut() {
	var stream bytes.Buffer
	_ = edgeframe.NewWriter(&stream).Chunk(1, 10, []byte("data"))

	r, _ := edgeframe.NewReader(&stream, edgeframe.Config{})
	_, err := r.Next()
	fmt.Println(err)
	_, err = r.Next()
	fmt.Println(errors.Is(err, edgeframe.ErrCut), err)
	// Output:
	// <nil>
	// true stream cut before the end frame: unexpected EOF
}

func ExampleDecodeBatch() {
	body := `{"from": 1000, "to": 1999, "headers": 998,
	          "items": [{"key": "binary-hash", "value": {"parts": 3}}]}`
	b, err := edgeframe.DecodeBatch(strings.NewReader(body), 0)
	if err != nil {
		panic(err)
	}
	fmt.Println(b.From, b.To, b.Headers, b.Items[0].Key, string(b.Items[0].Value))

	_, err = edgeframe.DecodeBatch(strings.NewReader(`{"from": 1000, "to": 999, "headers": 0, "items": []}`), 0)
	fmt.Println(errors.Is(err, edgeframe.ErrBadBatch), err)
	// Output:
	// 1000 1999 998 binary-hash {"parts": 3}
	// true bad batch: from (1000) is after to (999)
}

// Stream a batch in the binary layout, as edge.Client sends it, and decode
// it as the coordinator does, its values checked as they arrive.
func ExampleNewBatchBinaryReader() {
	b := edgeframe.Batch{From: 1, To: 100, Headers: 98, Missing: []int64{7, 9}, Items: []edgeframe.Item{
		{Key: "binary-1", Value: []byte(`{"name": "a.rar", "parts": 3}`)},
	}}
	r, err := edgeframe.NewBatchBinaryReader(b)
	if err != nil {
		panic(err)
	}
	size := r.Size() // a request's Content-Length
	got, err := edgeframe.DecodeBatchBinary(r, size, 0)
	if err != nil {
		panic(err)
	}
	fmt.Println(size, got.Missing, got.Items[0].Key, string(got.Items[0].Value))
	// Output: 94 [7 9] binary-1 {"name": "a.rar", "parts": 3}
}
