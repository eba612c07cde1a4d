package nzb_test

import (
	"encoding/xml"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/nzb"
)

// BenchmarkNZB renders a release of 10,000 segments (20 files of 500
// parts): "write" is nzb.Write, "encoding-xml" is encoding/xml's Marshal
// of the same structure (doc, the prolog aside), in the same run. Both
// report allocations per segment:
//
//	go test -run '^$' -bench NZB -benchmem ./nzb/
func BenchmarkNZB(b *testing.B) {
	const files, parts = 20, 500
	const segments = files * parts
	r := sample(files, parts)
	d := docOf(r)
	b.Run("write", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := nzb.Write(io.Discard, r); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(testing.AllocsPerRun(1, func() { nzb.Write(io.Discard, r) }))/segments, "allocs/segment")
	})
	b.Run("encoding-xml", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			out, err := xml.Marshal(d)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.Discard.Write(out); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(testing.AllocsPerRun(1, func() { xml.Marshal(d) }))/segments, "allocs/segment")
	})
}

// TestWriteAllocs holds the target: under one allocation per segment.
func TestWriteAllocs(t *testing.T) {
	r := sample(20, 500)
	allocs := testing.AllocsPerRun(5, func() { nzb.Write(io.Discard, r) })
	require.Less(t, allocs/10000, 1.0, "allocations per segment")
	require.LessOrEqual(t, allocs, 4.0, "a few per call, none per segment")
}
