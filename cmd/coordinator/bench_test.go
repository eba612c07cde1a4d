package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/edge"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/overview"
	"github.com/edgeindex/edgeindex/sources"
	"github.com/edgeindex/edgeindex/spool"
)

const benchArticles = 200_000

// BenchmarkPipeline measures the demo pipeline end to end in articles/s:
// SQLite, the synthetic source, the coordinator over loopback HTTP and four
// collating workers, from the first worker's start to the last range done
// (the summary's read of the results feed is not counted). "baseline" reads the same chunks from a spool,
// inflates and parses them in one process, with no HTTP and no database,
// in the same run.
func BenchmarkPipeline(b *testing.B) {
	pipeline := func(newHandler func() (edge.Handler, error)) func(b *testing.B) {
		return func(b *testing.B) {
			var indexing time.Duration // from the first worker's start to the last range done
			for b.Loop() {
				m := NewMain(io.Discard, io.Discard)
				res, err := m.runDemo(b.Context(), b.TempDir(), benchArticles, 4, 10_000, io.Discard, newHandler)
				m.Close()
				require.NoError(b, err)
				require.Equal(b, int64(benchArticles), res.Headers)
				indexing += res.Elapsed
			}
			b.ReportMetric(float64(benchArticles*b.N)/indexing.Seconds(), "articles/s")
		}
	}
	b.Run("demo", pipeline(nil))
	// The same pipeline with a handler that only inflates and parses, as
	// the baseline does: what the SDK costs, without the collation.
	b.Run("parse-only", pipeline(func() (edge.Handler, error) {
		return edge.HandlerFunc(func(ctx context.Context, c edge.Chunk) (edge.Output, error) {
			var n int64
			err := overview.ReadChunk(c.Data, func(o overview.Overview) error {
				if o.Number >= c.From && o.Number <= c.To {
					n++
				}
				return nil
			})
			return edge.Output{Headers: n}, err
		}), nil
	}))
	b.Run("baseline", func(b *testing.B) {
		sp, err := spool.Open(b.TempDir(), spool.Config{})
		require.NoError(b, err)
		defer sp.Close()
		src, err := sources.NewSynthetic(sources.SyntheticConfig{})
		require.NoError(b, err)
		spans := lease.Spans(1, benchArticles, grouplease.DefaultChunkSize)
		for _, s := range spans {
			data, err := src.Fetch(b.Context(), DemoGroup, s)
			require.NoError(b, err)
			require.NoError(b, sp.Put(1, s, data))
		}
		b.ResetTimer()
		for b.Loop() {
			var n int64
			for _, s := range spans {
				data, err := sp.Read(1, s)
				require.NoError(b, err)
				require.NoError(b, overview.ReadChunk(data, func(overview.Overview) error { n++; return nil }))
			}
			require.Equal(b, int64(benchArticles), n)
		}
		b.ReportMetric(float64(benchArticles*b.N)/b.Elapsed().Seconds(), "articles/s")
	})
}
