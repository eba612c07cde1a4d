package coordinator_test

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/coordinator"
	"github.com/edgeindex/edgeindex/edgeframe"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/sources"
	"github.com/edgeindex/edgeindex/spool"
)

// BenchmarkStreamRange streams a 20-chunk range from the disk spool through
// an in-process HTTP server into the frame decoder. "baseline" serves the
// same frame bytes from one file with a plain net/http handler, decoded the
// same way, in the same run. "synthetic" chunks are the synthetic source's
// (about 40 KiB: its lines compress far better than real ones); "180KiB"
// chunks are the size a real 2000-line overview chunk gzips to.
func BenchmarkStreamRange(b *testing.B) {
	src, err := sources.NewSynthetic(sources.SyntheticConfig{})
	require.NoError(b, err)
	b.Run("synthetic", func(b *testing.B) {
		benchStream(b, func(span lease.Span) []byte {
			data, err := src.Fetch(b.Context(), "alt.binaries.bench", span)
			require.NoError(b, err)
			return data
		})
	})
	b.Run("180KiB", func(b *testing.B) {
		rnd := rand.New(rand.NewPCG(1, 2))
		benchStream(b, func(lease.Span) []byte {
			data := make([]byte, 180<<10)
			for i := range data {
				data[i] = byte(rnd.Uint32())
			}
			return data
		})
	})
}

func benchStream(b *testing.B, chunkOf func(lease.Span) []byte) {
	const chunk = 2000
	r := lease.Range{ID: 1, Group: "alt.binaries.bench", Start: 1, End: 20 * chunk, Next: 1, State: lease.StateLeased}
	sp, err := spool.Open(b.TempDir(), spool.Config{})
	require.NoError(b, err)
	b.Cleanup(func() { sp.Close() })
	var frames bytes.Buffer
	w := edgeframe.NewWriter(&frames)
	for _, span := range lease.Spans(r.Start, r.End, chunk) {
		data := chunkOf(span)
		require.NoError(b, sp.Put(r.ID, span, data))
		require.NoError(b, w.Chunk(span.From, span.To, data))
	}
	require.NoError(b, w.End())
	file := filepath.Join(b.TempDir(), "frames")
	require.NoError(b, os.WriteFile(file, frames.Bytes(), 0o644))
	size := int64(frames.Len())

	read := func(b *testing.B, url string) {
		resp, err := http.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		rd, _ := edgeframe.NewReader(resp.Body, edgeframe.Config{})
		for {
			if _, err := rd.Next(); err != nil {
				if !errors.Is(err, io.EOF) {
					b.Fatal(err)
				}
				return
			}
		}
	}
	b.Run("spool", func(b *testing.B) {
		srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
			rw.Header().Set("Content-Type", edgeframe.ContentType)
			w := coordinator.HTTPFrames(rw, time.Minute)
			if err := coordinator.Stream(req.Context(), w, r, chunk, coordinator.StreamConfig{Spool: sp}); err != nil {
				b.Error(err)
			}
		}))
		defer srv.Close()
		b.SetBytes(size)
		for b.Loop() {
			read(b, srv.URL)
		}
	})
	b.Run("baseline", func(b *testing.B) {
		srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
			http.ServeFile(rw, req, file)
		}))
		defer srv.Close()
		b.SetBytes(size)
		for b.Loop() {
			read(b, srv.URL)
		}
	})
}
