package corpus_test

import (
	"fmt"
	"log"
	"os"

	"github.com/edgeindex/edgeindex/corpus"
	"github.com/edgeindex/edgeindex/lease"
)

// Archive a group's chunks, list them, and drop one reported corrupt.
func ExampleDisk() {
	dir, err := os.MkdirTemp("", "corpus")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	c, err := corpus.Open(dir, corpus.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	for _, sp := range lease.Spans(1, 5000, 2000) {
		if err := c.Put("alt.binaries.test", sp, []byte("gzip of overview lines")); err != nil {
			log.Fatal(err)
		}
	}
	if err := c.Delete("alt.binaries.test", lease.Span{From: 2001, To: 4000}); err != nil {
		log.Fatal(err)
	}
	spans, err := c.Spans("alt.binaries.test")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(spans)
	data, err := c.Read("alt.binaries.test", lease.Span{From: 4001, To: 5000})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s\n", data)
	// Output:
	// [{1 2000} {4001 5000}]
	// gzip of overview lines
}

// Group names are escaped into one directory name each.
func ExampleEscapeGroup() {
	for _, g := range []string{"alt.binaries.test", "../x", "A/b"} {
		name, _ := corpus.EscapeGroup(g)
		fmt.Println(name)
	}
	// Output:
	// alt.binaries.test
	// %2E.%2Fx
	// %41%2Fb
}
