package spool_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/spool"
)

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
