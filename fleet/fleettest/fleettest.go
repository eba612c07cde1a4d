// Package fleettest runs a real coordinator for the tests of the fleet
// reader and of the tools that embed it: coordinator.NewService and
// NewServer over SQLite and a disk spool, behind a wrapper that counts the
// admin reads and can hold or fail them. It has no runnable example, as it
// needs a test's testing.TB; a test uses it so:
//
//	c := fleettest.NewCoordinator(t) // stopped at t's end
//	c.Populate("alt.binaries.a", "alt.binaries.b")
//	r, err := fleet.New(fleet.Config{Coordinators: []string{c.URL}, Token: fleettest.AdminToken})
package fleettest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/blobstore"
	"github.com/edgeindex/edgeindex/coordinator"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/node"
	"github.com/edgeindex/edgeindex/spool"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// AdminToken is the admin token of every Coordinator.
const AdminToken = "fleet-reader-test-admin-token"

// Coordinator is a real coordinator for a test.
type Coordinator struct {
	t     testing.TB
	store *sqlstore.Store
	http  *httptest.Server
	// URL is its base URL; Host its host:port.
	URL, Host string
	// NodeToken is edge-1's token, once Populate made it.
	NodeToken string

	// FleetReqs counts GET /v1/fleet, NodeReqs GET /v1/nodes/{name}.
	FleetReqs, NodeReqs atomic.Int64
	// Fail makes both answer 500.
	Fail atomic.Bool
	gate atomic.Pointer[chan struct{}]
}

// NewCoordinator starts a coordinator with no nodes and no groups; it stops
// when the test ends.
func NewCoordinator(t testing.TB) *Coordinator {
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
	svc, err := coordinator.NewService(coordinator.Config{Store: st, Spool: sp, Snapshots: snaps, AdminToken: AdminToken})
	require.NoError(t, err)
	srv := coordinator.NewServer(svc)

	c := &Coordinator{t: t, store: st}
	c.http = httptest.NewServer(c.wrap(srv))
	t.Cleanup(func() { srv.Drain(); c.http.Close() })
	c.URL = c.http.URL
	c.Host = strings.TrimPrefix(c.URL, "http://")
	return c
}

// wrap counts the admin reads of srv, and holds or fails them.
func (c *Coordinator) wrap(srv http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/fleet":
			c.FleetReqs.Add(1)
		case strings.HasPrefix(r.URL.Path, "/v1/nodes/"):
			c.NodeReqs.Add(1)
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
		if c.Fail.Load() {
			http.Error(w, `{"error": "the database is on fire"}`, http.StatusInternalServerError)
			return
		}
		srv.ServeHTTP(w, r)
	})
}

// Hold makes GET /v1/fleet and /v1/nodes/{name} wait until the returned
// func is called (or the test ends).
func (c *Coordinator) Hold() (release func()) {
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

// Populate gives the coordinator two nodes, an unordered group with a range
// leased to edge-1 and stored up to 1024 (25 of 100 articles), and an
// ordered group whose history lane edge-2 holds. It returns the lease.
func (c *Coordinator) Populate(unordered, ordered string) lease.Lease {
	c.t.Helper()
	c.NodeToken = c.addNode("edge-1")
	c.addNode("edge-2")
	ctx := c.t.Context()
	_, err := c.store.AddGroup(ctx, grouplease.Group{Name: unordered, RangeSize: 100, ChunkSize: 25})
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

// addNode adds a node and returns its token.
func (c *Coordinator) addNode(name string) string {
	c.t.Helper()
	tok, err := node.NewToken()
	require.NoError(c.t, err)
	_, err = c.store.AddNode(c.t.Context(), name, node.HashToken(tok))
	require.NoError(c.t, err)
	return tok
}
