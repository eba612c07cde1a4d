package nntp_test

import (
	"io"
	"net/textproto"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/nntp"
)

// BenchmarkFindDateGiga finds the article of a date in the generated group
// of 10^9 articles (above 2^40, with holes and expired first articles) on
// the in-repo server over loopback, one date after another across the
// group. The target: at most 64 OVER calls (calls/op) and under 2 s a
// search (ns/op). BenchmarkFindDateRawOver is its baseline: the same
// number of single-article OVER round trips on a bare net/textproto
// connection, the least a bisection by OVER can cost.
func BenchmarkFindDateGiga(b *testing.B) {
	srv := serve(b, genConfig(gigaGen()))
	src := open(b, srv, func(c *nntp.Config) { c.MaxConns = 1 })
	ctx := b.Context()
	calls := 0
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		n := gigaLow + int64(i)*7_777_777%1_000_000_000
		pt, err := src.FindDate(ctx, testGroup, gigaDate(n))
		if err != nil {
			b.Fatal(err)
		}
		if pt.Calls > nntp.MaxDateCalls {
			b.Fatalf("%d OVER calls", pt.Calls)
		}
		calls += pt.Calls
	}
	b.ReportMetric(float64(calls)/float64(b.N), "calls/op")
}

func BenchmarkFindDateRawOver(b *testing.B) {
	srv := serve(b, genConfig(gigaGen()))
	c := rawConn(b, srv.Addr())
	// The most OVER windows a search may send: the bound's own cost on
	// this server, whatever path a search takes within it.
	const calls = nntp.MaxDateCalls
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		for k := range calls {
			n := gigaFirst + (int64(i)*calls+int64(k))*1_234_567%800_000_000
			require.NoError(b, c.PrintfLine("OVER %d-%d", n, n+nntp.DateWindow-1))
			if _, _, err := c.ReadCodeLine(224); err != nil {
				b.Fatal(err)
			}
			if _, err := io.Copy(io.Discard, c.DotReader()); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(calls, "calls/op")
}

// TestBackfillFindDateGigaCalls: the benchmark's searches stay within
// MaxDateCalls (the behaviour; the time is the benchmark's to report).
func TestBackfillFindDateGigaCalls(t *testing.T) {
	t.Parallel()
	srv := serve(t, genConfig(gigaGen()))
	src := open(t, srv, nil)
	for i := range 20 {
		n := gigaLow + int64(i)*49_999_999
		pt, err := src.FindDate(ctxT(t), testGroup, gigaDate(n).Add(time.Duration(i)*time.Minute))
		require.NoError(t, err)
		require.LessOrEqual(t, pt.Calls, nntp.MaxDateCalls)
	}
}

// rawConn is a bare connection with the test group selected.
func rawConn(b *testing.B, addr string) *textproto.Conn {
	c, err := textproto.Dial("tcp", addr)
	require.NoError(b, err)
	b.Cleanup(func() { c.Close() })
	_, _, err = c.ReadCodeLine(200)
	require.NoError(b, err)
	require.NoError(b, c.PrintfLine("GROUP %s", testGroup))
	_, _, err = c.ReadCodeLine(211)
	require.NoError(b, err)
	return c
}
