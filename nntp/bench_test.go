package nntp_test

import (
	"fmt"
	"io"
	"net/textproto"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/nntp"
	"github.com/edgeindex/edgeindex/nntp/nntptest"
)

// The benchmarks fetch 2000-line chunks of realistic overview lines (about
// 250 bytes, yEnc multi-part subjects) from nntptest over loopback, one
// connection, one chunk at a time. BenchmarkOverChunk goes through
// Source.Fetch into a gzipped spool chunk; BenchmarkOverBaseline sends the
// same OVER on a bare net/textproto connection and reads the response with
// DotReader into io.Discard: the obvious raw way, which keeps nothing.

const (
	benchChunk  = 2000
	benchChunks = 10
)

func benchServer(b *testing.B) *nntptest.Server {
	srv, err := nntptest.New(nntptest.Config{Groups: []nntptest.Group{{
		Name:  testGroup,
		Lines: nntptest.Lines(testGroup, 5_000_000_001, 5_000_000_000+benchChunk*benchChunks),
	}}})
	require.NoError(b, err)
	b.Cleanup(func() { srv.Close() })
	return srv
}

func benchSpan(i int) lease.Span {
	from := int64(5_000_000_001 + (i%benchChunks)*benchChunk)
	return lease.Span{From: from, To: from + benchChunk - 1}
}

func BenchmarkOverChunk(b *testing.B) {
	srv := benchServer(b)
	src, err := nntp.New(nntp.Config{Addr: srv.Addr(), MaxConns: 1})
	require.NoError(b, err)
	defer src.Close()
	ctx := b.Context()
	var size int64
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		chunk, err := src.Fetch(ctx, testGroup, benchSpan(i))
		if err != nil {
			b.Fatal(err)
		}
		size += int64(len(chunk))
	}
	b.ReportMetric(float64(b.N*benchChunk)/b.Elapsed().Seconds(), "lines/s")
	b.ReportMetric(float64(size)/float64(b.N), "gzB/chunk")
	if st := src.Stats(); st.Lines != int64(b.N*benchChunk) || st.Dropped != 0 {
		b.Fatalf("stats %+v", st)
	}
}

func BenchmarkOverBaseline(b *testing.B) {
	srv := benchServer(b)
	c, err := textproto.Dial("tcp", srv.Addr())
	require.NoError(b, err)
	defer c.Close()
	_, _, err = c.ReadCodeLine(200)
	require.NoError(b, err)
	_, err = c.Cmd("GROUP %s", testGroup)
	require.NoError(b, err)
	_, _, err = c.ReadCodeLine(211)
	require.NoError(b, err)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		sp := benchSpan(i)
		if err := c.PrintfLine("OVER %d-%d", sp.From, sp.To); err != nil {
			b.Fatal(err)
		}
		if _, _, err := c.ReadCodeLine(224); err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, c.DotReader())
		if err != nil || n < benchChunk*200 {
			b.Fatal(fmt.Sprint(n, err))
		}
	}
	b.ReportMetric(float64(b.N*benchChunk)/b.Elapsed().Seconds(), "lines/s")
}
