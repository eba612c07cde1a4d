package fleet

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/fleet/fleettest"
	"github.com/edgeindex/edgeindex/fleetcache"
	"github.com/edgeindex/edgeindex/lease"
)

func TestFleetTwoCoordinators(t *testing.T) {
	t.Parallel()
	a, b := fleettest.NewCoordinator(t), fleettest.NewCoordinator(t)
	la := a.Populate("alt.binaries.a", "alt.ordered.a")
	b.Populate("alt.binaries.b", "alt.ordered.b")
	rd := startReader(t, readerOptions{urls: []string{a.URL, b.URL + "/"}})

	f, ans := rd.fleet()
	require.Len(t, f.Hosts, 2)
	require.Equal(t, a.Host, f.Hosts[0].Host)
	require.Equal(t, b.Host, f.Hosts[1].Host)
	for _, h := range f.Hosts {
		require.Equal(t, StatusOK, h.Status, h.Detail)
		require.Empty(t, h.Detail)
		require.NotNil(t, h.Fleet)
		require.Equal(t, api.FleetSchema, h.Fleet.Schema)
	}
	require.Equal(t, f.PolledAt, f.Served.PolledAt)
	require.False(t, f.Served.FromCache, "the first request waits for the read")
	require.False(t, f.Served.Stale)
	require.Equal(t, 15.0, f.Served.KeptForSeconds)
	require.Equal(t, "max-age=15, stale-while-revalidate=15", ans.header.Get("Cache-Control"))
	require.NotEmpty(t, ans.header.Get("ETag"))

	// Host a's node edge-1 holds the range [1000, 1099], stored to 1024.
	fa := f.Hosts[0].Fleet
	var edge1 *api.FleetNode
	for i := range fa.Nodes {
		if fa.Nodes[i].Name == "edge-1" {
			edge1 = &fa.Nodes[i]
		}
	}
	require.NotNil(t, edge1, "%+v", fa.Nodes)
	require.Len(t, edge1.Leases, 1)
	require.Equal(t, api.FleetLease{Range: la.Range.ID, Group: "alt.binaries.a", Lane: lease.LaneHistory,
		Start: 1000, Next: 1025, End: 1099, ExpiresAt: edge1.Leases[0].ExpiresAt}, edge1.Leases[0])
	var lane *api.FleetLane
	for _, g := range fa.Groups {
		if g.Name == "alt.ordered.a" {
			require.True(t, g.Ordered)
			require.NotEmpty(t, g.Lanes)
			lane = &g.Lanes[0]
		}
	}
	require.NotNil(t, lane, "%+v", fa.Groups)
	require.Equal(t, "edge-2", lane.Holder)
	require.Equal(t, int64(3), lane.Ranges[lease.StatePending]+lane.Ranges[lease.StateLeased])

	// The second request comes from the cache: no coordinator is read again.
	rd.clock.Advance(5 * time.Second)
	f2, ans2 := rd.fleet()
	require.True(t, f2.Served.FromCache)
	require.False(t, f2.Served.Stale)
	require.Equal(t, 5.0, f2.Served.CacheAgeSeconds)
	require.Equal(t, f.PolledAt, f2.PolledAt)
	require.Equal(t, "max-age=10, stale-while-revalidate=15", ans2.header.Get("Cache-Control"))
	require.Equal(t, "5", ans2.header.Get("Age"))
	require.Equal(t, int64(1), a.FleetReqs.Load())
	require.Equal(t, int64(1), b.FleetReqs.Load())

	// HEAD answers the headers alone.
	head := rd.do("HEAD", "/v1/fleet")
	require.Equal(t, http.StatusOK, head.status)
	require.Empty(t, head.body)
	require.Equal(t, int64(1), a.FleetReqs.Load())
}

// The body's "served" is encoded by hand; it must say what encoding/json
// would.
func TestServedEncoding(t *testing.T) {
	t.Parallel()
	at := time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)
	for _, m := range []fleetcache.Meta{
		{},
		{ServedAt: at.Add(1500 * time.Millisecond), PolledAt: at, CacheAgeSeconds: 1.5, KeptForSeconds: 15, FromCache: true},
		{ServedAt: at, PolledAt: at, CacheAgeSeconds: 1e-7, KeptForSeconds: 0.25, Stale: true, Refreshing: true},
		{ServedAt: at, PolledAt: at, CacheAgeSeconds: 123456789.125, KeptForSeconds: 1e9},
	} {
		want, err := json.Marshal(m)
		require.NoError(t, err)
		got := appendMeta(nil, m)
		require.JSONEq(t, string(want), string(got))

		f := &Read{hosts: []Host{{Host: "h:1", Status: StatusError, Detail: `"quoted" <b>`}}}
		f.hostsJSON, err = json.Marshal(f.hosts)
		require.NoError(t, err)
		want, err = json.Marshal(fleetBody{PolledAt: m.PolledAt, Hosts: f.hosts, Served: m})
		require.NoError(t, err)
		require.JSONEq(t, string(want), string(f.body(m)))
	}
}

func TestFleetOneDown(t *testing.T) {
	t.Parallel()
	a := fleettest.NewCoordinator(t)
	a.Populate("alt.binaries.a", "alt.ordered.a")
	dead := deadURL(t)
	rd := startReader(t, readerOptions{urls: []string{a.URL, dead}})

	f, ans := rd.fleet()
	require.Len(t, f.Hosts, 2)
	require.Equal(t, StatusOK, f.Hosts[0].Status)
	require.Equal(t, strings.TrimPrefix(dead, "http://"), f.Hosts[1].Host)
	require.Equal(t, StatusUnreachable, f.Hosts[1].Status)
	require.Contains(t, f.Hosts[1].Detail, "refused")
	require.Nil(t, f.Hosts[1].Fleet)
	require.Equal(t, "no-store", ans.header.Get("Cache-Control"), "a read that is not kept is not cached downstream either")

	// The read was not kept: the next request reads again.
	f, _ = rd.fleet()
	require.Equal(t, StatusUnreachable, f.Hosts[1].Status)
	require.Equal(t, int64(2), a.FleetReqs.Load())

	// /readyz tells how the last read went, and is still ready.
	r := rd.do("GET", "/readyz")
	require.Equal(t, http.StatusOK, r.status)
	var ready readyBody
	require.NoError(t, json.Unmarshal(r.body, &ready))
	require.True(t, ready.Ready)
	require.NotNil(t, ready.LastFleetRead)
	require.False(t, ready.LastFleetRead.OK)
	require.Equal(t, uint64(0), ready.LastFleetRead.Generation)
	require.Contains(t, ready.LastFleetRead.Error, strings.TrimPrefix(dead, "http://")+" unreachable: ")

	// The dashboard shows the failed host and says the read was not kept.
	d := rd.do("GET", "/")
	require.Equal(t, http.StatusOK, d.status)
	require.Contains(t, string(d.body), `id="not-kept-badge"`)
	require.Contains(t, string(d.body), "unreachable")
	require.Equal(t, int64(3), a.FleetReqs.Load())
}

// Once a good read is kept, a refresh in which a host fails is not kept: the
// good read is served, stale, and each later request may try again.
func TestFleetFailedRefreshKeepsTheGoodRead(t *testing.T) {
	t.Parallel()
	a := fleettest.NewCoordinator(t)
	a.Populate("alt.binaries.a", "alt.ordered.a")
	rd := startReader(t, readerOptions{urls: []string{a.URL}})

	first, _ := rd.fleet()
	a.Fail.Store(true)
	rd.clock.Advance(20 * time.Second)
	f, _ := rd.fleet()
	require.True(t, f.Served.Stale)
	require.Equal(t, first.PolledAt, f.PolledAt)
	require.Equal(t, StatusOK, f.Hosts[0].Status)
	require.NoError(t, rd.m.fleet.Wait(t.Context()))
	require.Equal(t, int64(2), a.FleetReqs.Load())

	info, ok := rd.m.fleet.LastRead()
	require.True(t, ok)
	require.False(t, info.OK)
	require.Equal(t, uint64(1), info.Generation)

	f, _ = rd.fleet()
	require.True(t, f.Served.Stale, "the failed refresh was not kept")
	require.Equal(t, first.PolledAt, f.PolledAt)
	require.NoError(t, rd.m.fleet.Wait(t.Context()))
	require.Equal(t, int64(3), a.FleetReqs.Load(), "each stale request after a failed refresh may start another")

	d := rd.do("GET", "/")
	require.Contains(t, string(d.body), `id="last-failed"`)
	require.Contains(t, string(d.body), "the database is on fire")
	require.NoError(t, rd.m.fleet.Wait(t.Context()))

	a.Fail.Store(false)
	rd.fleet()
	require.NoError(t, rd.m.fleet.Wait(t.Context()))
	f, _ = rd.fleet()
	require.False(t, f.Served.Stale)
	require.True(t, f.PolledAt.After(first.PolledAt))
}

func TestFleetUnauthorized(t *testing.T) {
	t.Parallel()
	a := fleettest.NewCoordinator(t)
	a.Populate("alt.binaries.a", "alt.ordered.a")
	for _, tc := range []struct {
		name, token, code string
	}{
		{"wrong token", "not-the-admin-token", "401"},
		{"node token", a.NodeToken, "403"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rd := startReader(t, readerOptions{urls: []string{a.URL}, token: tc.token})
			f, ans := rd.fleet()
			require.Len(t, f.Hosts, 1)
			require.Equal(t, StatusUnauthorized, f.Hosts[0].Status)
			require.Contains(t, f.Hosts[0].Detail, tc.code)
			require.Nil(t, f.Hosts[0].Fleet)
			require.Equal(t, "no-store", ans.header.Get("Cache-Control"))
		})
	}
}

func TestFleetStaleOneRefresh(t *testing.T) {
	t.Parallel()
	a, b := fleettest.NewCoordinator(t), fleettest.NewCoordinator(t)
	a.Populate("alt.binaries.a", "alt.ordered.a")
	rd := startReader(t, readerOptions{urls: []string{a.URL, b.URL}, keep: 15 * time.Second})

	first, _ := rd.fleet()
	rd.clock.Advance(14 * time.Second)
	f, _ := rd.fleet()
	require.False(t, f.Served.Stale)
	require.Equal(t, int64(1), a.FleetReqs.Load())

	// After keep, many concurrent requests are all answered at once, stale,
	// from the read they have, while exactly one refresh reads each host.
	rd.clock.Advance(2 * time.Second)
	releaseA, releaseB := a.Hold(), b.Hold()
	const n = 40
	var wg sync.WaitGroup
	served := make([]fleetcache.Meta, n)
	polled := make([]time.Time, n)
	for i := range n {
		wg.Go(func() {
			a := rd.do("GET", "/v1/fleet")
			var f fleetBody
			if a.status == http.StatusOK && json.Unmarshal(a.body, &f) == nil {
				served[i], polled[i] = f.Served, f.PolledAt
			}
		})
	}
	wg.Wait()
	for i := range n {
		require.True(t, served[i].Stale, "request %d", i)
		require.True(t, served[i].Refreshing, "request %d", i)
		require.True(t, served[i].FromCache, "request %d", i)
		require.Equal(t, 16.0, served[i].CacheAgeSeconds)
		require.Equal(t, first.PolledAt, polled[i])
	}
	// The refresh runs apart from the answers, so it may reach the hosts
	// after the last answer: wait for it to be held there.
	require.Eventually(t, func() bool { return a.FleetReqs.Load() == 2 && b.FleetReqs.Load() == 2 },
		time.Minute, time.Millisecond, "the refresh reaches both hosts")
	releaseA()
	releaseB()
	require.NoError(t, rd.m.fleet.Wait(t.Context()))
	require.Equal(t, int64(2), a.FleetReqs.Load(), "one refresh for all of them")
	require.Equal(t, int64(2), b.FleetReqs.Load())

	f, _ = rd.fleet()
	require.False(t, f.Served.Stale)
	require.Equal(t, 0.0, f.Served.CacheAgeSeconds)
	require.Equal(t, first.PolledAt.Add(16*time.Second), f.PolledAt)
	require.Equal(t, int64(2), a.FleetReqs.Load())
}

func TestSeat(t *testing.T) {
	t.Parallel()
	a := fleettest.NewCoordinator(t)
	la := a.Populate("alt.binaries.a", "alt.ordered.a")
	rd := startReader(t, readerOptions{urls: []string{a.URL}})

	type seatBody struct {
		Host   string          `json:"host"`
		Node   api.NodeDetail  `json:"node"`
		Served fleetcache.Meta `json:"served"`
	}
	seat := func(key string) seatBody {
		t.Helper()
		r := rd.do("GET", "/v1/seat?key="+url.QueryEscape(key))
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var s seatBody
		require.NoError(t, json.Unmarshal(r.body, &s), "%s", r.body)
		return s
	}
	s := seat(a.Host + "/edge-1")
	require.Equal(t, a.Host, s.Host)
	require.Equal(t, "edge-1", s.Node.Name)
	require.Len(t, s.Node.Leases, 1)
	require.Equal(t, la.Range.ID, s.Node.Leases[0].Range)
	require.Len(t, s.Node.Batches, 1)
	require.Equal(t, int64(1024), s.Node.Batches[0].To)
	require.False(t, s.Served.FromCache)
	require.Equal(t, 10.0, s.Served.KeptForSeconds)
	require.Equal(t, int64(1), a.NodeReqs.Load())
	require.Equal(t, int64(1), a.FleetReqs.Load(), "a seat belongs to a fleet read")

	// Kept within the same fleet read and the TTL.
	rd.clock.Advance(5 * time.Second)
	s = seat(a.Host + "/edge-1")
	require.True(t, s.Served.FromCache)
	require.Equal(t, int64(1), a.NodeReqs.Load())

	// Past the seat's TTL it is read again.
	rd.clock.Advance(6 * time.Second)
	s = seat(a.Host + "/edge-1")
	require.False(t, s.Served.FromCache)
	require.Equal(t, int64(2), a.NodeReqs.Load())

	// A new fleet read makes the kept seats of the old one useless.
	rd.clock.Advance(5 * time.Second) // the fleet read is 16 s old: stale
	rd.fleet()
	require.NoError(t, rd.m.fleet.Wait(t.Context()))
	require.Equal(t, int64(2), a.FleetReqs.Load())
	s = seat(a.Host + "/edge-1")
	require.False(t, s.Served.FromCache)
	require.Equal(t, int64(3), a.NodeReqs.Load())

	// The cursor goes through to the coordinator.
	s = seat(a.Host + "/edge-1")
	require.Equal(t, int64(3), a.NodeReqs.Load())
	r := rd.do("GET", "/v1/seat?key="+url.QueryEscape(a.Host+"/edge-1")+"&cursor=x")
	require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
	require.Contains(t, errorText(t, r), "cursor")
	require.Equal(t, int64(4), a.NodeReqs.Load())

	for _, tc := range []struct {
		query  string
		status int
		says   string
	}{
		{"", http.StatusBadRequest, "key is missing"},
		{"?key=", http.StatusBadRequest, "key is missing"},
		{"?key=" + url.QueryEscape(a.Host), http.StatusBadRequest, "not HOST/NODE"},
		{"?key=" + url.QueryEscape(a.Host+"/"), http.StatusBadRequest, "not HOST/NODE"},
		{"?key=" + url.QueryEscape("/edge-1"), http.StatusBadRequest, "not HOST/NODE"},
		{"?key=" + url.QueryEscape(a.Host+"/bad name"), http.StatusBadRequest, "node name"},
		{"?key=" + url.QueryEscape("10.9.9.9:1/edge-1"), http.StatusNotFound, "is not read here"},
		{"?key=" + url.QueryEscape(a.Host+"/nobody"), http.StatusNotFound, "has no node \"nobody\""},
	} {
		r := rd.do("GET", "/v1/seat"+tc.query)
		require.Equal(t, tc.status, r.status, "%s: %s", tc.query, r.body)
		require.Contains(t, errorText(t, r), tc.says, tc.query)
	}
	require.Equal(t, int64(5), a.NodeReqs.Load(), "only the unknown node reached the coordinator")
}

// Issue 9, defect 11: while a host fails, no fleet read is kept and every
// one has generation 0; a seat read under one of them is not kept, so a
// later failed fleet read never gets it.
func TestSeatUnderFailedFleetReadsNotReused(t *testing.T) {
	t.Parallel()
	a := fleettest.NewCoordinator(t)
	a.Populate("alt.binaries.a", "alt.ordered.a")
	rd := startReader(t, readerOptions{urls: []string{a.URL, deadURL(t)}})

	for i := range 3 {
		r := rd.do("GET", "/v1/seat?key="+url.QueryEscape(a.Host+"/edge-1"))
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var s struct {
			Served fleetcache.Meta `json:"served"`
		}
		require.NoError(t, json.Unmarshal(r.body, &s), "%s", r.body)
		require.False(t, s.Served.FromCache, "seat %d", i)
		require.Equal(t, "no-store", r.header.Get("Cache-Control"), "a seat that is not kept is not cached downstream either")
		require.Equal(t, int64(i+1), a.FleetReqs.Load(), "each seat request waited for a fleet read of its own")
		require.Equal(t, int64(i+1), a.NodeReqs.Load(), "seat %d is read under its own fleet read", i)
	}
	require.Zero(t, rd.m.seats.Len())
}

func TestSeatUpstreamFailures(t *testing.T) {
	t.Parallel()
	a := fleettest.NewCoordinator(t)
	a.Populate("alt.binaries.a", "alt.ordered.a")
	dead := deadURL(t)
	deadHost := strings.TrimPrefix(dead, "http://")
	rd := startReader(t, readerOptions{urls: []string{a.URL, dead}})
	r := rd.do("GET", "/v1/seat?key="+url.QueryEscape(deadHost+"/edge-1"))
	require.Equal(t, http.StatusBadGateway, r.status, "%s", r.body)
	require.Contains(t, errorText(t, r), "unreachable")

	wrong := startReader(t, readerOptions{urls: []string{a.URL}, token: "wrong"})
	r = wrong.do("GET", "/v1/seat?key="+url.QueryEscape(a.Host+"/edge-1"))
	require.Equal(t, http.StatusBadGateway, r.status, "%s", r.body)
	require.Contains(t, errorText(t, r), "refused the admin token")
}

// A coordinator that does not answer within --timeout is unreachable, and a
// seat read of it is a 504.
func TestTimeout(t *testing.T) {
	t.Parallel()
	a := fleettest.NewCoordinator(t)
	a.Populate("alt.binaries.a", "alt.ordered.a")
	rd := startReader(t, readerOptions{urls: []string{a.URL}, timeout: 100 * time.Millisecond})
	release := a.Hold()
	f, _ := rd.fleet()
	require.Equal(t, StatusUnreachable, f.Hosts[0].Status)
	require.Equal(t, "no answer within 100ms", f.Hosts[0].Detail)

	r := rd.do("GET", "/v1/seat?key="+url.QueryEscape(a.Host+"/edge-1"))
	require.Equal(t, http.StatusGatewayTimeout, r.status, "%s", r.body)
	require.Contains(t, errorText(t, r), "did not answer within 100ms")

	release()
	f, _ = rd.fleet()
	require.Equal(t, StatusOK, f.Hosts[0].Status)
}

func TestReadyz(t *testing.T) {
	t.Parallel()
	a := fleettest.NewCoordinator(t)
	a.Populate("alt.binaries.a", "alt.ordered.a")
	rd := startReader(t, readerOptions{urls: []string{a.URL}})

	readyz := func() (readyBody, map[string]any) {
		t.Helper()
		r := rd.do("GET", "/readyz")
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		require.Equal(t, "no-store", r.header.Get("Cache-Control"))
		var b readyBody
		require.NoError(t, json.Unmarshal(r.body, &b))
		var raw map[string]any
		require.NoError(t, json.Unmarshal(r.body, &raw))
		return b, raw
	}
	b, raw := readyz()
	require.Equal(t, ReadySchema, b.Schema)
	require.True(t, b.Ready)
	require.NotEmpty(t, b.Meaning)
	require.False(t, b.StartedAt.IsZero())
	require.False(t, b.ServedAt.IsZero())
	require.Nil(t, b.LastFleetRead)
	require.Contains(t, raw, "lastFleetRead")
	require.ElementsMatch(t, []string{"schema", "ready", "meaning", "startedAt", "servedAt", "lastFleetRead"}, keys(raw))
	require.Equal(t, int64(0), a.FleetReqs.Load(), "readyz calls no coordinator")

	rd.fleet()
	b, _ = readyz()
	require.NotNil(t, b.LastFleetRead)
	require.True(t, b.LastFleetRead.OK)
	require.Equal(t, uint64(1), b.LastFleetRead.Generation)
	require.Equal(t, int64(1), a.FleetReqs.Load())
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestRoutesAndMethods(t *testing.T) {
	t.Parallel()
	a := fleettest.NewCoordinator(t)
	rd := startReader(t, readerOptions{urls: []string{a.URL}})
	for _, path := range []string{"/v1/fleet", "/v1/seat", "/readyz", "/"} {
		for _, method := range []string{"POST", "PUT", "DELETE", "PATCH"} {
			r := rd.do(method, path)
			require.Equal(t, http.StatusMethodNotAllowed, r.status, "%s %s", method, path)
			require.Equal(t, "GET, HEAD", r.header.Get("Allow"))
			require.Contains(t, errorText(t, r), "not allowed")
		}
	}
	for _, path := range []string{"/nope", "/v1/fleet/", "/v1", "/index.html", "/v1/nodes/edge-1"} {
		r := rd.do("GET", path)
		require.Equal(t, http.StatusNotFound, r.status, path)
		require.Contains(t, errorText(t, r), "nothing is served")
	}
	require.Equal(t, int64(0), a.FleetReqs.Load())
}

func TestDashboardHTML(t *testing.T) {
	t.Parallel()
	a := fleettest.NewCoordinator(t)
	evil := `<script>alert("x")</script>`
	a.Populate(evil, "alt.ordered.a")
	rd := startReader(t, readerOptions{urls: []string{a.URL}})

	r := rd.do("GET", "/")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, "text/html; charset=utf-8", r.header.Get("Content-Type"))
	require.Equal(t, "no-store", r.header.Get("Cache-Control"), "the page shows its age as of now")
	page := string(r.body)
	require.NotContains(t, page, "<script", "user data is escaped")
	require.Contains(t, page, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;")
	require.Contains(t, page, `<progress class="lease-progress" value="25" max="100"`)
	require.Contains(t, page, "25.0%")
	require.Contains(t, page, `id="fresh-badge"`)
	require.NotContains(t, page, `id="stale-badge"`)
	hrefs := regexp.MustCompile(`href="/v1/seat\?key=([^"]+)"`).FindAllStringSubmatch(page, -1)
	require.Len(t, hrefs, 2, "one seat link per node")
	key, err := url.QueryUnescape(hrefs[0][1])
	require.NoError(t, err)
	require.Equal(t, a.Host+"/edge-1", key)

	rd.clock.Advance(20 * time.Second)
	r = rd.do("GET", "/")
	require.Contains(t, string(r.body), `id="stale-badge"`)
	require.Contains(t, string(r.body), "stale · 20s old")
	require.NoError(t, rd.m.fleet.Wait(t.Context()))
}

func TestLeaseProgress(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		start, next, end int64
		done, total      int64
		pct              string
	}{
		{1000, 1000, 1099, 0, 100, "0.0"},
		{1000, 1025, 1099, 25, 100, "25.0"},
		{1000, 1100, 1099, 100, 100, "100.0"},
		{5, 5, 5, 0, 1, "0.0"},
		{5, 6, 5, 1, 1, "100.0"},
		{3_000_000_000, 3_000_000_001, 3_000_000_002, 1, 3, "33.3"},
	} {
		v := leaseView(api.FleetLease{Start: tc.start, Next: tc.next, End: tc.end, ExpiresAt: now.Add(time.Minute)}, now)
		require.Equal(t, tc.done, v.Done)
		require.Equal(t, tc.total, v.Total)
		require.Equal(t, tc.pct, v.Percent)
		require.Equal(t, "in 1m 0s", v.Expires)
	}
	require.Equal(t, "expired 3s ago", leaseView(api.FleetLease{ExpiresAt: now.Add(-3 * time.Second)}, now).Expires)
}
