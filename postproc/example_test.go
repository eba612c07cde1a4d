package postproc_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/edgeindex/edgeindex/nntp"
	"github.com/edgeindex/edgeindex/postproc"
	"github.com/edgeindex/edgeindex/sources"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// A Processor over a store and an NNTP provider: Run it beside the
// release builder; each pass takes the releases due.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "postproc")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	store, err := sqlstore.Open(ctx, "sqlite://"+filepath.Join(dir, "edgeindex.db"), sqlstore.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	src, err := nntp.New(nntp.Config{Addr: "news.example.test:119", BodyConns: 1})
	if err != nil {
		log.Fatal(err)
	}
	router, err := sources.NewRouter(map[string]sources.ChunkSource{"": src})
	if err != nil {
		log.Fatal(err)
	}
	defer router.Close()
	p, err := postproc.New(postproc.Config{Store: store, Bodies: router})
	if err != nil {
		log.Fatal(err)
	}
	n, err := p.Pass(ctx) // an empty store: nothing is due
	fmt.Println(n, err)
	// Output: 0 <nil>
}
