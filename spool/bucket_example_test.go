package spool_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/edgeindex/edgeindex/blobstore"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/spool"
)

// Two coordinators share one spool in a store: what one stores, the other
// reads at once, and counts towards the one size bound after a Refresh
// (done every BucketConfig.Refresh by itself). A directory stands in for
// the S3 bucket (blobstore.OpenURL) here.
func ExampleOpenBucket() {
	dir, err := os.MkdirTemp("", "spool-bucket")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	root, err := blobstore.OpenDir(dir)
	if err != nil {
		log.Fatal(err)
	}
	store, err := blobstore.Sub(root, "spool")
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	cfg := spool.BucketConfig{MaxBytes: 1 << 20}
	a, err := spool.OpenBucket(ctx, store, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()
	b, err := spool.OpenBucket(ctx, store, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	span := lease.Span{From: 1, To: 2000}
	if err := a.Put(42, span, []byte("a gzip chunk")); err != nil {
		log.Fatal(err)
	}
	data, err := b.Read(42, span)
	fmt.Printf("b reads %q (%v)\n", data, err)
	if err := b.Refresh(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("b counts", b.Size(), "of", b.MaxBytes(), "bytes")
	if err := b.Drop(42); err != nil {
		log.Fatal(err)
	}
	_, err = a.Read(42, span)
	fmt.Println("a after b's Drop:", err)
	// Output:
	// b reads "a gzip chunk" (<nil>)
	// b counts 12 of 1048576 bytes
	// a after b's Drop: spool: range 42 span 1-2000: chunk not found
}
