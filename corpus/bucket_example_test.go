package corpus_test

import (
	"fmt"
	"log"
	"os"

	"github.com/edgeindex/edgeindex/blobstore"
	"github.com/edgeindex/edgeindex/corpus"
	"github.com/edgeindex/edgeindex/lease"
)

// The corpus in a store that coordinators share; a directory stands in for
// the S3 bucket (blobstore.OpenURL) here.
func ExampleOpenBucket() {
	dir, err := os.MkdirTemp("", "corpus-bucket")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	root, err := blobstore.OpenDir(dir)
	if err != nil {
		log.Fatal(err)
	}
	store, err := blobstore.Sub(root, "corpus")
	if err != nil {
		log.Fatal(err)
	}
	c, err := corpus.OpenBucket(store, corpus.BucketConfig{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	for _, sp := range lease.Spans(1, 6000, 2000) {
		if err := c.Put("alt.binaries.test", sp, []byte("chunk")); err != nil {
			log.Fatal(err)
		}
	}
	if err := c.Delete("alt.binaries.test", lease.Span{From: 2001, To: 4000}); err != nil {
		log.Fatal(err)
	}
	spans, err := c.Spans("alt.binaries.test")
	fmt.Println(spans, err)
	key, _ := corpus.BucketKey("alt.binaries.test", spans[0])
	fmt.Println(key)
	// Output:
	// [{1 2000} {4001 6000}] <nil>
	// alt.binaries.test/1-2000.gz
}
