package coordinator_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/blobstore"
	"github.com/edgeindex/edgeindex/coordinator"
	"github.com/edgeindex/edgeindex/corpus"
	"github.com/edgeindex/edgeindex/edgeframe"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/internal/pgtest"
	"github.com/edgeindex/edgeindex/internal/testmain"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/node"
	"github.com/edgeindex/edgeindex/overview"
	"github.com/edgeindex/edgeindex/sources"
	"github.com/edgeindex/edgeindex/spool"
	"github.com/edgeindex/edgeindex/sqlstore"
	"github.com/edgeindex/edgeindex/storetest"
)

func TestMain(m *testing.M) { testmain.Main(m) }

var backends = pgtest.Backends

const adminToken = "admin-secret-token"

// harness is a coordinator over real HTTP on a real store, with a disk
// spool filled by the synthetic source.
type harness struct {
	t      *testing.T
	store  *sqlstore.Store
	spool  *spool.Disk
	corpus *corpus.Disk
	src    *sources.Synthetic
	srv    *coordinator.Server
	http   *httptest.Server
	snaps  *watchedStore // the snapshot store
	// snapDir is the snapshot store's directory when it is on disk.
	snapDir string
	token   string // node "edge-1"
	token2  string // node "edge-2"
}

func newHarness(t *testing.T, url string, tweak func(*coordinator.Config)) *harness {
	t.Helper()
	return newHarnessServer(t, url, tweak, nil)
}

// newHarnessServer is newHarness with the http.Server tuned by serverTweak
// before it starts.
func newHarnessServer(t *testing.T, url string, tweak func(*coordinator.Config), serverTweak func(*http.Server)) *harness {
	t.Helper()
	ctx := t.Context()
	st, err := sqlstore.Open(ctx, url, sqlstore.Config{RetryDelay: time.Millisecond}) // a corrupt range waits 1 ms
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return newHarnessOn(t, st, tweak, serverTweak)
}

// newHarnessStore is newHarness on a store the test opened.
func newHarnessStore(t *testing.T, st *sqlstore.Store, tweak func(*coordinator.Config)) *harness {
	t.Helper()
	return newHarnessOn(t, st, tweak, nil)
}

func newHarnessOn(t *testing.T, st *sqlstore.Store, tweak func(*coordinator.Config), serverTweak func(*http.Server)) *harness {
	t.Helper()
	sp, err := spool.Open(t.TempDir(), spool.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { sp.Close() })
	cp, err := corpus.Open(t.TempDir(), corpus.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { cp.Close() })
	src, err := sources.NewSynthetic(sources.SyntheticConfig{})
	require.NoError(t, err)
	snaps, err := blobstore.OpenDir(t.TempDir())
	require.NoError(t, err)
	cfg := coordinator.Config{Store: st, Spool: sp, Corpus: cp, Snapshots: snaps, AdminToken: adminToken,
		Metrics: coordinator.NewMetrics(nil)}
	if tweak != nil {
		tweak(&cfg)
	}
	var snapDir string
	if dir, ok := cfg.Snapshots.(*blobstore.Dir); ok {
		snapDir = dir.Root()
	}
	watched := &watchedStore{Store: cfg.Snapshots, putting: map[string]int{}}
	cfg.Snapshots = watched
	svc, err := coordinator.NewService(cfg)
	require.NoError(t, err)
	srv := coordinator.NewServer(svc)
	// The coordinator's own http.Server settings (timeouts, header limit).
	hs := httptest.NewUnstartedServer(srv)
	hs.Config = srv.HTTPServer()
	if serverTweak != nil {
		serverTweak(hs.Config)
	}
	hs.Start()
	t.Cleanup(func() { srv.Drain(); hs.Close() })
	h := &harness{t: t, store: st, spool: sp, corpus: cp, src: src, srv: srv, http: hs, snaps: watched, snapDir: snapDir}
	h.token = h.addNode("edge-1")
	h.token2 = h.addNode("edge-2")
	return h
}

func (h *harness) addNode(name string) string {
	tok, err := node.NewToken()
	require.NoError(h.t, err)
	_, err = h.store.AddNode(h.t.Context(), name, node.HashToken(tok))
	require.NoError(h.t, err)
	return tok
}

func (h *harness) group(name string, ordered bool, from, to int64, lane lease.Lane) grouplease.Group {
	g, err := h.store.AddGroup(h.t.Context(), grouplease.Group{Name: name, Ordered: ordered, RangeSize: 100, ChunkSize: 25})
	require.NoError(h.t, err)
	_, err = h.store.AddRanges(h.t.Context(), grouplease.NewRanges{Group: name, From: from, To: to, Lane: lane})
	require.NoError(h.t, err)
	return g
}

// fill puts the range's chunks in the spool, as a prefetcher would.
func (h *harness) fill(r lease.Range, chunkSize int64) {
	for _, span := range lease.Spans(r.Start, r.End, chunkSize) {
		data, err := h.src.Fetch(h.t.Context(), r.Group, span)
		require.NoError(h.t, err)
		require.NoError(h.t, h.spool.Put(r.ID, span, data))
	}
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) errorText(t *testing.T) string {
	t.Helper()
	var e struct {
		Error string `json:"error"`
	}
	require.NoError(t, json.Unmarshal(r.body, &e), "JSON error body: %s", r.body)
	require.NotEmpty(t, e.Error)
	return e.Error
}

func (h *harness) do(method, path, token string, leaseToken int64, body io.Reader) reply {
	h.t.Helper()
	req, err := http.NewRequestWithContext(h.t.Context(), method, h.http.URL+path, body)
	require.NoError(h.t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if leaseToken != 0 {
		req.Header.Set("Lease-Token", fmt.Sprint(leaseToken))
	}
	resp, err := h.http.Client().Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

func (h *harness) lease(token string) lease.Lease {
	h.t.Helper()
	r := h.do("POST", "/v1/lease", token, 0, nil)
	require.Equal(h.t, http.StatusOK, r.status, "%s", r.body)
	var l lease.Lease
	require.NoError(h.t, json.Unmarshal(r.body, &l))
	return l
}

func jsonBody(v any) io.Reader {
	b, _ := json.Marshal(v)
	return bytes.NewReader(b)
}

func decodeFrames(t *testing.T, body []byte) []edgeframe.Frame {
	t.Helper()
	rd, err := edgeframe.NewReader(bytes.NewReader(body), edgeframe.Config{})
	require.NoError(t, err)
	var out []edgeframe.Frame
	for {
		f, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			return out // an error frame came before, or the stream was cut
		}
		f.Data = bytes.Clone(f.Data)
		out = append(out, f)
	}
}

func eachBackend(t *testing.T, fn func(t *testing.T, url func(testing.TB) string)) {
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			fn(t, b.URL)
		})
	}
}

func TestAuthAndRoutes(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, url func(testing.TB) string) {
		h := newHarness(t, url(t), nil)
		require.Equal(t, http.StatusUnauthorized, h.do("POST", "/v1/lease", "", 0, nil).status)
		r := h.do("POST", "/v1/lease", "not-a-token", 0, nil)
		require.Equal(t, http.StatusUnauthorized, r.status)
		r.errorText(t)
		r = h.do("GET", "/v1/ranges", h.token, 0, nil)
		require.Equal(t, http.StatusForbidden, r.status, "a node token on the admin API")
		require.Contains(t, r.errorText(t), "admin")
		require.Equal(t, http.StatusUnauthorized, h.do("GET", "/v1/ranges", "wrong", 0, nil).status)
		require.Equal(t, http.StatusOK, h.do("GET", "/v1/ranges", adminToken, 0, nil).status)
		require.Equal(t, http.StatusUnauthorized, h.do("POST", "/v1/lease", adminToken, 0, nil).status, "the admin token is not a node's")

		require.Equal(t, http.StatusOK, h.do("GET", "/healthz", "", 0, nil).status)
		require.Equal(t, http.StatusOK, h.do("GET", "/readyz", "", 0, nil).status)
		m := h.do("GET", "/metrics", "", 0, nil)
		require.Equal(t, http.StatusOK, m.status)
		require.Contains(t, string(m.body), "edgeindex_batches_total")

		r = h.do("GET", "/v1/nowhere", h.token, 0, nil)
		require.Equal(t, http.StatusNotFound, r.status)
		r.errorText(t)
		r = h.do("DELETE", "/v1/lease", h.token, 0, nil)
		require.Equal(t, http.StatusMethodNotAllowed, r.status)
		require.Contains(t, r.header.Get("Allow"), "POST")
		r.errorText(t)
		require.Equal(t, http.StatusNoContent, h.do("POST", "/v1/lease", h.token, 0, nil).status, "nothing to do")
	})
}

func TestRangeLifecycle(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, url func(testing.TB) string) {
		h := newHarness(t, url(t), nil)
		h.group("alt.binaries.test", false, 3_000_000_001, 3_000_000_100, lease.LaneHistory)
		l := h.lease(h.token)
		require.Equal(t, int64(3_000_000_001), l.Range.Start)
		require.Equal(t, int64(25), l.ChunkSize)
		require.EqualValues(t, time.Minute, l.TTL)
		h.fill(l.Range, l.ChunkSize)

		id := l.Range.ID
		path := fmt.Sprintf("/v1/ranges/%d", id)
		r := h.do("GET", path+"/stream", h.token, l.Token, nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		require.Equal(t, edgeframe.ContentType, r.header.Get("Content-Type"))
		frames := decodeFrames(t, r.body)
		require.Len(t, frames, 5)
		require.Equal(t, edgeframe.TypeEnd, frames[4].Type)
		for i, f := range frames[:4] {
			require.Equal(t, edgeframe.TypeChunk, f.Type)
			require.Equal(t, l.Range.Start+int64(i)*25, f.From)
			n := 0
			require.NoError(t, overview.ReadChunk(f.Data, func(o overview.Overview) error {
				require.Equal(t, fmt.Sprintf("<%d@alt.binaries.test.synthetic>", o.Number), o.MessageID)
				n++
				return nil
			}))
			require.Equal(t, 25, n)
		}

		for i, f := range frames[:4] {
			body := jsonBody(map[string]any{"from": f.From, "to": f.To, "headers": 25,
				"items": []map[string]any{{"key": fmt.Sprintf("k%d", i), "value": map[string]int{"n": i}}}})
			r := h.do("POST", path+"/batch", h.token, l.Token, body)
			require.Equal(t, http.StatusOK, r.status, "%s", r.body)
			require.JSONEq(t, fmt.Sprintf(`{"next": %d, "duplicate": false}`, f.To+1), string(r.body))
		}
		r = h.do("POST", path+"/batch", h.token, l.Token, jsonBody(map[string]any{"from": frames[0].From, "to": frames[0].To, "headers": 25, "items": []any{}}))
		require.Equal(t, http.StatusOK, r.status)
		require.JSONEq(t, `{"next": 3000000101, "duplicate": true}`, string(r.body))

		r = h.do("POST", path+"/heartbeat", h.token, l.Token, nil)
		require.Equal(t, http.StatusOK, r.status)
		require.Contains(t, string(r.body), "expiresAt")
		r = h.do("POST", path+"/finish", h.token, l.Token, nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		require.JSONEq(t, `{"ok": true}`, string(r.body))
		require.False(t, h.spool.Has(id, lease.Span{From: l.Range.Start, To: l.Range.Start + 24}), "a done range's chunks are dropped")
		r = h.do("POST", path+"/finish", h.token, l.Token, nil)
		require.Equal(t, http.StatusConflict, r.status)
		require.Contains(t, r.errorText(t), "lease lost")

		// The admin API sees it all.
		r = h.do("GET", "/v1/ranges?group=alt.binaries.test&state=done", adminToken, 0, nil)
		require.Equal(t, http.StatusOK, r.status)
		var ranges struct {
			Ranges []lease.Range `json:"ranges"`
			Next   *string       `json:"next"`
		}
		require.NoError(t, json.Unmarshal(r.body, &ranges))
		require.Len(t, ranges.Ranges, 1)
		require.Equal(t, int64(100), ranges.Ranges[0].Headers)
		require.Nil(t, ranges.Next)
		var results struct {
			Results []map[string]any `json:"results"`
			Next    *string          `json:"next"`
		}
		require.Eventually(t, func() bool {
			r = h.do("GET", "/v1/results?limit=3", adminToken, 0, nil)
			require.Equal(t, http.StatusOK, r.status)
			require.NoError(t, json.Unmarshal(r.body, &results))
			return len(results.Results) == 3
		}, 10*time.Second, 10*time.Millisecond)
		require.Equal(t, "k0", results.Results[0]["key"])
		require.Equal(t, map[string]any{"n": 0.0}, results.Results[0]["value"])
		r = h.do("GET", "/v1/results?after="+*results.Next, adminToken, 0, nil)
		require.NoError(t, json.Unmarshal(r.body, &results))
		require.Len(t, results.Results, 1)
		require.Equal(t, "k3", results.Results[0]["key"])
		require.Equal(t, http.StatusBadRequest, h.do("GET", "/v1/results?after=zzz", adminToken, 0, nil).status)
		require.Equal(t, http.StatusBadRequest, h.do("GET", "/v1/ranges?state=sleepy", adminToken, 0, nil).status)
		require.Equal(t, http.StatusBadRequest, h.do("GET", "/v1/ranges?limit=0", adminToken, 0, nil).status)
		require.Equal(t, http.StatusNotFound, h.do("GET", "/v1/ranges?group=nope", adminToken, 0, nil).status)

		m := h.do("GET", "/metrics", "", 0, nil)
		require.Contains(t, string(m.body), `edgeindex_batches_total{outcome="stored"} 4`)
		require.Contains(t, string(m.body), `edgeindex_batches_total{outcome="duplicate"} 1`)
		require.Contains(t, string(m.body), "edgeindex_items_stored_total 4")
		require.Contains(t, string(m.body), "edgeindex_leases_granted_total 1")
	})
}

func TestBadBatches(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, url func(testing.TB) string) {
		h := newHarness(t, url(t), func(c *coordinator.Config) { c.MaxBody = 2048 })
		h.group("g", false, 1, 100, lease.LaneHistory)
		l := h.lease(h.token)
		path := fmt.Sprintf("/v1/ranges/%d/batch", l.Range.ID)
		post := func(body string, token int64) reply {
			return h.do("POST", path, h.token, token, strings.NewReader(body))
		}
		for name, c := range map[string]struct {
			body   string
			status int
		}{
			"from after to":    {`{"from": 10, "to": 5, "headers": 0, "items": []}`, 400},
			"past the end":     {`{"from": 1, "to": 101, "headers": 0, "items": []}`, 400},
			"missing field":    {`{"from": 1, "to": 10, "items": []}`, 400},
			"wrong type":       {`{"from": "1", "to": 10, "headers": 0, "items": []}`, 400},
			"no key":           {`{"from": 1, "to": 10, "headers": 0, "items": [{"key": "", "value": 1}]}`, 400},
			"not json":         {`hello`, 400},
			"gap":              {`{"from": 2, "to": 10, "headers": 0, "items": []}`, 409},
			"too large":        {`{"from": 1, "to": 10, "headers": 0, "items": [{"key": "k", "value": "` + strings.Repeat("x", 4096) + `"}]}`, 413},
			"negative header":  {`{"from": 1, "to": 10, "headers": -1, "items": []}`, 400},
			"before the start": {`{"from": -5, "to": -1, "headers": 0, "items": [{"key": "k", "value": 1}]}`, 400},
		} {
			r := post(c.body, l.Token)
			require.Equal(t, c.status, r.status, "%s: %s", name, r.body)
			r.errorText(t)
		}
		require.Equal(t, http.StatusConflict, post(`{"from": 1, "to": 10, "headers": 0, "items": []}`, l.Token+1).status, "a stale token")
		r := post(`{"from": 1, "to": 10, "headers": 0, "items": []}`, 0)
		require.Equal(t, http.StatusBadRequest, r.status, "no Lease-Token")
		require.Contains(t, r.errorText(t), "Lease-Token")
		r = h.do("POST", path, h.token2, l.Token, strings.NewReader(`{"from": 1, "to": 10, "headers": 0, "items": []}`))
		require.Equal(t, http.StatusConflict, r.status, "another node")
		require.Contains(t, r.errorText(t), "lease lost")
		require.Equal(t, http.StatusNotFound, h.do("POST", "/v1/ranges/99999/batch", h.token, l.Token, strings.NewReader(`{"from": 1, "to": 10, "headers": 0, "items": []}`)).status)
		require.Equal(t, http.StatusBadRequest, h.do("POST", "/v1/ranges/x/batch", h.token, l.Token, nil).status)

		got, err := h.store.Range(t.Context(), l.Range.ID)
		require.NoError(t, err)
		require.Equal(t, int64(1), got.Next, "bad input changed nothing")

		r = post(`{"from": 1, "to": 10, "headers": 10, "items": [{"key": "a", "value": null}]}`, l.Token)
		require.Equal(t, http.StatusOK, r.status)
		r = post(`{"from": 5, "to": 20, "headers": 0, "items": []}`, l.Token)
		require.Equal(t, http.StatusConflict, r.status, "an overlap")
		r = h.do("POST", fmt.Sprintf("/v1/ranges/%d/finish", l.Range.ID), h.token, l.Token, nil)
		require.Equal(t, http.StatusConflict, r.status)
		require.Contains(t, r.errorText(t), "reach 10")
	})
}

func TestCorruptAndRelease(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, url func(testing.TB) string) {
		h := newHarness(t, url(t), nil)
		h.group("g", false, 1, 100, lease.LaneHistory)
		l := h.lease(h.token)
		h.fill(l.Range, l.ChunkSize)
		path := fmt.Sprintf("/v1/ranges/%d", l.Range.ID)
		for _, body := range []string{`{"from": 2}`, `{"from": 101}`, `{}`, `{"from": "x"}`, `{"from": 1, "extra": 1}`} {
			r := h.do("POST", path+"/corrupt", h.token, l.Token, strings.NewReader(body))
			require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", body, r.body)
		}
		r := h.do("POST", path+"/corrupt", h.token, l.Token, strings.NewReader(`{"from": 26}`+strings.Repeat(" ", 5000)))
		require.Equal(t, http.StatusRequestEntityTooLarge, r.status, "over the limit after the object: %s", r.body)
		require.True(t, h.spool.Has(l.Range.ID, lease.Span{From: 26, To: 50}))
		r = h.do("POST", path+"/corrupt", h.token, l.Token, strings.NewReader(`{"from": 26}`))
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		require.JSONEq(t, `{"state": "pending", "attempts": 1}`, string(r.body))
		require.False(t, h.spool.Has(l.Range.ID, lease.Span{From: 26, To: 50}), "the corrupt chunk is dropped, to be fetched again")
		require.True(t, h.spool.Has(l.Range.ID, lease.Span{From: 51, To: 75}))
		require.Equal(t, http.StatusConflict, h.do("POST", path+"/corrupt", h.token, l.Token, strings.NewReader(`{"from": 26}`)).status)

		time.Sleep(5 * time.Millisecond) // the range's retry delay
		l2 := h.lease(h.token2)
		require.Equal(t, l.Range.ID, l2.Range.ID)
		r = h.do("GET", path+"/stream", h.token, l.Token, nil)
		require.Equal(t, http.StatusConflict, r.status, "the old holder cannot stream")
		r = h.do("POST", path+"/release", h.token2, l2.Token, nil)
		require.Equal(t, http.StatusOK, r.status)
		require.Equal(t, http.StatusConflict, h.do("POST", path+"/release", h.token2, l2.Token, nil).status)
		require.Equal(t, http.StatusNotFound, h.do("GET", "/v1/ranges/424242/stream", h.token, 1, nil).status)
	})
}

func gz(t *testing.T, s string) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, err := zw.Write([]byte(s))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return b.Bytes()
}

func TestLanes(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, url func(testing.TB) string) {
		h := newHarness(t, url(t), func(c *coordinator.Config) { c.MaxSnapshot = 4096 })
		g := h.group("o", true, 1, 200, lease.LaneTail)
		r := h.do("POST", "/v1/groups/lease?lane=x", h.token, 0, nil)
		require.Equal(t, http.StatusBadRequest, r.status)
		require.JSONEq(t, `{"error": "lane: history or tail, not \"x\"", "code": "invalid"}`, string(r.body))
		require.Equal(t, http.StatusNoContent, h.do("POST", "/v1/groups/lease", h.token, 0, nil).status, "history has no work")
		r = h.do("POST", "/v1/groups/lease?lane=tail", h.token, 0, nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var gl grouplease.GroupLease
		require.NoError(t, json.Unmarshal(r.body, &gl))
		require.Equal(t, g.ID, gl.Group.ID)
		require.Equal(t, int64(1), gl.Next)
		require.Nil(t, gl.Snapshot)
		require.Contains(t, string(r.body), `"snapshot":null`)

		base := fmt.Sprintf("/v1/groups/%d", g.ID)
		r = h.do("POST", base+"/next?lane=tail", h.token, gl.Token, nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var l lease.Lease
		require.NoError(t, json.Unmarshal(r.body, &l))
		require.Equal(t, int64(1), l.Range.Start)
		require.Equal(t, http.StatusConflict, h.do("POST", base+"/next?lane=tail", h.token2, gl.Token, nil).status)
		require.Equal(t, http.StatusOK, h.do("POST", base+"/heartbeat?lane=tail", h.token, gl.Token, nil).status)

		snap := base + "/snapshot?lane=tail"
		require.Equal(t, http.StatusNotFound, h.do("GET", snap, h.token, gl.Token, nil).status)
		require.Equal(t, http.StatusBadRequest, h.do("PUT", snap, h.token, gl.Token, bytes.NewReader(gz(t, "w"))).status, "next is required")
		require.Equal(t, http.StatusBadRequest, h.do("PUT", snap+"&next=50", h.token, gl.Token, strings.NewReader("not gzip")).status)
		require.Equal(t, http.StatusRequestEntityTooLarge, h.do("PUT", snap+"&next=50", h.token, gl.Token, bytes.NewReader(make([]byte, 5000))).status)
		r = h.do("PUT", snap+"&next=50", h.token, gl.Token, bytes.NewReader(gz(t, "window at 50")))
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		require.JSONEq(t, fmt.Sprintf(`{"next": 50, "size": %d}`, len(gz(t, "window at 50"))), string(r.body))
		require.Equal(t, http.StatusConflict, h.do("PUT", snap+"&next=40", h.token, gl.Token, bytes.NewReader(gz(t, "older"))).status)
		require.Equal(t, http.StatusConflict, h.do("PUT", snap+"&next=90", h.token2, gl.Token, bytes.NewReader(gz(t, "fenced"))).status)
		r = h.do("GET", snap, h.token, gl.Token, nil)
		require.Equal(t, http.StatusOK, r.status)
		require.Equal(t, "50", r.header.Get("X-Snapshot-Next"))
		require.Equal(t, gz(t, "window at 50"), r.body)

		require.Equal(t, http.StatusOK, h.do("POST", base+"/release?lane=tail", h.token, gl.Token, nil).status)
		require.Equal(t, http.StatusConflict, h.do("POST", base+"/release?lane=tail", h.token, gl.Token, nil).status)
		r = h.do("POST", "/v1/groups/lease?lane=tail", h.token2, 0, nil)
		require.Equal(t, http.StatusOK, r.status)
		var gl2 grouplease.GroupLease
		require.NoError(t, json.Unmarshal(r.body, &gl2))
		require.Equal(t, &grouplease.Snapshot{Next: 50, Size: int64(len(gz(t, "window at 50"))), Token: 0}, gl2.Snapshot)
		r = h.do("POST", base+"/next?lane=tail", h.token2, gl2.Token, nil)
		var l2 lease.Lease
		require.NoError(t, json.Unmarshal(r.body, &l2))
		require.Equal(t, l.Range.ID, l2.Range.ID)
		require.Greater(t, l2.Token, l.Token, "the range in progress goes to the new holder with a new token")
		r = h.do("GET", snap, h.token2, gl2.Token, nil)
		require.Equal(t, gz(t, "window at 50"), r.body, "the snapshot survives the change of hands")
		// The old holder, fenced out, uploads its window at 50 again: refused,
		// and the current snapshot (of its own old grant) is not lost.
		r = h.do("PUT", snap+"&next=50", h.token, gl.Token, bytes.NewReader(gz(t, "window at 50")))
		require.Equal(t, http.StatusConflict, r.status)
		r = h.do("GET", snap, h.token2, gl2.Token, nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		require.Equal(t, gz(t, "window at 50"), r.body)
	})
}

func TestStreamDrain(t *testing.T) {
	t.Parallel()
	h := newHarness(t, backends[0].URL(t), nil)
	h.group("g", false, 1, 100, lease.LaneHistory)
	l := h.lease(h.token)
	// No chunk is ever fetched: the stream waits until the coordinator drains.
	req, err := http.NewRequestWithContext(t.Context(), "GET", fmt.Sprintf("%s/v1/ranges/%d/stream", h.http.URL, l.Range.ID), nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+h.token)
	req.Header.Set("Lease-Token", fmt.Sprint(l.Token))
	resp, err := h.http.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	h.srv.Drain()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	frames := decodeFrames(t, body)
	require.NotEmpty(t, frames)
	last := frames[len(frames)-1]
	require.Equal(t, edgeframe.TypeError, last.Type)
	require.Equal(t, "the coordinator is shutting down", last.Message)
}

func TestFleetAndNode(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, url func(testing.TB) string) {
		h := newHarness(t, url(t), nil)
		h.group("plain", false, 1, 200, lease.LaneHistory)
		g := h.group("ordered", true, 1, 100, lease.LaneTail)
		l := h.lease(h.token)
		r := h.do("POST", fmt.Sprintf("/v1/ranges/%d/batch", l.Range.ID), h.token, l.Token,
			jsonBody(map[string]any{"from": 1, "to": 30, "headers": 30, "items": []any{}}))
		require.Equal(t, http.StatusOK, r.status)
		r = h.do("POST", "/v1/groups/lease?lane=tail", h.token2, 0, nil)
		require.Equal(t, http.StatusOK, r.status)

		r = h.do("GET", "/v1/fleet", adminToken, 0, nil)
		require.Equal(t, http.StatusOK, r.status)
		var f api.Fleet
		require.NoError(t, json.Unmarshal(r.body, &f))
		require.Equal(t, api.FleetSchema, f.Schema)
		require.Len(t, f.Nodes, 2)
		require.Equal(t, "edge-1", f.Nodes[0].Name)
		require.Len(t, f.Nodes[0].Leases, 1)
		require.Equal(t, api.FleetLease{Range: l.Range.ID, Group: "plain", Lane: lease.LaneHistory, Start: 1, Next: 31, End: 100,
			ExpiresAt: f.Nodes[0].Leases[0].ExpiresAt}, f.Nodes[0].Leases[0])
		require.Empty(t, f.Nodes[1].Leases)
		require.Equal(t, map[lease.State]int64{lease.StatePending: 2, lease.StateLeased: 1}, f.Ranges)
		require.Len(t, f.Groups, 2)
		require.Equal(t, g.ID, f.Groups[1].ID)
		require.True(t, f.Groups[1].Ordered)
		require.Equal(t, "edge-2", f.Groups[1].Lanes[0].Holder)
		require.Nil(t, f.Groups[1].Lanes[0].SnapshotNext)
		require.Equal(t, http.StatusForbidden, h.do("GET", "/v1/fleet", h.token, 0, nil).status)

		r = h.do("GET", "/v1/nodes/edge-1", adminToken, 0, nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var d api.NodeDetail
		require.NoError(t, json.Unmarshal(r.body, &d))
		require.Equal(t, "edge-1", d.Name)
		require.Len(t, d.Leases, 1)
		require.Len(t, d.Batches, 1)
		require.Equal(t, int64(30), d.Batches[0].To)
		require.Nil(t, d.Next)
		require.Equal(t, http.StatusNotFound, h.do("GET", "/v1/nodes/nobody", adminToken, 0, nil).status)
		require.Equal(t, http.StatusBadRequest, h.do("GET", "/v1/nodes/edge-1?cursor=x", adminToken, 0, nil).status)
	})
}

// TestStreamReplay: ?from=N streams stored chunks from the one holding N,
// for a lane's new holder rebuilding its window; a stored chunk the spool
// no longer has is skipped, not waited for.
func TestStreamReplay(t *testing.T) {
	t.Parallel()
	h := newHarness(t, backends[0].URL(t), nil)
	h.group("g", false, 1, 100, lease.LaneHistory)
	l := h.lease(h.token)
	h.fill(l.Range, 25)
	path := fmt.Sprintf("/v1/ranges/%d/stream", l.Range.ID)
	for _, from := range []int64{1, 51} {
		r := h.do("POST", fmt.Sprintf("/v1/ranges/%d/batch", l.Range.ID), h.token, l.Token,
			jsonBody(map[string]any{"from": from, "to": from + 49, "headers": 50, "items": []any{}}))
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	}
	// next is 101 now; the whole range is stored. Replay from 30.
	require.NoError(t, h.spool.DropChunk(l.Range.ID, lease.Span{From: 51, To: 75}))
	r := h.do("GET", path+"?from=30", h.token, l.Token, nil)
	require.Equal(t, http.StatusOK, r.status)
	var spans []lease.Span
	for _, f := range decodeFrames(t, r.body) {
		if f.Type == edgeframe.TypeChunk {
			spans = append(spans, lease.Span{From: f.From, To: f.To})
		}
	}
	require.Equal(t, []lease.Span{{From: 26, To: 50}, {From: 76, To: 100}}, spans, "from the chunk holding 30; 51-75 skipped")

	for _, bad := range []string{"0", "102", "x", "-5"} {
		r := h.do("GET", path+"?from="+bad, h.token, l.Token, nil)
		require.Equal(t, http.StatusBadRequest, r.status, "from=%s", bad)
	}
}

// TestStreamDoesNotKeepLease: a stream waiting for a chunk checks the lease
// but does not renew it, so a worker that stopped (its kernel still takes
// keepalives) loses the lease at its TTL, and the stream then ends.
func TestStreamDoesNotKeepLease(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock()
	st, err := sqlstore.Open(t.Context(), backends[0].URL(t), sqlstore.Config{Clock: clock})
	require.NoError(t, err)
	defer st.Close()
	h := newHarnessStore(t, st, func(c *coordinator.Config) {
		c.LeaseTTL = 3 * time.Second // the stream checks every second of real time
		c.Keepalive = 100 * time.Millisecond
	})
	h.group("g", false, 1, 100, lease.LaneHistory)
	l := h.lease(h.token)
	req, err := http.NewRequestWithContext(t.Context(), "GET", fmt.Sprintf("%s/v1/ranges/%d/stream", h.http.URL, l.Range.ID), nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+h.token)
	req.Header.Set("Lease-Token", fmt.Sprint(l.Token))
	resp, err := h.http.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	// Store time runs three times as fast as real time, while keepalives
	// and checks go by: 8 s of it, past the TTL, with no heartbeat.
	for range 8 {
		time.Sleep(300 * time.Millisecond)
		clock.Advance(time.Second)
	}
	other := h.lease(h.token2)
	require.Equal(t, l.Range.ID, other.Range.ID, "the stream did not renew the lease")
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	frames := decodeFrames(t, body)
	last := frames[len(frames)-1]
	require.Equal(t, edgeframe.TypeError, last.Type)
	require.Contains(t, last.Message, "lease lost")
}

// TestFleetAtInjectedClock: the fleet view is read at the coordinator's
// clock, the one the store's expiries come from when it is injected in both,
// so a dashboard compares a lease's expiry with the same clock.
func TestFleetAtInjectedClock(t *testing.T) {
	t.Parallel()
	clk := storetest.NewClock()
	st, err := sqlstore.Open(t.Context(), backends[0].URL(t), sqlstore.Config{Clock: clk})
	require.NoError(t, err)
	defer st.Close()
	h := newHarnessStore(t, st, func(c *coordinator.Config) { c.Clock = clk })
	h.group("plain", false, 1, 100, lease.LaneHistory)
	l := h.lease(h.token)
	clk.Advance(10 * time.Second)
	r := h.do("GET", "/v1/fleet", adminToken, 0, nil)
	require.Equal(t, http.StatusOK, r.status)
	var f api.Fleet
	require.NoError(t, json.Unmarshal(r.body, &f))
	require.Equal(t, clk.Now(), f.At)
	require.Equal(t, l.ExpiresAt, f.At.Add(-10*time.Second+coordinator.DefaultLeaseTTL), "the lease expires a TTL after its grant, on the same clock")
}
