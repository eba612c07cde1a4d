package inflate_test

import (
	"bytes"
	"compress/flate"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/internal/inflate"
)

// partialFlushed is three replies deflated by zlib (level 6, raw), each
// followed by Z_PARTIAL_FLUSH, as INN's nnrpd sends them: a short one in
// a fixed-code block, 3373 bytes of overview in a dynamic one, and QUIT's.
var partialFlushed = []string{
	"3232345430355000138939257a15bc5c0001",
	"38ad7bd5b881288ae3b50c7e07e1ca2e22cf39579f10429a3c40dc1a178bbd0b82cd6a9137ebe4ed73d3699ae3cb942af49f667ecc21db7ab9eed7ebbcffa8e7d361597fed2ef372aa0fcbf1b87cbcdfdea07a4e78e4f0527fa9ef7efe9ef797e669f63f1aa68406694ce7e6bc5b2ffeb1eed6bbfaef8fd36b7d8fc72e3d54e7e5fdb25febafe7ef7f9af974dd1de7b76f55e5a77a939126b74dcaa679d3224ddb364d365b6fb69166bb6db6b2d979b38b34bb6db393cdde9b7da4d96f9bbd6c0ede1c22cd61db1c6473f4e618698edbe6289b9337a74873da3627d944aa9e910251a4ecd2275d754a8850424e495b8263420413324cd09ae09c10e1848c13b427382844402103052d0a4e0a1152c848419b82a34204153254d0aae0ac1061858c15b42b382c44602183052d0b4e0b115ac86841dba2db62c416335bd4b6e8b618b1c5cc163f79a7dc1623b6983f54da16dd1623b698d9a2b645b7c5882d66b6a86dd16d31628b992d6a5b745b8cd862668bda16ff3f59919b95f29ba56d712c1a40d4b638954d206dcb52d908d2b60c4533c8b42d63d110b24f56a0154d21d3b6ac2d1a43a66d595734874cdbb2be681099b66543d122326dcbc6a24564da964d458bc8b4ade6f6e69f00",
	"3232305548aa4ce5e50208",
}

func replies() [][]byte {
	var over bytes.Buffer
	over.WriteString("224 overview information follows\r\n")
	for n := 1; n < 40; n++ {
		fmt.Fprintf(&over, "%d\t[%02d/27] - \"Quiet.River.2001.1080p.part%02d.rar\" yEnc (%d/50)\tposter <p@x.invalid>\t\t\r\n", n, n%27, n%27, n%50)
	}
	over.WriteString(".\r\n")
	return [][]byte{[]byte("211 50 1 50 alt.x\r\n"), over.Bytes(), []byte("205 bye\r\n")}
}

// gated hands out one flush's bytes at a time, the next only once the
// reply before it was read whole: a reader that asks for more before
// would wait for ever on a real connection.
type gated struct {
	flushes [][]byte
	open    int // flushes released
	r       bytes.Reader
}

var errWouldBlock = errors.New("read past the flush: a connection would wait here")

func (g *gated) Read(p []byte) (int, error) {
	if g.r.Len() == 0 {
		return 0, errWouldBlock
	}
	return g.r.Read(p)
}

func (g *gated) ReadByte() (byte, error) {
	if g.r.Len() == 0 {
		return 0, errWouldBlock
	}
	return g.r.ReadByte()
}

func (g *gated) release() {
	rest := make([]byte, g.r.Len())
	g.r.Read(rest)
	g.r.Reset(append(rest, g.flushes[g.open]...))
	g.open++
}

// TestPartialFlushReadable: every reply flushed with Z_PARTIAL_FLUSH is
// read whole from its own bytes, with nothing of the next; compress/flate
// cannot.
func TestPartialFlushReadable(t *testing.T) {
	want := replies()
	for _, std := range []bool{false, true} {
		g := &gated{}
		for _, h := range partialFlushed {
			b, err := hex.DecodeString(h)
			require.NoError(t, err)
			g.flushes = append(g.flushes, b)
		}
		var r io.Reader
		if std {
			r = flate.NewReader(g)
		} else {
			r = inflate.NewReader(g)
		}
		var failed error
		for i, w := range want {
			g.release()
			got := make([]byte, len(w))
			if _, err := io.ReadFull(r, got); err != nil {
				failed = err
				break
			}
			require.Equal(t, string(w), string(got), "reply %d", i)
		}
		if std {
			require.ErrorIs(t, failed, errWouldBlock, "compress/flate waits for the next bytes")
		} else {
			require.NoError(t, failed)
		}
	}
}

// FuzzSameAsCompressFlate: on any input, the copy inflates what
// compress/flate does and fails where and as it fails.
func FuzzSameAsCompressFlate(f *testing.F) {
	for _, h := range partialFlushed {
		b, _ := hex.DecodeString(h)
		f.Add(b)
	}
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, flate.BestCompression)
	for _, r := range replies() {
		w.Write(r)
		w.Flush()
	}
	w.Close()
	f.Add(buf.Bytes())
	f.Add([]byte{0x06})
	f.Fuzz(func(t *testing.T, in []byte) {
		want, werr := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(in)), 1<<20))
		got, gerr := io.ReadAll(io.LimitReader(inflate.NewReader(bytes.NewReader(in)), 1<<20))
		require.Equal(t, want, got)
		// The same kind of error, not only both or neither: the copy's
		// errors are its own types, so compare their text, which holds the
		// kind (corrupt input, unexpected EOF) and the offset.
		require.Equal(t, fmt.Sprint(werr), fmt.Sprint(gerr))
	})
}
