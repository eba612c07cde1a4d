package yenc_test

import (
	"bytes"
	"testing"

	"github.com/edgeindex/edgeindex/internal/yenctest"
	"github.com/edgeindex/edgeindex/yenc"
)

// FuzzDecode: whatever a provider sends, Decode returns a part that holds
// together (its data exactly the bytes it claims, within the limit) or an
// error, and never panics.
func FuzzDecode(f *testing.F) {
	for _, p := range yenctest.Encode("seed.rar", []byte("=\x00\n\r\t .data of a seed"), 8, 16) {
		f.Add(p.Body)
	}
	f.Add([]byte("=ybegin line=128 size=5 name=x\n" + "\x92\x8f\x96\x96\x99" + "\n=yend size=5 crc32=3610a686\n"))
	f.Add([]byte("=ybegin part=1 total=1 size=99999999999 name=x\n=ypart begin=1 end=99999999999\n=yend size=1\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		const max = 1 << 16
		p, err := yenc.Decode(body, max)
		if err != nil {
			return
		}
		if int64(len(p.Data)) != p.End-p.Begin+1 || len(p.Data) > max || p.Begin < 1 || p.End > p.Size {
			t.Fatalf("decoded %d bytes as %d-%d of %d", len(p.Data), p.Begin, p.End, p.Size)
		}
	})
}

// FuzzRoundTrip: any bytes, posted in parts by the test encoder, decode
// back to themselves.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("hello"), uint8(3))
	f.Add([]byte{0, '\n', '\r', '=', '\t', ' ', '.', 214, 224, 227}, uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, size uint8) {
		if len(data) == 0 {
			return
		}
		var got []byte
		for _, tp := range yenctest.Encode("f.bin", data, int(size)+1, 16) {
			p, err := yenc.Decode(tp.Body, 512)
			if err != nil {
				t.Fatalf("part %d: %v", tp.Number, err)
			}
			got = append(got, p.Data...)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("decoded %q, posted %q", got, data)
		}
	})
}
