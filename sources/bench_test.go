package sources

import (
	"bytes"
	"compress/gzip"
	"context"
	"testing"

	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/overview"
)

// BenchmarkSynthetic measures Synthetic.Fetch of one 2000-article chunk (the
// default chunk size) in lines/s, next to two baselines measured in the same
// run: building the same lines without gzip, and the same bytes through
// gzip.BestSpeed alone.
func BenchmarkSynthetic(b *testing.B) {
	const group = "alt.binaries.test"
	span := lease.Span{From: 1_000_001, To: 1_002_000}
	lines := float64(span.Len())
	report := func(b *testing.B) {
		b.ReportMetric(lines*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
	}

	b.Run("fetch", func(b *testing.B) {
		src, err := NewSynthetic(SyntheticConfig{})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := src.Fetch(ctx, group, span); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})

	b.Run("baseline=lines-only", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 1<<20)
		for b.Loop() {
			g := newSynthGen(group)
			buf = buf[:0]
			for n := span.From; n <= span.To; n++ {
				buf = g.appendLine(buf, n)
			}
		}
		report(b)
	})

	b.Run("baseline=gzip-only", func(b *testing.B) {
		raw := syntheticLines(group, span)
		zw, err := gzip.NewWriterLevel(nil, gzip.BestSpeed)
		if err != nil {
			b.Fatal(err)
		}
		var out bytes.Buffer
		b.SetBytes(int64(len(raw)))
		b.ReportAllocs()
		for b.Loop() {
			out.Reset()
			zw.Reset(&out)
			if _, err := zw.Write(raw); err != nil {
				b.Fatal(err)
			}
			if err := zw.Close(); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
}

// BenchmarkReadChunk measures inflating and parsing a 2000-line synthetic
// chunk with overview.ReadChunk, next to inflating it alone.
func BenchmarkReadChunk(b *testing.B) {
	src, err := NewSynthetic(SyntheticConfig{})
	if err != nil {
		b.Fatal(err)
	}
	span := lease.Span{From: 1, To: 2000}
	gz, err := src.Fetch(context.Background(), "alt.binaries.test", span)
	if err != nil {
		b.Fatal(err)
	}
	lines := float64(span.Len())

	b.Run("read-chunk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := overview.ReadChunk(gz, func(overview.Overview) error { return nil }); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(lines*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
	})
	b.Run("baseline=inflate-only", func(b *testing.B) {
		b.ReportAllocs()
		var out bytes.Buffer
		for b.Loop() {
			out.Reset()
			zr, err := gzip.NewReader(bytes.NewReader(gz))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := out.ReadFrom(zr); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(lines*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
	})
}
