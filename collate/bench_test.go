package collate_test

import (
	"context"
	"testing"

	"github.com/edgeindex/edgeindex/collate"
	"github.com/edgeindex/edgeindex/edge"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/overview"
	"github.com/edgeindex/edgeindex/usenet"
)

// BenchmarkCollate measures lines/s of a Collator over 20,000 synthetic
// articles in chunks of 2,000, against the baseline of reading the same
// chunks with overview.ReadChunk alone.
func BenchmarkCollate(b *testing.B) {
	r := lease.Range{ID: 1, Group: group, Start: 1, End: 20_000}
	spans := lease.Spans(r.Start, r.End, 2000)
	chunks := make([][]byte, len(spans))
	for i, s := range spans {
		chunks[i] = fetch(b, s)
	}
	lines := float64(r.End - r.Start + 1)
	report := func(b *testing.B) {
		b.ReportMetric(lines*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
	}

	b.Run("baseline=ReadChunk", func(b *testing.B) {
		for b.Loop() {
			for _, gz := range chunks {
				if err := overview.ReadChunk(gz, func(overview.Overview) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
		}
		report(b)
	})
	b.Run("ParseSubject", func(b *testing.B) {
		for b.Loop() {
			for _, gz := range chunks {
				err := overview.ReadChunk(gz, func(o overview.Overview) error {
					if _, ok := usenet.ParseSubject(o.Subject); !ok {
						b.Fatal("not a binary")
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		}
		report(b)
	})
	b.Run("Collator", func(b *testing.B) {
		for b.Loop() {
			c, err := collate.New(collate.Config{})
			if err != nil {
				b.Fatal(err)
			}
			for i, s := range spans {
				if _, err := c.HandleChunk(context.Background(), edge.Chunk{Ordered: true, Range: r, From: s.From, To: s.To, Data: chunks[i]}); err != nil {
					b.Fatal(err)
				}
			}
		}
		report(b)
	})
}
