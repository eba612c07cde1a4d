package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	code := m.Run()
	removeCoordinatorBinary()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}

// TestServeProc starts serve on SQLite, adds a group and a range with the
// command line, and leases the range with a node's client.
func TestServeProc(t *testing.T) {
	ctx := context.Background()
	p, err := startServe(ctx, serveConfig{Data: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if rss, err := p.RSS(); err != nil || rss == 0 {
		t.Fatalf("RSS %d, %v", rss, err)
	}
	if _, err := p.CLI(ctx, "group", "add", "alt.test", "--range-size", "10", "--chunk-size", "10"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.CLI(ctx, "range", "add", "alt.test", "1", "10"); err != nil {
		t.Fatal(err)
	}
	if err := p.allDone(ctx, "alt.test"); err == nil {
		t.Fatal("allDone with a range pending")
	}
	cs, err := p.Clients(ctx, "w", 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	l, ok, err := cs[1].Lease(ctx)
	if err != nil || !ok || l.Range.Start != 1 {
		t.Fatalf("lease %+v, %t, %v", l, ok, err)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.RSS(); err == nil {
		t.Fatal("RSS of a stopped process")
	}
}

// TestAwaitReadyUnanswered checks that a /readyz that never answers ends
// the wait at its bound, not never.
func TestAwaitReadyUnanswered(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // the answer never comes
	}))
	defer srv.Close()
	p := &serveProc{URL: srv.URL, exited: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- p.awaitReady(context.Background(), 200*time.Millisecond) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not ready within 200ms") {
			t.Fatalf("awaitReady = %v, want not ready within 200ms", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("awaitReady still waiting for an answer that never comes")
	}
}
