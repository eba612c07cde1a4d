package nntp_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/nntp"
	"github.com/edgeindex/edgeindex/nntp/nntptest"
	"github.com/edgeindex/edgeindex/sources/sourcetest"
)

const testGroup = "alt.binaries.test"

// serve starts a test server, closed when the test ends.
func serve(t testing.TB, cfg nntptest.Config) *nntptest.Server {
	t.Helper()
	srv, err := nntptest.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	return srv
}

// open returns a Source on srv, closed when the test ends (before srv).
func open(t testing.TB, srv *nntptest.Server, mod func(*nntp.Config)) *nntp.Source {
	t.Helper()
	cfg, err := nntp.ParseURL(srv.URL())
	require.NoError(t, err)
	cfg.TLSConfig = srv.ClientTLS()
	cfg.DialBackoff = time.Millisecond
	if mod != nil {
		mod(&cfg)
	}
	src, err := nntp.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { src.Close() })
	return src
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func span(from, to int64) lease.Span { return lease.Span{From: from, To: to} }

// chunkText is the inflated text of a chunk, checked with overview.ReadChunk.
func chunkText(t testing.TB, chunk []byte) string {
	t.Helper()
	return string(bytes.Join(sourcetest.Lines(t, chunk), nil))
}

// lines joins lines as a chunk holds them.
func linesText(lines ...[]byte) string {
	var b bytes.Buffer
	for _, l := range lines {
		b.Write(l)
		b.WriteByte('\n')
	}
	return b.String()
}

func oneGroup(lines [][]byte) []nntptest.Group {
	return []nntptest.Group{{Name: testGroup, Lines: lines}}
}

// gzipIf is CompressGzip when on, else CompressNone: the two modes of the
// tests written when compression was XFEATURE COMPRESS GZIP or nothing.
func gzipIf(on bool) nntp.CompressMode {
	if on {
		return nntp.CompressGzip
	}
	return nntp.CompressNone
}
