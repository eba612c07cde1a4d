package api_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/blobstore"
	"github.com/edgeindex/edgeindex/coordinator"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/node"
	"github.com/edgeindex/edgeindex/spool"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// An operator's tool reads a coordinator's admin API with an AdminClient:
// here a coordinator on SQLite with one group of three ranges, one of them
// leased to edge-1.
func ExampleAdminClient() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "api-example")
	defer os.RemoveAll(dir)
	store, err := sqlstore.Open(ctx, "sqlite://"+filepath.Join(dir, "edgeindex.db"), sqlstore.Config{})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	sp, _ := spool.Open(filepath.Join(dir, "spool"), spool.Config{})
	defer sp.Close()
	store.AddNode(ctx, "edge-1", node.HashToken("edge-1-token"))
	store.AddGroup(ctx, grouplease.Group{Name: "alt.binaries.example", RangeSize: 100})
	store.AddRanges(ctx, grouplease.NewRanges{Group: "alt.binaries.example", From: 1, To: 300})
	store.Grant(ctx, "edge-1", time.Minute)
	snaps, _ := blobstore.OpenDir(filepath.Join(dir, "snapshots"))
	svc, err := coordinator.NewService(coordinator.Config{Store: store, Spool: sp, Snapshots: snaps, AdminToken: "admin-secret"})
	if err != nil {
		panic(err)
	}
	srv := coordinator.NewServer(svc)
	hs := httptest.NewServer(srv)
	defer hs.Close()

	admin, err := api.NewAdminClient(api.AdminConfig{BaseURL: hs.URL, Token: "admin-secret"})
	if err != nil {
		panic(err)
	}
	f, err := admin.Fleet(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("fleet:", len(f.Nodes), "node,", f.Ranges[api.State("pending")], "pending,", f.Ranges[api.State("leased")], "leased")

	page, _ := admin.Ranges(ctx, api.RangesQuery{Group: "alt.binaries.example", Limit: 2})
	for _, r := range page.Ranges {
		fmt.Printf("range %d: [%d, %d] %s\n", r.ID, r.Start, r.End, r.State)
	}
	fmt.Println("next page after:", *page.Next)

	d, _ := admin.Node(ctx, "edge-1", "")
	fmt.Println(d.Name, "holds range", d.Leases[0].Range)

	// Errors are decided by status and code, never by the sentence.
	_, err = admin.Node(ctx, "nobody", "")
	fmt.Println("unknown node is ErrNotFound:", errors.Is(err, api.ErrNotFound))
	wrong, _ := api.NewAdminClient(api.AdminConfig{BaseURL: hs.URL, Token: "edge-1-token"})
	_, err = wrong.Fleet(ctx)
	var ae *api.Error
	errors.As(err, &ae)
	fmt.Println("a node's token:", ae.Status, ae.Code, errors.Is(err, api.ErrUnauthorized))
	// Output:
	// fleet: 1 node, 2 pending, 1 leased
	// range 1: [1, 100] leased
	// range 2: [101, 200] pending
	// next page after: 2
	// edge-1 holds range 1
	// unknown node is ErrNotFound: true
	// a node's token: 403 forbidden true
}
