package sources_test

import (
	"context"
	"fmt"
	"log"

	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/overview"
	"github.com/edgeindex/edgeindex/sources"
)

// A synthetic chunk, read back line by line.
func ExampleSynthetic() {
	src, err := sources.NewSynthetic(sources.SyntheticConfig{})
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

// A ChunkSource from two functions.
func ExampleFuncs() {
	src := sources.Funcs{
		FetchFunc: func(ctx context.Context, group string, span lease.Span) ([]byte, error) {
			return nil, fmt.Errorf("%s: %w", group, sources.ErrNoSuchGroup)
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
