package fleet_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/fleet"
	"github.com/edgeindex/edgeindex/lease"
)

// standIn answers a coordinator's GET /v1/fleet with a fleet whose one
// history lane has stored headers articles, growing by 300 a read 15 s
// apart, and GET /v1/nodes/edge-1 with the node's detail.
func standIn() *httptest.Server {
	at := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	var reads atomic.Int64
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/fleet":
			n := reads.Add(1) - 1
			f := api.Fleet{Schema: api.FleetSchema, At: at.Add(time.Duration(n) * 15 * time.Second),
				Nodes:  []api.FleetNode{{Name: "edge-1", LastSeen: at, Leases: []api.FleetLease{}}},
				Groups: []api.FleetGroup{{ID: 1, Name: "alt.binaries.example", Lanes: []api.FleetLane{{Lane: lease.LaneHistory, Headers: 300 * n}}}},
				Ranges: map[lease.State]int64{lease.StatePending: 5}}
			_ = json.NewEncoder(w).Encode(f)
		case "/v1/nodes/edge-1":
			_ = json.NewEncoder(w).Encode(api.NodeDetail{Name: "edge-1", CreatedAt: at, LastSeen: at, Leases: []api.FleetLease{}, Batches: []api.BatchRecord{}})
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"error": "no such node", "code": "not_found"}`)
		}
	}))
}

// The reader keeps a good read for Config.Keep; past it the read is served
// stale while one refresh runs, and once two reads are kept each
// coordinator has a rate.
func Example() {
	coord := standIn()
	defer coord.Close()
	clk := clock.NewManual(time.Now())
	r, err := fleet.New(fleet.Config{Coordinators: []string{coord.URL}, Token: "the-admin-token", Keep: 15 * time.Second, Clock: clk})
	if err != nil {
		panic(err)
	}
	defer r.Close()
	ctx := context.Background()
	show := func() {
		a, err := r.Fleet(ctx)
		if err != nil {
			panic(err)
		}
		h := a.Read.Hosts()[0]
		rate := a.Read.Rates().Hosts[h.Host].ArticlesPerSecond
		fmt.Printf("%s: %d node, generation %d, kept %t, stale %t, rate %v\n",
			h.Status, len(h.Fleet.Nodes), a.Generation, a.Kept, a.Meta.Stale, fmtRate(rate))
	}
	show() // the first call waits for the first read
	clk.Advance(20 * time.Second)
	show() // stale: one refresh starts in the background; wait for it
	for a, _ := r.Fleet(ctx); a.Meta.Refreshing; a, _ = r.Fleet(ctx) {
		time.Sleep(time.Millisecond)
	}
	show()
	// Output:
	// ok: 1 node, generation 1, kept true, stale false, rate none
	// ok: 1 node, generation 1, kept true, stale true, rate none
	// ok: 1 node, generation 2, kept true, stale false, rate 20/s
}

func fmtRate(p *float64) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprintf("%g/s", *p)
}

// Each coordinator is named by its host:port, the scheme's port when the
// URL has none.
func ExampleHostNames() {
	names, err := fleet.HostNames([]string{"http://10.0.0.1:7070", "https://coordinator.example/edgeindex/"})
	if err != nil {
		panic(err)
	}
	fmt.Println(names)
	_, err = fleet.HostNames([]string{"http://a:80", "http://a/x"})
	fmt.Println(errors.Is(err, edgeindex.ErrInvalid), err)
	// Output:
	// [10.0.0.1:7070 coordinator.example:443]
	// true coordinators "http://a:80" and "http://a/x" are the same host a:80
}

// A seat is a node's detail from its coordinator, named HOST/NODE.
func ExampleCoordinators_Seat() {
	coord := standIn()
	defer coord.Close()
	r, err := fleet.New(fleet.Config{Coordinators: []string{coord.URL}, Token: "the-admin-token"})
	if err != nil {
		panic(err)
	}
	defer r.Close()
	host := r.Hosts()[0]
	s, err := r.Seat(context.Background(), fleet.SeatKey{Host: host, Node: "edge-1"})
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Seat.Node.Name, s.Kept)
	_, err = r.Seat(context.Background(), fleet.SeatKey{Host: host, Node: "edge-9"})
	fmt.Println(errors.Is(err, edgeindex.ErrNotFound))
	_, err = r.Seat(context.Background(), fleet.SeatKey{Host: "10.9.9.9:1", Node: "edge-1"})
	fmt.Println(errors.Is(err, edgeindex.ErrNotFound))
	_, err = r.Seat(context.Background(), fleet.SeatKey{Host: host, Node: "bad name"})
	fmt.Println(errors.Is(err, edgeindex.ErrInvalid))
	// Output:
	// edge-1 true
	// true
	// true
	// true
}

// A tool mounts the reader's routes, the dashboard among them, on a server
// of its own.
func ExampleCoordinators_Handler() {
	coord := standIn()
	defer coord.Close()
	r, err := fleet.New(fleet.Config{Coordinators: []string{coord.URL}, Token: "the-admin-token"})
	if err != nil {
		panic(err)
	}
	defer r.Close()
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	for _, path := range []string{"/v1/fleet", "/readyz", "/", "/nope"} {
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Println(path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	srv.Client().CloseIdleConnections()
	// Output:
	// /v1/fleet 200 application/json
	// /readyz 200 application/json
	// / 200 text/html; charset=utf-8
	// /nope 404 application/json
}
