package spool_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/sources"
	"github.com/edgeindex/edgeindex/spool"
)

// BenchmarkDiskPut measures Disk.Put of a one-article chunk (the lease-cycle
// bench's size): each into a range of its own (a directory made per Put, as
// with one-article ranges), and all into one range. The baseline is the
// obvious raw way under the same layout: a directory and os.WriteFile of
// the same bytes, per Put.
func BenchmarkDiskPut(b *testing.B) {
	src, err := sources.NewSynthetic(sources.SyntheticConfig{})
	if err != nil {
		b.Fatal(err)
	}
	one := lease.Span{From: 1_000_001, To: 1_000_001}
	chunk, err := src.Fetch(context.Background(), "alt.binaries.test", one)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("range=new", func(b *testing.B) {
		d, err := spool.Open(b.TempDir(), spool.Config{})
		if err != nil {
			b.Fatal(err)
		}
		defer d.Close()
		b.SetBytes(int64(len(chunk)))
		var id int64
		for b.Loop() {
			id++
			if err := d.Put(id, one, chunk); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("range=same", func(b *testing.B) {
		d, err := spool.Open(b.TempDir(), spool.Config{})
		if err != nil {
			b.Fatal(err)
		}
		defer d.Close()
		b.SetBytes(int64(len(chunk)))
		var n int64
		for b.Loop() {
			n++
			if err := d.Put(1, lease.Span{From: n, To: n}, chunk); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("baseline=mkdir-writefile", func(b *testing.B) {
		dir := b.TempDir()
		b.SetBytes(int64(len(chunk)))
		var id int64
		for b.Loop() {
			id++
			rdir := filepath.Join(dir, strconv.FormatInt(id, 10))
			if err := os.Mkdir(rdir, 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(rdir, spool.ChunkName(one)), chunk, 0o600); err != nil {
				b.Fatal(err)
			}
		}
	})
}
