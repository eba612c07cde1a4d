package fleetcache_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/fleetcache"
)

// A cache over a counter, with an injected clock: within Keep the same read is
// served; after it the answer is stale and one refresh starts in the
// background.
func Example() {
	clk := clock.NewManual(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))

	counter := func(_ context.Context, previous int) (int, error) { return previous + 1, nil }
	c, err := fleetcache.New(counter, nil, fleetcache.Config{Keep: 15 * time.Second, Clock: clk})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	show := func() {
		a, err := c.Get(ctx)
		if err != nil {
			panic(err)
		}
		fmt.Printf("value=%d generation=%d age=%gs stale=%t refreshing=%t\n",
			a.Value, a.Generation, a.Meta.CacheAgeSeconds, a.Meta.Stale, a.Meta.Refreshing)
	}

	show() // the first call waits for the first read
	clk.Advance(10 * time.Second)
	show() // within Keep
	clk.Advance(10 * time.Second)
	show() // after Keep: stale, and a refresh starts
	if err := c.Wait(ctx); err != nil {
		panic(err)
	}
	show() // the refresh was kept
	// Output:
	// value=1 generation=1 age=0s stale=false refreshing=false
	// value=1 generation=1 age=10s stale=false refreshing=false
	// value=1 generation=1 age=20s stale=true refreshing=true
	// value=2 generation=2 age=0s stale=false refreshing=false
}

// A Server with one cached route, asked twice: the second request sends the
// ETag back and gets 304 with no body.
func ExampleServer() {
	body := []byte(`{"hosts":[]}`)
	polled := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s, err := fleetcache.NewServer(fleetcache.ServerConfig{Routes: []fleetcache.Route{{
		Path: "/v1/fleet",
		Handle: func(*http.Request) (fleetcache.Reply, error) {
			return fleetcache.Reply{Body: body, Meta: fleetcache.Meta{PolledAt: polled, CacheAgeSeconds: 3, KeptForSeconds: 15}}, nil
		},
	}}})
	if err != nil {
		panic(err)
	}

	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest("GET", "/v1/fleet", nil))
	fmt.Println(w.Code, w.Body.String())
	fmt.Println("Cache-Control:", w.Header().Get("Cache-Control"))
	fmt.Println("Age:", w.Header().Get("Age"))

	r := httptest.NewRequest("GET", "/v1/fleet", nil)
	r.Header.Set("If-None-Match", w.Header().Get("ETag"))
	w = httptest.NewRecorder()
	s.ServeHTTP(w, r)
	fmt.Println(w.Code, w.Body.Len())

	w = httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest("DELETE", "/v1/fleet", nil))
	fmt.Println(w.Code, w.Header().Get("Allow"), w.Body.String())
	// Output:
	// 200 {"hosts":[]}
	// Cache-Control: max-age=12, stale-while-revalidate=15
	// Age: 3
	// 304 0
	// 405 GET, HEAD {"error":"method DELETE is not allowed: use GET or HEAD"}
}
