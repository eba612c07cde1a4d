package yenc_test

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/internal/yenctest"
	"github.com/edgeindex/edgeindex/yenc"
)

// Every part of a post made by the test encoder decodes to its bytes, in
// its place, with the body's line ends as "\n" or "\r\n".
func TestDecodeParts(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	data := make([]byte, 10_000)
	for i := range data {
		data[i] = byte(rng.UintN(256))
	}
	data[0], data[1], data[2] = '=', 0, '\n' // escapes at a line's start
	for _, crlf := range []bool{false, true} {
		parts := yenctest.Encode("the file.rar", data, 3000, 128)
		require.Len(t, parts, 4)
		var joined []byte
		for _, tp := range parts {
			body := tp.Body
			if crlf {
				body = bytes.ReplaceAll(body, []byte("\n"), []byte("\r\n"))
			}
			p, err := yenc.Decode(append([]byte("some text before\n"), body...), 4096)
			require.NoError(t, err)
			require.Equal(t, "the file.rar", p.Name)
			require.Equal(t, int64(len(data)), p.Size)
			require.Equal(t, tp.Number, p.Number)
			require.Equal(t, 4, p.Total)
			require.Equal(t, tp.Begin, p.Begin)
			require.Equal(t, tp.End, p.End)
			require.Equal(t, tp.Data, p.Data)
			joined = append(joined, p.Data...)
		}
		require.Equal(t, data, joined)
	}
}

func TestDecodeSinglePart(t *testing.T) {
	t.Parallel()
	body := "=ybegin line=128 size=5 name=a b.nfo\n" + enc("hello") + "\n=yend size=5 crc32=3610a686\n"
	p, err := yenc.Decode([]byte(body), 100)
	require.NoError(t, err)
	require.Equal(t, "a b.nfo", p.Name)
	require.Equal(t, []byte("hello"), p.Data)
	require.Equal(t, int64(1), p.Begin)
	require.Equal(t, int64(5), p.End)
	require.Zero(t, p.Number)
}

// enc is the yEnc of s, which must need no escape.
func enc(s string) string {
	b := []byte(s)
	for i := range b {
		b[i] += 42
	}
	return string(b)
}

// Hostile or broken bodies are refused with the error that says why, and
// a part that claims more than the limit decodes nothing.
func TestDecodeRefuses(t *testing.T) {
	t.Parallel()
	good := "=ybegin part=1 total=2 line=128 size=10 name=x\n=ypart begin=1 end=5\n" + enc("hello") + "\n=yend size=5 part=1 pcrc32=3610a686\n"
	_, err := yenc.Decode([]byte(good), 100)
	require.NoError(t, err)
	for _, c := range []struct {
		name, body string
		want       error
	}{
		{"no ybegin", "hello\n", yenc.ErrNotYEnc},
		{"ybegin mid-line", "x =ybegin size=1 name=a\n", yenc.ErrNotYEnc},
		{"bad crc", strings.Replace(good, "3610a686", "00000000", 1), yenc.ErrCorrupt},
		{"crc not hex", strings.Replace(good, "3610a686", "zz", 1), yenc.ErrCorrupt},
		{"no yend", strings.Split(good, "=yend")[0], yenc.ErrCorrupt},
		{"more data", strings.Replace(good, enc("hello"), enc("hello!"), 1), yenc.ErrCorrupt},
		{"less data", strings.Replace(good, enc("hello"), enc("hell"), 1), yenc.ErrCorrupt},
		{"yend size", strings.Replace(good, "=yend size=5", "=yend size=6", 1), yenc.ErrCorrupt},
		{"yend part", strings.Replace(good, "part=1 pcrc32", "part=2 pcrc32", 1), yenc.ErrCorrupt},
		{"no ypart", strings.Replace(good, "=ypart begin=1 end=5\n", "", 1), yenc.ErrCorrupt},
		{"end past size", strings.Replace(good, "end=5", "end=11", 1), yenc.ErrCorrupt},
		{"begin after end", strings.Replace(good, "begin=1", "begin=6", 1), yenc.ErrCorrupt},
		{"negative size", strings.Replace(good, "size=10", "size=-1", 1), yenc.ErrCorrupt},
		{"part past total", strings.Replace(good, "part=1 total=2", "part=3 total=2", 1), yenc.ErrCorrupt},
		{"no size", strings.Replace(good, " size=10", "", 1), yenc.ErrCorrupt},
		{"claims 4 GB", "=ybegin line=128 size=4294967296 name=x\n" + enc("hello") + "\n=yend size=5\n", yenc.ErrTooLarge},
		{"claims past the limit", strings.Replace(strings.Replace(good, "size=10", "size=1000", 1), "end=5", "end=500", 1), yenc.ErrTooLarge},
	} {
		_, err := yenc.Decode([]byte(c.body), 100)
		require.ErrorIs(t, err, c.want, c.name)
	}
}
