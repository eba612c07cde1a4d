package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/blobstore"
	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/coordinator"
	"github.com/edgeindex/edgeindex/fleetcache"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/node"
	"github.com/edgeindex/edgeindex/spool"
	"github.com/edgeindex/edgeindex/sqlstore"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

const adminToken = "fleet-reader-test-admin-token"

// coord is a real coordinator (coordinator.NewServer over SQLite and a disk spool)
// behind a wrapper that counts the admin reads and can hold or fail them.
type coord struct {
	t         testing.TB
	store     *sqlstore.Store
	http      *httptest.Server
	url       string
	host      string // host:port
	nodeToken string // edge-1's token

	fleetReqs atomic.Int64 // GET /v1/fleet
	nodeReqs  atomic.Int64 // GET /v1/nodes/{name}
	fail      atomic.Bool  // answer both with 500
	gate      atomic.Pointer[chan struct{}]
}

func newCoord(t testing.TB) *coord {
	t.Helper()
	ctx := t.Context()
	st, err := sqlstore.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "db"), sqlstore.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	sp, err := spool.Open(t.TempDir(), spool.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { sp.Close() })
	snaps, err := blobstore.OpenDir(t.TempDir())
	require.NoError(t, err)
	svc, err := coordinator.NewService(coordinator.Config{Store: st, Spool: sp, Snapshots: snaps, AdminToken: adminToken})
	require.NoError(t, err)
	srv := coordinator.NewServer(svc)

	c := &coord{t: t, store: st}
	c.http = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/fleet":
			c.fleetReqs.Add(1)
		case strings.HasPrefix(r.URL.Path, "/v1/nodes/"):
			c.nodeReqs.Add(1)
		default:
			srv.ServeHTTP(w, r)
			return
		}
		if g := c.gate.Load(); g != nil {
			select {
			case <-*g:
			case <-r.Context().Done():
				return
			}
		}
		if c.fail.Load() {
			http.Error(w, `{"error": "the database is on fire"}`, http.StatusInternalServerError)
			return
		}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { srv.Drain(); c.http.Close() })
	c.url = c.http.URL
	c.host = strings.TrimPrefix(c.url, "http://")
	return c
}

// hold makes GET /v1/fleet and /v1/nodes/{name} wait until the returned
// func is called.
func (c *coord) hold() (release func()) {
	g := make(chan struct{})
	c.gate.Store(&g)
	var once sync.Once
	release = func() {
		once.Do(func() {
			c.gate.Store(nil)
			close(g)
		})
	}
	c.t.Cleanup(release)
	return release
}

// populate gives the coordinator two nodes, an unordered group with a range
// leased to edge-1 and stored up to 1024 (25 of 100 articles), and an
// ordered group whose history lane edge-2 holds. It returns the lease.
func (c *coord) populate(unordered, ordered string) lease.Lease {
	c.t.Helper()
	ctx := c.t.Context()
	tok, err := node.NewToken()
	require.NoError(c.t, err)
	_, err = c.store.AddNode(ctx, "edge-1", node.HashToken(tok))
	require.NoError(c.t, err)
	c.nodeToken = tok
	tok2, err := node.NewToken()
	require.NoError(c.t, err)
	_, err = c.store.AddNode(ctx, "edge-2", node.HashToken(tok2))
	require.NoError(c.t, err)

	_, err = c.store.AddGroup(ctx, grouplease.Group{Name: unordered, RangeSize: 100, ChunkSize: 25})
	require.NoError(c.t, err)
	_, err = c.store.AddRanges(ctx, grouplease.NewRanges{Group: unordered, From: 1000, To: 1199})
	require.NoError(c.t, err)
	l, err := c.store.Grant(ctx, "edge-1", time.Minute)
	require.NoError(c.t, err)
	require.Equal(c.t, int64(1000), l.Range.Start)
	_, err = c.store.Put(ctx, l.Range.ID, lease.Fence{Node: "edge-1", Token: l.Token}, batch.Batch{
		From: 1000, To: 1024, Headers: 25, Items: []batch.Item{{Key: "k", Value: json.RawMessage(`1`)}},
	})
	require.NoError(c.t, err)

	_, err = c.store.AddGroup(ctx, grouplease.Group{Name: ordered, Ordered: true, RangeSize: 100, ChunkSize: 25})
	require.NoError(c.t, err)
	_, err = c.store.AddRanges(ctx, grouplease.NewRanges{Group: ordered, From: 1, To: 300})
	require.NoError(c.t, err)
	gl, err := c.store.GrantLane(ctx, "edge-2", lease.LaneHistory, time.Minute)
	require.NoError(c.t, err)
	require.Equal(c.t, ordered, gl.Group.Name)
	return l
}

// reader is a fleet-reader's Main running on 127.0.0.1:0.
type reader struct {
	t      testing.TB
	m      *Main
	url    string
	clock  *clock.Manual // an injected clock, from time.Now
	client *http.Client
	cancel context.CancelFunc
	done   chan error
}

type readerOptions struct {
	urls       []string
	token      string        // "" means adminToken
	keep       time.Duration // 0 means 15 s
	drainDelay time.Duration
	timeout    time.Duration // 0 means 5 s
	realClock  bool          // time.Now, not the injected clock
	rateReads  int
	maxLanes   int
}

func startReader(t testing.TB, o readerOptions) *reader {
	t.Helper()
	rd := &reader{t: t, clock: clock.NewManual(time.Now()), done: make(chan error, 1)}
	m := NewMain()
	m.Coordinators = o.urls
	m.Addr = "127.0.0.1:0"
	m.Token = adminToken
	if o.token != "" {
		m.Token = o.token
	}
	if o.keep != 0 {
		m.Keep = o.keep
	}
	m.DrainDelay = o.drainDelay
	m.RateReads, m.MaxLanes = o.rateReads, o.maxLanes
	if o.timeout != 0 {
		m.Timeout = o.timeout
	}
	m.Stderr = io.Discard
	if !o.realClock {
		m.Clock = rd.clock
	}
	addrc := make(chan net.Addr, 1)
	m.OnListen = func(a net.Addr) { addrc <- a }
	rd.m = m

	ctx, cancel := context.WithCancel(context.Background())
	rd.cancel = cancel
	go func() { rd.done <- m.Run(ctx) }()
	select {
	case a := <-addrc:
		rd.url = "http://" + a.String()
	case err := <-rd.done:
		cancel()
		t.Fatalf("Run: %v", err)
	}
	rd.client = &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		// Connections dialed but never used would hold the server's
		// graceful shutdown until its deadline: close them first.
		rd.client.CloseIdleConnections()
		cancel()
		require.NoError(t, <-rd.done)
		require.NoError(t, m.Close())
		rd.client.CloseIdleConnections()
	})
	return rd
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (rd *reader) do(method, path string) answer {
	rd.t.Helper()
	req, err := http.NewRequestWithContext(rd.t.Context(), method, rd.url+path, nil)
	require.NoError(rd.t, err)
	resp, err := rd.client.Do(req)
	require.NoError(rd.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(rd.t, err)
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

// fleetBody is GET /v1/fleet as a client reads it.
type fleetBody struct {
	PolledAt time.Time       `json:"polledAt"`
	Hosts    []hostRead      `json:"hosts"`
	Served   fleetcache.Meta `json:"served"`
}

func (rd *reader) fleet() (fleetBody, answer) {
	rd.t.Helper()
	a := rd.do("GET", "/v1/fleet")
	require.Equal(rd.t, http.StatusOK, a.status, "%s", a.body)
	require.Equal(rd.t, "application/json", a.header.Get("Content-Type"))
	var f fleetBody
	require.NoError(rd.t, json.Unmarshal(a.body, &f), "%s", a.body)
	return f, a
}

func errorText(t testing.TB, a answer) string {
	t.Helper()
	var e struct {
		Error string `json:"error"`
	}
	require.NoError(t, json.Unmarshal(a.body, &e), "%s", a.body)
	require.NotEmpty(t, e.Error)
	return e.Error
}

// deadAddr returns the URL of a port nothing listens on.
func deadURL(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	u := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())
	return u
}
