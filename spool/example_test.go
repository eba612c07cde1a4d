package spool_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/overview"
	"github.com/edgeindex/edgeindex/spool"
)

// A synthetic chunk, read back line by line.
func ExampleSynthetic() {
	src, err := spool.NewSynthetic(spool.SyntheticConfig{})
	if err != nil {
		log.Fatal(err)
	}
	gz, err := src.Fetch(context.Background(), "alt.binaries.test", lease.Span{From: 1, To: 2000})
	if err != nil {
		log.Fatal(err)
	}
	lines := 0
	err = overview.ReadChunk(gz, func(o overview.Overview) error {
		if lines == 0 {
			fmt.Println(o.Number, o.MessageID)
			fmt.Println(o.Subject)
			fmt.Println(o.From)
		}
		lines++
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(lines, "lines")
	// Output:
	// 1 <1@alt.binaries.test.synthetic>
	// [01/26] - "Broken.Ocean.2003.FLAC-GRP.part01.rar" yEnc (1/51)
	// Yenc PowerPost <powerpost@example.invalid>
	// 2000 lines
}

// The disk spool: store a range's chunk, read it, drop the range.
func ExampleDisk() {
	dir, err := os.MkdirTemp("", "spool")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	sp, err := spool.Open(dir, spool.Config{MaxBytes: 1 << 20})
	if err != nil {
		log.Fatal(err)
	}
	defer sp.Close()

	ctx := context.Background()
	span := lease.Span{From: 1000, To: 1999}
	data := []byte("a gzip chunk")
	if err := sp.WaitRoom(ctx, int64(len(data))); err != nil {
		log.Fatal(err)
	}
	if err := sp.Put(12, span, data); err != nil {
		log.Fatal(err)
	}
	if err := sp.WaitChunk(ctx, 12, span); err != nil { // returns at once: it is there
		log.Fatal(err)
	}
	got, err := sp.Read(12, span)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s, %d of %d bytes used\n", got, sp.Size(), sp.MaxBytes())

	if err := sp.Drop(12); err != nil {
		log.Fatal(err)
	}
	fmt.Println(sp.Has(12, span), sp.Size())
	// Output:
	// a gzip chunk, 12 of 1048576 bytes used
	// false 0
}

// A ChunkSource from two functions.
func ExampleSourceFuncs() {
	src := spool.SourceFuncs{
		FetchFunc: func(ctx context.Context, group string, span lease.Span) ([]byte, error) {
			return nil, fmt.Errorf("%s: %w", group, spool.ErrNoSuchGroup)
		},
		WatermarksFunc: func(ctx context.Context, group string) (int64, int64, error) {
			return 1, 500, nil
		},
	}
	low, high, _ := src.Watermarks(context.Background(), "alt.test")
	_, err := src.Fetch(context.Background(), "alt.nothing", lease.Span{From: 1, To: 10})
	fmt.Println(low, high, err)
	// Output:
	// 1 500 alt.nothing: no such group
}
