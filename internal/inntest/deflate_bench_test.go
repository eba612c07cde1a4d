package inntest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/edgeindex/edgeindex/internal/inntest"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/nntp"
)

// benchArticles is how many generated articles (multi-part yEnc posts
// among text posts) the deflate benchmarks read, in chunks of benchChunk,
// benchConns at once, as the prefetcher does.
const (
	benchArticles = 8000
	benchChunk    = 1000
	benchConns    = 4
)

// deflateBench is one Source reading INN through its own proxy.
type deflateBench struct {
	name  string
	src   *nntp.Source
	wire  *proxy
	lines int64
	bytes int64
	took  time.Duration
}

// startDeflateBench posts the articles and returns a plain and a deflated
// Source on INN, each through a proxy of rate bytes a second (0: no
// limit), connected and logged in.
func startDeflateBench(b *testing.B, rate float64) []*deflateBench {
	s := inntest.Start(b)
	s.NewGroup(b, deflateGroup)
	s.Post(b, inntest.Generate(benchArticles, deflateGroup))
	var out []*deflateBench
	for _, m := range []nntp.CompressMode{nntp.CompressNone, nntp.CompressDeflate} {
		p := startProxy(b, s.Addr(), rate)
		src, err := nntp.New(nntp.Config{Addr: p.addr(), MaxConns: benchConns + 1, Compress: m})
		require.NoError(b, err)
		b.Cleanup(func() { src.Close() })
		require.NoError(b, src.Check(context.Background()))
		out = append(out, &deflateBench{name: m.String(), src: src, wire: p})
	}
	return out
}

// readAll fetches the whole group in chunks, counting the lines read, the
// bytes on the wire and the time.
func (d *deflateBench) readAll(b *testing.B) {
	before, lines, began := d.wire.bytes(), d.src.Stats().Lines, time.Now()
	var g errgroup.Group
	g.SetLimit(benchConns)
	for from := int64(1); from <= benchArticles; from += benchChunk {
		g.Go(func() error {
			_, err := d.src.Fetch(context.Background(), deflateGroup, lease.Span{From: from, To: from + benchChunk - 1})
			return err
		})
	}
	require.NoError(b, g.Wait())
	d.took += time.Since(began)
	d.bytes += d.wire.bytes() - before
	// The lines the Source read, not the articles asked for: a short
	// reply must not pass for a fast one.
	d.lines += d.src.Stats().Lines - lines
}

// BenchmarkDeflateINNWire: the bytes on the wire (both ways, through a
// counting proxy) per overview line read from INN's nnrpd, COMPRESS
// DEFLATE against plain text in the same run. Target: deflate at most
// 0.35x plain.
//
//	go test -run '^$' -bench DeflateINN -benchtime 3x ./internal/inntest/
func BenchmarkDeflateINNWire(b *testing.B) {
	runs := startDeflateBench(b, 0)
	for b.Loop() {
		for _, r := range runs {
			r.readAll(b)
		}
	}
	plain, deflate := runs[0], runs[1]
	require.Equal(b, deflate.src.Stats().Dials, deflate.src.Stats().Deflate, "every connection deflated")
	pb, db := float64(plain.bytes)/float64(plain.lines), float64(deflate.bytes)/float64(deflate.lines)
	b.ReportMetric(pb, "plain-wire-B/line")
	b.ReportMetric(db, "deflate-wire-B/line")
	b.ReportMetric(db/pb, "deflate/plain")
	b.ReportMetric(float64(plain.lines)/plain.took.Seconds(), "plain-lines/s")
	b.ReportMetric(float64(deflate.lines)/deflate.took.Seconds(), "deflate-lines/s")
}

// BenchmarkDeflateINN100Mbit: overview lines a second read from INN
// through a proxy that carries 100 Mbit/s each way, COMPRESS DEFLATE
// against plain text in the same run. Target: deflate at least 2.5x plain.
func BenchmarkDeflateINN100Mbit(b *testing.B) {
	runs := startDeflateBench(b, 100e6/8)
	for b.Loop() {
		for _, r := range runs {
			r.readAll(b)
		}
	}
	plain, deflate := runs[0], runs[1]
	pl, dl := float64(plain.lines)/plain.took.Seconds(), float64(deflate.lines)/deflate.took.Seconds()
	b.ReportMetric(pl, "plain-lines/s")
	b.ReportMetric(dl, "deflate-lines/s")
	b.ReportMetric(dl/pl, "speedup-x")
}
