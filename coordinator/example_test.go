package coordinator_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/edgeindex/edgeindex/coordinator"
	"github.com/edgeindex/edgeindex/spool"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// Embedding the coordinator in another program.
func ExampleNew() {
	dir, _ := os.MkdirTemp("", "coordinator-example")
	defer os.RemoveAll(dir)
	store, err := sqlstore.Open(context.Background(), "sqlite://"+filepath.Join(dir, "edgeindex.db"), sqlstore.Config{})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	sp, _ := spool.Open(filepath.Join(dir, "spool"), spool.Config{})
	defer sp.Close()
	srv, err := coordinator.New(coordinator.Config{Store: store, Spool: sp, SnapshotDir: filepath.Join(dir, "snapshots"), AdminToken: "secret"})
	if err != nil {
		panic(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()

	resp, _ := http.Post(hs.URL+"/v1/lease", "application/json", nil)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, "without a node token")
	resp, _ = http.Get(hs.URL + "/healthz")
	resp.Body.Close()
	fmt.Println(resp.StatusCode, "for /healthz")
	// Output:
	// 401 without a node token
	// 200 for /healthz
}
