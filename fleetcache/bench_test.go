package fleetcache

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// benchBody is a fleet-sized JSON body, the same bytes for the server and
// its static baseline.
var benchBody = func() []byte {
	type host struct {
		Host   string `json:"host"`
		Status string `json:"status"`
		Next   int64  `json:"next"`
	}
	hosts := make([]host, 20)
	for i := range hosts {
		hosts[i] = host{Host: fmt.Sprintf("coord-%02d.example:7070", i), Status: "ok", Next: 1 << 33}
	}
	b, err := json.Marshal(map[string]any{"polledAt": t0, "hosts": hosts})
	if err != nil {
		panic(err)
	}
	return b
}()

func BenchmarkHit(b *testing.B) {
	c, err := New(func(context.Context, []byte) ([]byte, error) { return benchBody, nil }, nil, Config{Keep: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Get(ctx); err != nil {
		b.Fatal(err)
	}
	var sink atomic.Uint64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var n uint64
		for pb.Next() {
			a, err := c.Get(ctx)
			if err != nil || a.Meta.Stale {
				panic("not a hit")
			}
			n += a.Generation
		}
		sink.Add(n)
	})
}

func BenchmarkBaselineAtomicLoad(b *testing.B) {
	var p atomic.Pointer[entry[[]byte]]
	p.Store(&entry[[]byte]{value: benchBody, gen: 1})
	var sink atomic.Uint64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var n uint64
		for pb.Next() {
			n += p.Load().gen
		}
		sink.Add(n)
	})
}

// BenchmarkBaselineMonotonicClock is the one clock read a hit makes
// (time.Since), to tell the cache's own cost from the clock's.
func BenchmarkBaselineMonotonicClock(b *testing.B) {
	start := time.Now()
	var sink atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var n time.Duration
		for pb.Next() {
			n += time.Since(start)
		}
		sink.Add(int64(n))
	})
}

// benchGet GETs url in parallel with one keep-alive client and reports
// requests per second. Both HTTP benchmarks use it.
func benchGet(b *testing.B, url string) {
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Get(url)
			if err != nil {
				panic(err)
			}
			n, _ := io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK || n != int64(len(benchBody)) {
				panic(fmt.Sprintf("status %d, %d bytes", resp.StatusCode, n))
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

// BenchmarkServer serves a Cache hit through Server.Listen and Server.Serve.
func BenchmarkServer(b *testing.B) {
	c, err := New(func(context.Context, []byte) ([]byte, error) { return benchBody, nil }, nil, Config{Keep: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	s, err := NewServer(ServerConfig{Addr: "127.0.0.1:0", Routes: []Route{{Path: "/v1/fleet", Handle: func(r *http.Request) (Reply, error) {
		a, err := c.Get(r.Context())
		if err != nil {
			return Reply{}, err
		}
		return Reply{Body: a.Value, Meta: a.Meta}, nil
	}}}})
	if err != nil {
		b.Fatal(err)
	}
	addr, err := s.Listen()
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}()
	benchGet(b, "http://"+addr.String()+"/v1/fleet")
}

// BenchmarkBaselineStaticHandler serves the same bytes from a plain net/http
// handler.
func BenchmarkBaselineStaticHandler(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(benchBody)
	})}
	go func() { _ = srv.Serve(ln) }()
	defer func() { _ = srv.Close() }()
	benchGet(b, "http://"+ln.Addr().String()+"/v1/fleet")
}
