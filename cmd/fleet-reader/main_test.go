package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/edgeindex/edgeindex/fleet"
	"github.com/edgeindex/edgeindex/fleet/fleettest"
	"github.com/edgeindex/edgeindex/fleetcache"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const adminToken = fleettest.AdminToken

// readyBody is what TestDrain reads of GET /readyz.
type readyBody struct {
	Ready   bool   `json:"ready"`
	Meaning string `json:"meaning"`
}

func TestDrain(t *testing.T) {
	t.Parallel()
	a := fleettest.NewCoordinator(t)
	m := NewMain()
	m.Coordinators = []string{a.URL}
	m.Addr = "127.0.0.1:0"
	m.Token = adminToken
	m.DrainDelay = 500 * time.Millisecond
	m.Stderr = io.Discard
	addrc := make(chan net.Addr, 1)
	m.OnListen = func(a net.Addr) { addrc <- a }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	base := "http://" + (<-addrc).String()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	get := func(path string) (int, []byte) {
		resp, err := client.Get(base + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, b
	}
	status, _ := get("/readyz")
	require.Equal(t, http.StatusOK, status)
	status, _ = get("/v1/fleet")
	require.Equal(t, http.StatusOK, status)

	cancel() // what SIGTERM does through signal.NotifyContext
	var body []byte
	for range 200 {
		if status, body = get("/readyz"); status == http.StatusServiceUnavailable {
			break
		}
	}
	require.Equal(t, http.StatusServiceUnavailable, status, "readyz turns 503 while draining")
	var b readyBody
	require.NoError(t, json.Unmarshal(body, &b))
	require.False(t, b.Ready)
	require.Contains(t, b.Meaning, "draining")
	status, _ = get("/v1/fleet")
	require.Equal(t, http.StatusOK, status, "requests are still answered while draining")

	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(3 * time.Second):
		t.Fatal("Run did not return within 2 s of its context being done")
	}
	require.NoError(t, m.Close())
	_, err := client.Get(base + "/readyz")
	require.Error(t, err, "the port is closed")
}

func TestBusyPort(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	m := NewMain()
	m.Coordinators = []string{"http://127.0.0.1:1"}
	m.Addr = ln.Addr().String()
	m.Token = adminToken
	m.Stderr = io.Discard
	listened := false
	m.OnListen = func(net.Addr) { listened = true }
	err = m.Run(context.Background()) // returns at once: nothing is served
	require.Error(t, err)
	require.True(t, errors.Is(err, syscall.EADDRINUSE), "%v", err)
	require.False(t, listened)
	require.NoError(t, m.Close())
	require.ErrorIs(t, m.Run(context.Background()), ErrRunning)
}

func TestParseFlags(t *testing.T) {
	t.Parallel()
	env := func(token string) func(string) string {
		return func(name string) string {
			if name == TokenEnv {
				return token
			}
			return ""
		}
	}
	m := NewMain()
	m.Stderr = io.Discard
	m.Getenv = env("tok")
	require.NoError(t, m.ParseFlags([]string{"--coordinator", "http://a.example:7070", "--coordinator=https://b.example/prefix/",
		"--addr", "0.0.0.0:9000", "--keep", "30s", "--timeout", "2s", "--drain-delay", "0s"}))
	require.Equal(t, []string{"http://a.example:7070", "https://b.example/prefix/"}, m.Coordinators)
	require.Equal(t, "0.0.0.0:9000", m.Addr)
	require.Equal(t, 30*time.Second, m.Keep)
	require.Equal(t, 2*time.Second, m.Timeout)
	require.Equal(t, time.Duration(0), m.DrainDelay)
	require.Equal(t, "tok", m.Token)
	hosts, err := fleet.HostNames(m.Coordinators)
	require.NoError(t, err)
	require.Equal(t, []string{"a.example:7070", "b.example:443"}, hosts)

	m = NewMain()
	m.Getenv = env("tok")
	require.NoError(t, m.ParseFlags([]string{"--coordinator", "http://c.example"}))
	require.Equal(t, fleetcache.DefaultAddr, m.Addr)
	require.Equal(t, DefaultKeep, m.Keep)
	hosts, err = fleet.HostNames(m.Coordinators)
	require.NoError(t, err)
	require.Equal(t, "c.example:80", hosts[0])

	for _, tc := range []struct {
		args  []string
		token string
		says  string
	}{
		{nil, "tok", "at least one --coordinator"},
		{[]string{"--coordinator", "http://a:1"}, "", TokenEnv + " is not set"},
		{[]string{"--coordinator", "ftp://a:1"}, "tok", "http or https"},
		{[]string{"--coordinator", "a:1"}, "tok", "http or https"},
		{[]string{"--coordinator", "http://"}, "tok", "has no host"},
		{[]string{"--coordinator", "http://u:p@a:1"}, "tok", "only scheme"},
		{[]string{"--coordinator", "http://a:1?x=1"}, "tok", "only scheme"},
		{[]string{"--coordinator", "http://a:80", "--coordinator", "http://a/x"}, "tok", "same host a:80"},
		{[]string{"--coordinator", "http://a:1", "extra"}, "tok", "unexpected argument"},
		{[]string{"--coordinator", "http://a:1", "--keep", "soon"}, "tok", "invalid value"},
		{[]string{"--nope"}, "tok", "not defined"},
	} {
		m := NewMain()
		m.Stderr = io.Discard
		m.Getenv = env(tc.token)
		err := m.ParseFlags(tc.args)
		require.ErrorIs(t, err, ErrUsage, "%v", tc.args)
		require.Contains(t, err.Error(), tc.says, "%v", tc.args)
	}
	m = NewMain()
	m.Stdout, m.Stderr = io.Discard, io.Discard
	require.ErrorIs(t, m.ParseFlags([]string{"-h"}), flag.ErrHelp)

	// Options set by hand are checked by Run, before it listens.
	for _, tweak := range []func(*Main){
		func(m *Main) { m.Keep = 0 },
		func(m *Main) { m.Timeout = -time.Second },
		func(m *Main) { m.DrainDelay = 2 * time.Second },
		func(m *Main) { m.Token = "" },
		func(m *Main) { m.Coordinators = nil },
		func(m *Main) { m.Addr = "no-port" },
	} {
		m := NewMain()
		m.Coordinators = []string{"http://127.0.0.1:1"}
		m.Token = "tok"
		m.Addr = "127.0.0.1:0"
		tweak(m)
		require.ErrorIs(t, m.Run(context.Background()), ErrUsage)
		require.NoError(t, m.Close())
	}
}

// TestHelp: -h prints the usage, with the environment and an example, to
// Stdout; the command exits 0 on it (main).
func TestHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-h"}, {"--help"}} {
		var out strings.Builder
		m := NewMain()
		m.Stdout, m.Stderr = &out, io.Discard
		require.ErrorIs(t, m.ParseFlags(args), flag.ErrHelp, "%q", args)
		for _, v := range []string{"usage: fleet-reader", TokenEnv, "Example:", "-coordinator"} {
			require.Contains(t, out.String(), v, "%q", args)
		}
	}
}

// TestRateReadsFlag: --rate-reads sets how many kept reads the rates
// cover (TestRatesWindow shows the bound); fewer than 2 cannot make a rate.
// --max-lanes sets the lanes followed (TestFleetLanesBounded); not negative.
func TestRateReadsFlag(t *testing.T) {
	t.Parallel()
	m := NewMain()
	m.Getenv = func(string) string { return adminToken }
	require.NoError(t, m.ParseFlags([]string{"--coordinator", "http://127.0.0.1:1", "--rate-reads", "3"}))
	require.Equal(t, 3, m.RateReads)
	require.NoError(t, m.open())
	require.Equal(t, 3, m.RateReads)
	require.NoError(t, m.Close())

	m = NewMain()
	m.Coordinators, m.Token = []string{"http://127.0.0.1:1"}, "tok"
	require.NoError(t, m.open())
	require.NoError(t, m.Close())

	for _, n := range []int{1, -5} {
		m := NewMain()
		m.Coordinators, m.Token, m.Addr, m.Stderr = []string{"http://127.0.0.1:1"}, "tok", "127.0.0.1:0", nil
		m.RateReads = n
		err := m.Run(t.Context())
		require.ErrorIs(t, err, ErrUsage)
		require.Contains(t, err.Error(), "--rate-reads must be at least 2")
		require.NoError(t, m.Close())
	}

	m = NewMain()
	m.Getenv = func(string) string { return adminToken }
	require.NoError(t, m.ParseFlags([]string{"--coordinator", "http://127.0.0.1:1", "--max-lanes", "7"}))
	require.NoError(t, m.open())
	require.Equal(t, 7, m.MaxLanes)
	require.NoError(t, m.Close())
	m = NewMain()
	m.Coordinators, m.Token, m.Addr, m.Stderr, m.MaxLanes = []string{"http://127.0.0.1:1"}, "tok", "127.0.0.1:0", nil, -1
	err := m.Run(t.Context())
	require.ErrorIs(t, err, ErrUsage)
	require.Contains(t, err.Error(), "--max-lanes must not be negative")
	require.NoError(t, m.Close())
}
