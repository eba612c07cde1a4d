package spool_test

import (
	"context"
	"io"
	"testing"

	"github.com/edgeindex/edgeindex/blobstore"
	"github.com/edgeindex/edgeindex/internal/miniotest"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/sources"
	"github.com/edgeindex/edgeindex/spool"
)

// BenchmarkChunkStore measures the latency of storing and of streaming one
// chunk (a synthetic 2000-article chunk, the default size) on the disk
// spool, on the Bucket spool over a directory, and on the Bucket spool over
// a real MinIO on loopback (skipped without one). The disk spool is the
// baseline: the same bytes, no network, no object store.
func BenchmarkChunkStore(b *testing.B) {
	src, err := sources.NewSynthetic(sources.SyntheticConfig{})
	if err != nil {
		b.Fatal(err)
	}
	span := lease.Span{From: 1_000_001, To: 1_002_000}
	chunk, err := src.Fetch(context.Background(), "alt.binaries.test", span)
	if err != nil {
		b.Fatal(err)
	}
	stores := []struct {
		name string
		open func(b *testing.B) spool.Store
	}{
		{"store=disk", func(b *testing.B) spool.Store {
			d, err := spool.Open(b.TempDir(), spool.Config{})
			if err != nil {
				b.Fatal(err)
			}
			return d
		}},
		{"store=bucket-dir", func(b *testing.B) spool.Store {
			d, err := blobstore.OpenDir(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			s, err := spool.OpenBucket(b.Context(), d, spool.BucketConfig{})
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
		{"store=bucket-minio", func(b *testing.B) spool.Store {
			s, err := spool.OpenBucket(b.Context(), miniotest.Store(b), spool.BucketConfig{})
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
	}
	for _, st := range stores {
		b.Run(st.name+"/op=put", func(b *testing.B) {
			s := st.open(b)
			defer s.Close()
			b.SetBytes(int64(len(chunk)))
			var id int64
			for b.Loop() {
				id++
				if err := s.Put(id, span, chunk); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(st.name+"/op=open-read", func(b *testing.B) {
			s := st.open(b)
			defer s.Close()
			if err := s.Put(1, span, chunk); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(chunk)))
			for b.Loop() {
				rc, _, err := s.Open(1, span)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, rc); err != nil {
					b.Fatal(err)
				}
				rc.Close()
			}
		})
	}
}
