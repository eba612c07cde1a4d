package coordinator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/blobstore"
	"github.com/edgeindex/edgeindex/coordinator"
	"github.com/edgeindex/edgeindex/edgeframe"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/node"
	"github.com/edgeindex/edgeindex/overview"
	"github.com/edgeindex/edgeindex/prefetch"
	"github.com/edgeindex/edgeindex/sources"
	"github.com/edgeindex/edgeindex/spool"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// Embedding the coordinator in another program: the Service, and the
// HTTP API over it.
func ExampleNewServer() {
	dir, _ := os.MkdirTemp("", "coordinator-example")
	defer os.RemoveAll(dir)
	store, err := sqlstore.Open(context.Background(), "sqlite://"+filepath.Join(dir, "edgeindex.db"), sqlstore.Config{})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	sp, _ := spool.Open(filepath.Join(dir, "spool"), spool.Config{})
	defer sp.Close()
	snaps, _ := blobstore.OpenDir(filepath.Join(dir, "snapshots"))
	svc, err := coordinator.NewService(coordinator.Config{Store: store, Spool: sp, Snapshots: snaps, AdminToken: "secret"})
	if err != nil {
		panic(err)
	}
	hs := httptest.NewServer(coordinator.NewServer(svc))
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

// Driving the Service without HTTP, as the demo or a test may: grant a
// range, stream its chunks, store a batch per chunk, finish it. Here the
// prefetcher makes one pass by hand; serve runs it in the background.
func ExampleService() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "service-example")
	defer os.RemoveAll(dir)
	store, err := sqlstore.Open(ctx, "sqlite://"+filepath.Join(dir, "edgeindex.db"), sqlstore.Config{})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	sp, _ := spool.Open(filepath.Join(dir, "spool"), spool.Config{})
	defer sp.Close()
	src, _ := sources.NewSynthetic(sources.SyntheticConfig{})
	pf, _ := prefetch.New(prefetch.Config{Source: src, Spool: sp, Claims: store, Targets: store})
	snaps, _ := blobstore.OpenDir(filepath.Join(dir, "snapshots"))
	svc, err := coordinator.NewService(coordinator.Config{Store: store, Spool: sp, Snapshots: snaps, Prefetcher: pf})
	if err != nil {
		panic(err)
	}
	store.AddNode(ctx, "edge-1", node.HashToken("edge-1-token"))
	store.AddGroup(ctx, grouplease.Group{Name: "alt.binaries.example", RangeSize: 1000, ChunkSize: 400})
	store.AddRanges(ctx, grouplease.NewRanges{Group: "alt.binaries.example", From: 1, To: 1000})

	l, err := svc.Grant(ctx, "edge-1")
	if err != nil {
		panic(err)
	}
	f := lease.Fence{Node: "edge-1", Token: l.Token}
	pf.Pass(ctx)
	rs, err := svc.OpenStream(ctx, l.Range.ID, f)
	if err != nil {
		panic(err)
	}
	var frames bytes.Buffer
	rs.Send(ctx, coordinator.NewFrameWriter(&frames))
	fr, _ := edgeframe.NewReader(&frames, edgeframe.Config{})
	for {
		fm, err := fr.Next()
		if err != nil {
			break // io.EOF after the end frame
		}
		if fm.Type != edgeframe.TypeChunk {
			continue
		}
		lines := 0
		overview.ReadChunk(fm.Data, func(overview.Overview) error { lines++; return nil })
		res, err := svc.StoreBatch(ctx, l.Range.ID, f, api.Batch{From: fm.From, To: fm.To, Headers: int64(lines),
			Items: []api.Item{{Key: fmt.Sprint("chunk-", fm.From), Value: json.RawMessage(`{"lines":` + fmt.Sprint(lines) + `}`)}}})
		if err != nil {
			panic(err)
		}
		fmt.Printf("chunk %d-%d: %d lines, next %d\n", fm.From, fm.To, lines, res.Next)
	}
	if err := svc.Finish(ctx, l.Range.ID, f); err != nil {
		panic(err)
	}
	// The fence holds without HTTP too: the finished range is no longer held.
	_, err = svc.Heartbeat(ctx, l.Range.ID, f)
	fmt.Println("heartbeat after finish is a lost lease:", errors.Is(err, edgeindex.ErrLeaseLost))
	fleet, _ := svc.Fleet(ctx)
	fmt.Println("ranges done:", fleet.Ranges[lease.StateDone])
	// Output:
	// chunk 1-400: 400 lines, next 401
	// chunk 401-800: 400 lines, next 801
	// chunk 801-1000: 200 lines, next 1001
	// heartbeat after finish is a lost lease: true
	// ranges done: 1
}

// A range's stream without HTTP: the chunks stored in a spool, written as
// frames to a plain writer.
func ExampleStream() {
	dir, _ := os.MkdirTemp("", "stream-example")
	defer os.RemoveAll(dir)
	sp, _ := spool.Open(dir, spool.Config{})
	defer sp.Close()
	r := lease.Range{ID: 1, Group: "alt.test", Start: 1, End: 25, Next: 1, State: lease.StateLeased}
	for _, span := range lease.Spans(r.Start, r.End, 10) {
		sp.Put(r.ID, span, []byte(fmt.Sprintf("chunk %d-%d", span.From, span.To)))
	}
	var frames bytes.Buffer
	if err := coordinator.Stream(context.Background(), coordinator.NewFrameWriter(&frames), r, 10, coordinator.StreamConfig{Spool: sp}); err != nil {
		panic(err)
	}
	fr, _ := edgeframe.NewReader(&frames, edgeframe.Config{})
	for {
		f, err := fr.Next()
		if err != nil {
			break // io.EOF after the end frame
		}
		if f.Type == edgeframe.TypeChunk {
			fmt.Printf("%s\n", f.Data)
		}
	}
	// Output:
	// chunk 1-10
	// chunk 11-20
	// chunk 21-25
}

// A final batch that asks for the next lease in its answer: one call
// finishes the range and grants the node its next one.
func ExampleService_StoreBatchThenLease() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "then-lease-example")
	defer os.RemoveAll(dir)
	store, err := sqlstore.Open(ctx, "sqlite://"+filepath.Join(dir, "edgeindex.db"), sqlstore.Config{})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	sp, _ := spool.Open(filepath.Join(dir, "spool"), spool.Config{})
	defer sp.Close()
	snaps, _ := blobstore.OpenDir(filepath.Join(dir, "snapshots"))
	svc, err := coordinator.NewService(coordinator.Config{Store: store, Spool: sp, Snapshots: snaps})
	if err != nil {
		panic(err)
	}
	store.AddGroup(ctx, grouplease.Group{Name: "alt.binaries.example", RangeSize: 100, ChunkSize: 100})
	store.AddRanges(ctx, grouplease.NewRanges{Group: "alt.binaries.example", From: 1, To: 200})

	l, err := svc.Grant(ctx, "edge-1")
	if err != nil {
		panic(err)
	}
	f := lease.Fence{Node: "edge-1", Token: l.Token}
	res, err := svc.StoreBatchThenLease(ctx, l.Range.ID, f, api.Batch{From: 1, To: 100, Headers: 100, Final: true})
	if err != nil {
		panic(err)
	}
	fmt.Println("done:", res.Done)
	fmt.Printf("next lease: %d-%d\n", res.Lease.Range.Start, res.Lease.Range.End)
	// Output:
	// done: true
	// next lease: 101-200
}
