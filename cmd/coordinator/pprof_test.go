package main

import (
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// serve --pprof serves Go's profiles on an address of its own, and not on
// the node API's; without the flag nothing listens for them.
func TestServePprof(t *testing.T) {
	t.Parallel()
	s := startServe(t, filepath.Join(t.TempDir(), "data"), "--pprof", "127.0.0.1:0")
	m := regexp.MustCompile(`"profiles listening" addr=(\S+)`).FindStringSubmatch(s.stderr.String())
	require.NotNil(t, m, "serve says where the profiles listen: %s", s.stderr)
	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	code, body := get("http://" + m[1] + "/debug/pprof/")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "goroutine")
	code, _ = get("http://" + m[1] + "/debug/pprof/cmdline")
	require.Equal(t, http.StatusNotFound, code, "the command line, which may hold passwords, is not served")
	code, _ = get(s.base + "/debug/pprof/")
	require.Equal(t, http.StatusNotFound, code, "the node API does not serve the profiles")
	s.stop(t)
}

// A --pprof address that is taken fails serve at start, and leaves nothing
// of it listening: not --newznab's address either (the reviewer's find).
func TestServePprofBusy(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	nz := free.Addr().String()
	require.NoError(t, free.Close())
	m := NewMain(io.Discard, io.Discard)
	err = m.Run(t.Context(), []string{"serve", "--addr", "127.0.0.1:0", "--data", filepath.Join(t.TempDir(), "data"),
		"--newznab", nz, "--pprof", busy.Addr().String()})
	require.ErrorContains(t, err, "--pprof")
	ln, err := net.Listen("tcp", nz)
	require.NoError(t, err, "--newznab's address is free again")
	ln.Close()
}
