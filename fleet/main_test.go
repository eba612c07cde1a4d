package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/fleet/fleettest"
	"github.com/edgeindex/edgeindex/fleetcache"
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

const adminToken = fleettest.AdminToken

// reader is a reader's Server running on 127.0.0.1:0, as cmd/fleet-reader
// runs it.
type reader struct {
	t      testing.TB
	m      *Coordinators
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
	cfg := Config{Coordinators: o.urls, Token: adminToken, Keep: o.keep, Timeout: o.timeout, RateReads: o.rateReads, MaxLanes: o.maxLanes}
	if o.token != "" {
		cfg.Token = o.token
	}
	if !o.realClock {
		cfg.Clock = rd.clock
	}
	m, err := New(cfg)
	require.NoError(t, err)
	rd.m = m
	srv, err := m.Server(fleetcache.ServerConfig{Addr: "127.0.0.1:0", DrainDelay: o.drainDelay})
	require.NoError(t, err)
	addr, err := srv.Listen()
	require.NoError(t, err)
	rd.url = "http://" + addr.String()

	ctx, cancel := context.WithCancel(context.Background())
	rd.cancel = cancel
	go func() { rd.done <- srv.Serve(ctx) }()
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
	Hosts    []Host          `json:"hosts"`
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
