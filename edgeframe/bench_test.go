package edgeframe_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/edgeindex/edgeindex/edgeframe"
)

const mib = 1 << 20

func chunkData() []byte {
	data := make([]byte, mib)
	for i := range data {
		data[i] = byte(i * 7)
	}
	return data
}

// BenchmarkBaselineCopy1MiB is what encoding and decoding a 1 MiB chunk are
// bound by: one copy of its bytes.
func BenchmarkBaselineCopy1MiB(b *testing.B) {
	src := chunkData()
	dst := make([]byte, len(src))
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		copy(dst, src)
	}
}

// BenchmarkEncodeChunk1MiB writes one chunk frame into a reused buffer: the
// header, then one copy of the data.
func BenchmarkEncodeChunk1MiB(b *testing.B) {
	data := chunkData()
	var buf bytes.Buffer
	buf.Grow(len(data) + 64)
	w := edgeframe.NewWriter(&buf)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := w.Chunk(1000, 2999, data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeChunk1MiB reads one chunk frame from memory with a reused
// Reader: one copy of the data into its buffer.
func BenchmarkDecodeChunk1MiB(b *testing.B) {
	var buf bytes.Buffer
	if err := edgeframe.NewWriter(&buf).Chunk(1000, 2999, chunkData()); err != nil {
		b.Fatal(err)
	}
	stream := buf.Bytes()
	src := bytes.NewReader(stream)
	r, err := edgeframe.NewReader(src, edgeframe.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(mib)
	b.ReportAllocs()
	for b.Loop() {
		src.Reset(stream)
		r.Reset(src)
		f, err := r.Next()
		if err != nil || len(f.Data) != mib {
			b.Fatal(len(f.Data), err)
		}
	}
}

func batchBody(b *testing.B, n int) []byte {
	in := edgeframe.Batch{From: 1000, To: 2999, Headers: 2000}
	for i := range n {
		in.Items = append(in.Items, edgeframe.Item{
			Key:   fmt.Sprintf("binary-%08x", i),
			Value: json.RawMessage(fmt.Sprintf(`{"subject":"some.file.part%03d.rar yEnc (1/50)","parts":[%d,%d],"bytes":%d}`, i, i, i+1, i*1000)),
		})
	}
	body, err := json.Marshal(in)
	if err != nil {
		b.Fatal(err)
	}
	return body
}

// BenchmarkDecodeBatch1000 decodes a 1000-item batch with DecodeBatch.
func BenchmarkDecodeBatch1000(b *testing.B) {
	body := batchBody(b, 1000)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := edgeframe.DecodeBatch(bytes.NewReader(body), 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBaselineUnmarshalBatch1000 decodes the same body with a plain
// json.Unmarshal, which checks none of DecodeBatch's rules.
func BenchmarkBaselineUnmarshalBatch1000(b *testing.B) {
	body := batchBody(b, 1000)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		raw, err := io.ReadAll(bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		var batch edgeframe.Batch
		if err := json.Unmarshal(raw, &batch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMarshalBatch1000 encodes a 1000-item batch with MarshalBatch.
func BenchmarkMarshalBatch1000(b *testing.B) {
	benchEncode(b, unmarshalled(b, batchBody(b, 1000)), edgeframe.MarshalBatch)
}

// BenchmarkBaselineMarshalBatch1000 encodes the same batch with a plain
// json.Marshal, which checks none of MarshalBatch's rules.
func BenchmarkBaselineMarshalBatch1000(b *testing.B) {
	benchEncode(b, unmarshalled(b, batchBody(b, 1000)), marshalJSON)
}

// unmarshalled decodes body with json.Unmarshal.
func unmarshalled(b *testing.B, body []byte) edgeframe.Batch {
	var in edgeframe.Batch
	if err := json.Unmarshal(body, &in); err != nil {
		b.Fatal(err)
	}
	return in
}

func marshalJSON(in edgeframe.Batch) ([]byte, error) { return json.Marshal(in) }

// benchEncode times encode of in, counting the bytes it writes.
func benchEncode(b *testing.B, in edgeframe.Batch, encode func(edgeframe.Batch) ([]byte, error)) {
	body, err := encode(in)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := encode(in); err != nil {
			b.Fatal(err)
		}
	}
}

// binaryBatch is a batch of n items shaped like the collator's: a binary
// of 2 to 33 parts each, about 0.5 to 4 KiB of JSON, message ids escaped
// as json.Marshal escapes them.
func binaryBatch(n int) edgeframe.Batch {
	in := edgeframe.Batch{From: 1, To: int64(n), Headers: int64(n)}
	article := 1_000_000
	for i := range n {
		var v bytes.Buffer
		fmt.Fprintf(&v, `{"subject":"Quiet.River.%d.1080p.WEB-DL.x264-SYN [%02d/27] - \"Quiet.River.%d.part%02d.rar\" yEnc",`, i, i%27+1, i, i%27+1)
		fmt.Fprintf(&v, `"name":"Quiet.River.%d.part%02d.rar","poster":"poster \u003cposter@example.invalid\u003e","group":"alt.binaries.bench",`, i, i%27+1)
		parts := 2 + i*7%32
		fmt.Fprintf(&v, `"date":"Mon, 01 Jan 2024 12:00:00 +0000","total":%d,"complete":true,"parts":[`, parts)
		for p := 1; p <= parts; p++ {
			article++
			if p > 1 {
				v.WriteByte(',')
			}
			fmt.Fprintf(&v, `{"n":%d,"article":%d,"messageId":"\u003c%d@alt.binaries.bench.synthetic\u003e","bytes":%d}`, p, article, article, 739_000+article%2000)
		}
		v.WriteString("]}")
		in.Items = append(in.Items, edgeframe.Item{Key: fmt.Sprintf("%032x", i), Value: v.Bytes()})
	}
	return in
}

// BenchmarkMarshalBinaries1000 encodes 1000 collator-shaped items, about
// 2 MB, as the worker does.
func BenchmarkMarshalBinaries1000(b *testing.B) {
	benchEncode(b, binaryBatch(1000), edgeframe.MarshalBatch)
}

// BenchmarkBaselineMarshalBinaries1000 encodes the same items with a plain
// json.Marshal.
func BenchmarkBaselineMarshalBinaries1000(b *testing.B) {
	benchEncode(b, binaryBatch(1000), marshalJSON)
}

// BenchmarkMarshalBinaries10000 encodes 10,000 of them, about 22 MB, the
// ingest bench's batch: runs of them on up to GOMAXPROCS goroutines.
func BenchmarkMarshalBinaries10000(b *testing.B) {
	benchEncode(b, binaryBatch(10000), edgeframe.MarshalBatch)
}

// BenchmarkBaselineMarshalBinaries10000 encodes the same items with a
// plain json.Marshal.
func BenchmarkBaselineMarshalBinaries10000(b *testing.B) {
	benchEncode(b, binaryBatch(10000), marshalJSON)
}

// BenchmarkDecodeBinaries1000 decodes the same body as the coordinator
// does, its length known.
func BenchmarkDecodeBinaries1000(b *testing.B) {
	benchDecodeBinaries(b, 1000, edgeframe.MarshalBatch, edgeframe.DecodeBatchSize)
}

// BenchmarkDecodeBinaries10000 decodes the ingest bench's 10,000-item
// body (22 MB) as the coordinator does: on up to GOMAXPROCS goroutines.
func BenchmarkDecodeBinaries10000(b *testing.B) {
	benchDecodeBinaries(b, 10000, edgeframe.MarshalBatch, edgeframe.DecodeBatchSize)
}

// benchDecodeBinaries decodes the body encode makes of binaryBatch(n)
// with decode, from a reader that is not a bytes.Reader, as a request's
// body is not.
func benchDecodeBinaries(b *testing.B, n int, encode func(edgeframe.Batch) ([]byte, error), decode func(io.Reader, int64, int64) (edgeframe.Batch, error)) {
	body, err := encode(binaryBatch(n))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decode(io.MultiReader(bytes.NewReader(body)), int64(len(body)), 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeBatchesBinaries decodes a POST /v1/batches body of four
// 1000-item batches (about 9 MB), as the coordinator does.
func BenchmarkDecodeBatchesBinaries(b *testing.B) {
	body := batchesBody(b)
	for b.Loop() {
		if _, err := edgeframe.DecodeBatches(io.MultiReader(bytes.NewReader(body)), int64(len(body)), 0, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBaselineUnmarshalBatchesBinaries decodes the same body with a
// plain json.Unmarshal, which checks none of DecodeBatches' rules.
func BenchmarkBaselineUnmarshalBatchesBinaries(b *testing.B) {
	body := batchesBody(b)
	for b.Loop() {
		var bs struct{ Batches []edgeframe.RangeBatch }
		if err := json.Unmarshal(body, &bs); err != nil {
			b.Fatal(err)
		}
	}
}

// batchesBody is a POST /v1/batches body of four binaryBatch(1000), with
// b's bytes set to its length.
func batchesBody(b *testing.B) []byte {
	var bs []edgeframe.RangeBatch
	for i := range 4 {
		bs = append(bs, edgeframe.RangeBatch{Range: int64(i + 1), Token: 1, Batch: binaryBatch(1000)})
	}
	body, err := edgeframe.MarshalBatches(bs)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	return body
}

// BenchmarkBaselineUnmarshalBinaries10000 decodes the same body with a
// plain json.Unmarshal, which checks none of DecodeBatch's rules.
func BenchmarkBaselineUnmarshalBinaries10000(b *testing.B) {
	body, err := edgeframe.MarshalBatch(binaryBatch(10000))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var batch edgeframe.Batch
		if err := json.Unmarshal(body, &batch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMarshalBinaries10000Binary encodes the ingest bench's batch in
// the binary layout (BatchType), as edge.Client sends it: the values
// copied, not checked.
func BenchmarkMarshalBinaries10000Binary(b *testing.B) {
	benchEncode(b, binaryBatch(10000), edgeframe.MarshalBatchBinary)
}

// BenchmarkDecodeBinaries10000Binary decodes that body as the coordinator
// does, every value checked.
func BenchmarkDecodeBinaries10000Binary(b *testing.B) {
	benchDecodeBinaries(b, 10000, edgeframe.MarshalBatchBinary, edgeframe.DecodeBatchBinary)
}

// BenchmarkPostBinaries10000 sends the ingest bench's batch (22 MB) in an
// HTTP request over loopback, as edge.Client and the coordinator do: the
// client encodes it as it sends it (BatchBinaryReader), the server checks
// its values as it arrives (DecodeBatchBinary from the request's body).
// The baselines, in the same run: "whole" encodes it whole before sending
// and reads it whole before decoding, the way both did before; "bytes"
// sends the bytes of the encoding and the server reads them to nothing,
// the transfer alone, which no decoder can beat.
func BenchmarkPostBinaries10000(b *testing.B) {
	bt := binaryBatch(10000)
	body, err := edgeframe.MarshalBatchBinary(bt)
	if err != nil {
		b.Fatal(err)
	}
	post := func(b *testing.B, handle func(r *http.Request) error, send func() io.Reader) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := handle(r); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
			}
		}))
		defer srv.Close()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			req, err := http.NewRequest(http.MethodPost, srv.URL, send())
			if err != nil {
				b.Fatal(err)
			}
			req.ContentLength = int64(len(body))
			resp, err := srv.Client().Do(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatal(resp.Status)
			}
		}
	}
	b.Run("stream", func(b *testing.B) {
		post(b, func(r *http.Request) error {
			_, err := edgeframe.DecodeBatchBinary(r.Body, r.ContentLength, 0)
			return err
		}, func() io.Reader {
			r, err := edgeframe.NewBatchBinaryReader(bt)
			if err != nil {
				b.Fatal(err)
			}
			return r
		})
	})
	b.Run("whole", func(b *testing.B) {
		post(b, func(r *http.Request) error {
			whole := make([]byte, r.ContentLength)
			if _, err := io.ReadFull(r.Body, whole); err != nil {
				return err
			}
			_, err := edgeframe.DecodeBatchBinary(bytes.NewReader(whole), r.ContentLength, 0)
			return err
		}, func() io.Reader {
			whole, err := edgeframe.MarshalBatchBinary(bt)
			if err != nil {
				b.Fatal(err)
			}
			return bytes.NewReader(whole)
		})
	})
	b.Run("bytes", func(b *testing.B) {
		post(b, func(r *http.Request) error {
			_, err := io.Copy(io.Discard, r.Body)
			return err
		}, func() io.Reader { return bytes.NewReader(body) })
	})
}
