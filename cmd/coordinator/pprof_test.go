package main

import (
	"io"
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
	code, _ = get(s.base + "/debug/pprof/")
	require.Equal(t, http.StatusNotFound, code, "the node API does not serve the profiles")
	s.stop(t)
}
