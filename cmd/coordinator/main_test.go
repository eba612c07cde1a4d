package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// run runs one command against data dir and returns its stdout.
func run(t *testing.T, data string, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	m := NewMain(&out, &errb)
	err := m.Run(t.Context(), append(args, "--data", data))
	return out.String(), err
}

func TestCommands(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	token, err := run(t, data, "node", "add", "edge-1")
	require.NoError(t, err)
	token = strings.TrimSpace(token)
	require.Len(t, token, 64, "the token alone, on one line")
	_, err = run(t, data, "node", "add", "edge-1")
	require.Error(t, err)

	out, err := run(t, data, "group", "add", "alt.binaries.test", "--range-size", "1000", "--chunk-size", "100")
	require.NoError(t, err)
	require.Contains(t, out, "ranges of 1000")
	_, err = run(t, data, "group", "add", "--ordered", "o.g") // flags before the positional too
	require.NoError(t, err)
	out, err = run(t, data, "range", "add", "alt.binaries.test", "1", "2500")
	require.NoError(t, err)
	require.Contains(t, out, "added 3 ranges")
	out, err = run(t, data, "range", "add", "o.g", "5000", "5999", "--lane", "tail")
	require.NoError(t, err)
	require.Contains(t, out, "added 1 ranges")
	_, err = run(t, data, "range", "add", "alt.binaries.test", "100", "200")
	require.Error(t, err, "an overlap is refused")
	_, err = run(t, data, "range", "add", "alt.binaries.test", "x", "200")
	require.ErrorIs(t, err, errUsage)
	require.Equal(t, 2, exitCode(err))
	_, err = run(t, data, "range", "add", "alt.binaries.test", "9000", "9100", "--lane", "sideways")
	require.ErrorIs(t, err, errUsage)

	out, err = run(t, data, "status")
	require.NoError(t, err)
	require.Contains(t, out, "alt.binaries.test")
	require.Contains(t, out, "PENDING")
	out, err = run(t, data, "status", "--json")
	require.NoError(t, err)
	var st struct {
		Lanes []struct {
			Group  string           `json:"group"`
			Lane   string           `json:"lane"`
			Ranges map[string]int64 `json:"ranges"`
		} `json:"lanes"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	require.Len(t, st.Lanes, 2)
	require.Equal(t, int64(3), st.Lanes[0].Ranges["pending"])
	require.Equal(t, "tail", st.Lanes[1].Lane)

	out, err = run(t, data, "node", "list")
	require.NoError(t, err)
	require.Contains(t, out, "edge-1")
	_, err = run(t, data, "node", "rm", "edge-1")
	require.NoError(t, err)
	_, err = run(t, data, "node", "rm", "edge-1")
	require.Error(t, err)
	_, err = run(t, data, "range", "retry", "alt.binaries.test", "--failed")
	require.NoError(t, err)
	_, err = run(t, data, "frobnicate")
	require.ErrorIs(t, err, errUsage)
}

func TestServe(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	token, err := run(t, data, "node", "add", "edge-1")
	require.NoError(t, err)
	_, err = run(t, data, "group", "add", "g", "--range-size", "100", "--chunk-size", "50")
	require.NoError(t, err)
	_, err = run(t, data, "range", "add", "g", "1", "100")
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(t.Context())
	addr := make(chan string, 1)
	m := NewMain(&bytes.Buffer{}, &bytes.Buffer{})
	m.Ready = func(a string) { addr <- a }
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--data", data}) }()
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case err := <-done:
		t.Fatal(err)
	}

	admin, err := os.ReadFile(filepath.Join(data, "admin.token"))
	require.NoError(t, err)
	info, err := os.Stat(filepath.Join(data, "admin.token"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	req, _ := http.NewRequest("POST", base+"/v1/lease", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(token))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	req, _ = http.NewRequest("GET", base+"/v1/ranges", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(admin)))
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// A busy port is a synchronous error.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	_, err = run(t, data, "serve", "--addr", l.Addr().String())
	require.ErrorContains(t, err, "listen")

	cancel() // SIGTERM
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop")
	}
	http.DefaultClient.CloseIdleConnections()
}

func TestSource(t *testing.T) {
	t.Parallel()
	_, err := source("nntp://user:secret@news.example:119")
	require.ErrorIs(t, err, errUsage)
	require.NotContains(t, err.Error(), "secret")
	_, err = source("ftp://x")
	require.ErrorIs(t, err, errUsage)
	s, err := source("")
	require.NoError(t, err)
	require.NotNil(t, s)
}

func TestDemo(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	m := NewMain(&out, &bytes.Buffer{})
	defer m.Close()
	res, err := m.runDemo(t.Context(), t.TempDir(), 30_000, 3, 4_000, &out, nil)
	require.NoError(t, err)
	require.Equal(t, int64(8), res.Ranges)
	require.Equal(t, int64(30_000), res.Headers, "one overview line per synthetic article")
	require.Positive(t, res.Binaries)
	require.Equal(t, res.Binaries, res.Complete, "every synthetic binary has all its parts once merged")
	require.Contains(t, out.String(), "30000/30000 articles")
	require.Contains(t, out.String(), "8/8 ranges")

	_, err = run(t, t.TempDir(), "demo", "--articles", "0")
	require.ErrorIs(t, err, errUsage)
}
