package fleetcache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var fleetBody = []byte(`{"polledAt":"2025-03-04T05:06:07Z","hosts":[{"host":"a:7070","status":"ok"}]}`)

func testRoutes() []Route {
	return []Route{
		{Path: "/v1/fleet", Handle: func(*http.Request) (Reply, error) {
			return Reply{Body: fleetBody, Meta: Meta{PolledAt: t0, CacheAgeSeconds: 4.5, KeptForSeconds: 15}}, nil
		}},
		{Path: "/v1/seat", Handle: func(r *http.Request) (Reply, error) {
			key := r.URL.Query().Get("key")
			switch key {
			case "":
				return Reply{}, fmt.Errorf("%w: key is missing", ErrBadRequest)
			case "h/n":
				return Reply{Value: map[string]string{"node": "n"}}, nil
			}
			return Reply{}, fmt.Errorf("%w: no node %q", ErrNotFound, key)
		}},
		{Path: "/", Handle: func(*http.Request) (Reply, error) {
			return Reply{Body: []byte("<p>fleet</p>"), ContentType: "text/html; charset=utf-8"}, nil
		}},
		{Path: "/fail", Handle: func(*http.Request) (Reply, error) {
			return Reply{}, fmt.Errorf("%w: %w", ErrReadFailed, errors.New("coordinator down"))
		}},
		{Path: "/teapot", Handle: func(*http.Request) (Reply, error) {
			return Reply{}, WithStatus(http.StatusTeapot, errors.New("short and stout"))
		}},
		{Path: "/oops", Handle: func(*http.Request) (Reply, error) {
			return Reply{}, errors.New("bug")
		}},
		{Path: "/created", Handle: func(*http.Request) (Reply, error) {
			return Reply{Status: http.StatusAccepted, Value: []int{1}}, nil
		}},
	}
}

func newTestServer(t *testing.T, cfg ServerConfig) *Server {
	t.Helper()
	if cfg.Routes == nil {
		cfg.Routes = testRoutes()
	}
	s, err := NewServer(cfg)
	require.NoError(t, err)
	return s
}

func do(t *testing.T, h http.Handler, method, target string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func errorOf(t *testing.T, w *httptest.ResponseRecorder) string {
	t.Helper()
	var e struct {
		Error string `json:"error"`
	}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &e), w.Body.String())
	require.NotEmpty(t, e.Error)
	return e.Error
}

func TestServerConfigValidate(t *testing.T) {
	t.Parallel()
	h := func(*http.Request) (Reply, error) { return Reply{}, nil }
	for name, cfg := range map[string]ServerConfig{
		"relative path":    {Routes: []Route{{Path: "x", Handle: h}}},
		"no handle":        {Routes: []Route{{Path: "/x"}}},
		"twice":            {Routes: []Route{{Path: "/x", Handle: h}, {Path: "/x", Handle: h}}},
		"ready path taken": {Routes: []Route{{Path: "/readyz", Handle: h}}},
		"bad addr":         {Addr: "nope"},
		"negative timeout": {ReadTimeout: -1},
		"drain too long":   {DrainDelay: 3 * time.Second},
	} {
		_, err := NewServer(cfg)
		require.ErrorIs(t, err, ErrInvalid, name)
	}
	s, err := NewServer(ServerConfig{})
	require.NoError(t, err)
	require.Equal(t, DefaultAddr, s.cfg.Addr)
	require.Equal(t, DefaultReadHeaderTimeout, s.cfg.ReadHeaderTimeout)
	s, err = NewServer(ServerConfig{Addr: ":8080"})
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:8080", s.cfg.Addr)
}

func TestServerStatusCodes(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, ServerConfig{})
	for _, tc := range []struct {
		method, target string
		status         int
		errText        string
	}{
		{"GET", "/v1/fleet", 200, ""},
		{"GET", "/v1/seat?key=h/n", 200, ""},
		{"GET", "/v1/seat", 400, "key is missing"},
		{"GET", "/v1/seat?key=h/x", 404, `no node "h/x"`},
		{"GET", "/nowhere", 404, "nothing is served at /nowhere"},
		{"POST", "/nowhere", 404, "nothing is served at"},
		{"GET", "/fail", 502, "coordinator down"},
		{"GET", "/teapot", 418, "short and stout"},
		{"GET", "/oops", 500, "bug"},
		{"GET", "/created", 202, ""},
		{"GET", "/readyz", 200, ""},
	} {
		w := do(t, s, tc.method, tc.target)
		require.Equal(t, tc.status, w.Code, "%s %s: %s", tc.method, tc.target, w.Body)
		require.Equal(t, "application/json", w.Header().Get("Content-Type"))
		require.Equal(t, fmt.Sprint(w.Body.Len()), w.Header().Get("Content-Length"))
		if tc.errText != "" {
			require.Contains(t, errorOf(t, w), tc.errText)
			require.Equal(t, "no-store", w.Header().Get("Cache-Control"))
		}
	}
	w := do(t, s, "GET", "/")
	require.Equal(t, 200, w.Code)
	require.Equal(t, "text/html; charset=utf-8", w.Header().Get("Content-Type"))
	require.Equal(t, "<p>fleet</p>", w.Body.String())
}

func TestServerMethodNotAllowed(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, ServerConfig{})
	for _, m := range []string{"POST", "PUT", "DELETE", "PATCH", "OPTIONS"} {
		for _, path := range []string{"/v1/fleet", "/readyz"} {
			w := do(t, s, m, path)
			require.Equal(t, 405, w.Code, m+" "+path)
			require.Equal(t, "GET, HEAD", w.Header().Get("Allow"))
			require.Contains(t, errorOf(t, w), m)
		}
	}
}

func TestServerCacheHeadersAndETag(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, ServerConfig{})
	w := do(t, s, "GET", "/v1/fleet")
	require.Equal(t, 200, w.Code)
	require.Equal(t, fleetBody, w.Body.Bytes())
	require.Equal(t, "max-age=10, stale-while-revalidate=15", w.Header().Get("Cache-Control"))
	require.Equal(t, "4", w.Header().Get("Age"))
	etag := w.Header().Get("ETag")
	require.Equal(t, ETag(fleetBody), etag)
	require.Regexp(t, `^"[0-9a-f]{32}"$`, etag)
	require.NotEqual(t, etag, ETag([]byte(`{}`)))

	s2 := newTestServer(t, ServerConfig{StaleWhileRevalidate: time.Minute})
	require.Equal(t, "max-age=10, stale-while-revalidate=60", do(t, s2, "GET", "/v1/fleet").Header().Get("Cache-Control"))

	// A reply without Meta is not cacheable.
	w = do(t, s, "GET", "/v1/seat?key=h/n")
	require.Equal(t, "no-store", w.Header().Get("Cache-Control"))
	require.Empty(t, w.Header().Get("Age"))
	require.Equal(t, ETag(w.Body.Bytes()), w.Header().Get("ETag"))
}

func TestServerIfNoneMatch(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, ServerConfig{})
	etag := ETag(fleetBody)
	for _, inm := range []string{etag, "W/" + etag, `"nope", ` + etag, `*`} {
		for _, m := range []string{"GET", "HEAD"} {
			w := do(t, s, m, "/v1/fleet", "If-None-Match", inm)
			require.Equal(t, 304, w.Code, inm)
			require.Zero(t, w.Body.Len())
			require.Equal(t, etag, w.Header().Get("ETag"))
			require.Equal(t, "max-age=10, stale-while-revalidate=15", w.Header().Get("Cache-Control"))
		}
	}
	for _, inm := range []string{`"nope"`, `W/"nope", "other"`, `garbage`, `"unterminated`} {
		w := do(t, s, "GET", "/v1/fleet", "If-None-Match", inm)
		require.Equal(t, 200, w.Code, inm)
		require.Equal(t, fleetBody, w.Body.Bytes())
	}
}

func TestServerHead(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, ServerConfig{Clock: newClock()})
	for _, path := range []string{"/v1/fleet", "/readyz", "/nowhere", "/v1/seat"} {
		get := do(t, s, "GET", path)
		head := do(t, s, "HEAD", path)
		require.Equal(t, get.Code, head.Code, path)
		require.Zero(t, head.Body.Len(), path)
		require.NotZero(t, get.Body.Len(), path)
		require.Equal(t, fmt.Sprint(get.Body.Len()), head.Header().Get("Content-Length"), path)
		require.Equal(t, get.Header().Get("Content-Type"), head.Header().Get("Content-Type"), path)
		require.Equal(t, get.Header().Get("Cache-Control"), head.Header().Get("Cache-Control"), path)
	}
	require.Equal(t, ETag(fleetBody), do(t, s, "HEAD", "/v1/fleet").Header().Get("ETag"))
}

func TestServerReadyDraining(t *testing.T) {
	t.Parallel()
	clk := newClock()
	s := newTestServer(t, ServerConfig{Clock: clk, Ready: func(st ReadyState) any {
		return map[string]any{
			"schema":        "test.ready/v1",
			"ready":         st.Ready,
			"meaning":       "serving",
			"startedAt":     st.StartedAt,
			"servedAt":      st.ServedAt,
			"lastFleetRead": nil,
		}
	}})
	clk.Advance(3 * time.Second)
	w := do(t, s, "GET", "/readyz")
	require.Equal(t, 200, w.Code)
	require.JSONEq(t, `{"schema":"test.ready/v1","ready":true,"meaning":"serving",
		"startedAt":"2025-03-04T05:06:07Z","servedAt":"2025-03-04T05:06:10Z","lastFleetRead":null}`, w.Body.String())
	require.Equal(t, "no-store", w.Header().Get("Cache-Control"))

	require.False(t, s.Draining())
	s.Drain()
	require.True(t, s.Draining())
	w = do(t, s, "GET", "/readyz")
	require.Equal(t, 503, w.Code)
	require.Contains(t, w.Body.String(), `"ready":false`)
	require.Equal(t, 200, do(t, s, "GET", "/v1/fleet").Code, "other routes keep answering while draining")

	plain := newTestServer(t, ServerConfig{Clock: clk})
	require.JSONEq(t, `{"ready":true,"startedAt":"2025-03-04T05:06:10Z","servedAt":"2025-03-04T05:06:10Z"}`,
		do(t, plain, "GET", "/readyz").Body.String())
}

// startServer listens on 127.0.0.1:0 and serves until the returned cancel.
func startServer(t *testing.T, cfg ServerConfig) (s *Server, base string, cancel context.CancelFunc, done <-chan error) {
	t.Helper()
	cfg.Addr = "127.0.0.1:0"
	s = newTestServer(t, cfg)
	addr, err := s.Listen()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		errc <- s.Serve(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-finished
	})
	return s, "http://" + addr.String(), cancel, errc
}

func newClient(t *testing.T) *http.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func get(t *testing.T, c *http.Client, url string) (int, []byte) {
	t.Helper()
	resp, err := c.Get(url)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

func TestServerRealListener(t *testing.T) {
	t.Parallel()
	_, base, _, _ := startServer(t, ServerConfig{})
	c := newClient(t)
	code, body := get(t, c, base+"/v1/fleet")
	require.Equal(t, 200, code)
	require.Equal(t, fleetBody, body)

	req, err := http.NewRequest("GET", base+"/v1/fleet", nil)
	require.NoError(t, err)
	req.Header.Set("If-None-Match", ETag(fleetBody))
	resp, err := c.Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, 304, resp.StatusCode)
	require.Empty(t, b)

	resp, err = c.Head(base + "/v1/fleet")
	require.NoError(t, err)
	b, _ = io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	require.Empty(t, b)
	require.Equal(t, int64(len(fleetBody)), resp.ContentLength)

	resp, err = c.Post(base+"/v1/fleet", "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, 405, resp.StatusCode)
	require.Equal(t, "GET, HEAD", resp.Header.Get("Allow"))
}

func TestServerGracefulStop(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{})
	release := make(chan struct{})
	routes := append(testRoutes(), Route{Path: "/slow", Handle: func(*http.Request) (Reply, error) {
		close(entered)
		<-release
		return Reply{Value: "done"}, nil
	}})
	s, base, cancel, done := startServer(t, ServerConfig{Routes: routes})
	c := newClient(t)

	type result struct {
		code int
		body []byte
		err  error
	}
	slow := make(chan result, 1)
	go func() {
		resp, err := c.Get(base + "/slow")
		if err != nil {
			slow <- result{err: err}
			return
		}
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		slow <- result{resp.StatusCode, b, err}
	}()
	<-entered
	cancel()
	require.Eventually(t, s.Draining, 5*time.Second, time.Millisecond)

	// The listener closes: new connections are refused.
	require.Eventually(t, func() bool {
		conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
		if err == nil {
			_ = conn.Close()
		}
		return err != nil
	}, 5*time.Second, time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("Serve returned %v while a request was in flight", err)
	default:
	}

	close(release)
	r := <-slow
	require.NoError(t, r.err)
	require.Equal(t, 200, r.code)
	require.Equal(t, `"done"`, string(r.body))
	require.NoError(t, <-done)
}

func TestServerReadyIs503WhileDrainingOverTheNetwork(t *testing.T) {
	t.Parallel()
	s, base, cancel, done := startServer(t, ServerConfig{DrainDelay: 500 * time.Millisecond})
	c := newClient(t)
	code, _ := get(t, c, base+"/readyz")
	require.Equal(t, 200, code)

	cancel()
	require.Eventually(t, s.Draining, 5*time.Second, time.Millisecond)
	code, body := get(t, c, base+"/readyz")
	require.Equal(t, 503, code, string(body))
	require.NoError(t, <-done)
}

func TestServerListenErrors(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = busy.Close() })

	s := newTestServer(t, ServerConfig{Addr: busy.Addr().String()})
	_, err = s.Listen()
	require.ErrorIs(t, err, syscall.EADDRINUSE)
	require.ErrorIs(t, s.Run(context.Background()), syscall.EADDRINUSE)
	require.ErrorIs(t, s.Serve(context.Background()), ErrNotListening)
}

func TestServerEmptyHostBindsLoopback(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, ServerConfig{Addr: ":0"})
	addr, err := s.Listen()
	require.NoError(t, err)
	require.True(t, addr.(*net.TCPAddr).IP.IsLoopback(), addr.String())
	_, err = s.Listen()
	require.Error(t, err, "a second Listen")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, s.Serve(ctx))
	require.True(t, s.Draining())
}

func TestServerShutdownDeadlineClosesBusyConnections(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{})
	handlerDone := make(chan error, 1)
	routes := []Route{{Path: "/stuck", Handle: func(r *http.Request) (Reply, error) {
		close(entered)
		<-r.Context().Done() // a handler that only stops when its connection goes
		handlerDone <- r.Context().Err()
		return Reply{}, r.Context().Err()
	}}}
	_, base, cancel, done := startServer(t, ServerConfig{Routes: routes, ShutdownTimeout: 100 * time.Millisecond})
	c := newClient(t)
	clientErr := make(chan error, 1)
	go func() {
		resp, err := c.Get(base + "/stuck")
		if err == nil {
			_ = resp.Body.Close()
		}
		clientErr <- err
	}()
	<-entered
	cancel()
	require.NoError(t, <-done, "Serve returns nil after closing what was left")
	require.ErrorIs(t, <-handlerDone, context.Canceled)
	require.Error(t, <-clientErr, "the stuck request had its connection closed")
}
