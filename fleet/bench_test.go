package fleet

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/edgeindex/edgeindex/fleet/fleettest"
	"github.com/stretchr/testify/require"
)

// benchClient is the one client of both benchmarks, so that they differ
// only in the server.
var benchClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

// benchFleet starts a real coordinator and a reader over it, makes the first
// read, and returns the reader's /v1/fleet URL and one answer's body.
func benchFleet(b *testing.B) (url string, body []byte) {
	b.Helper()
	c := fleettest.NewCoordinator(b)
	c.Populate("alt.binaries.bench", "alt.ordered.bench")
	rd := startReader(b, readerOptions{urls: []string{c.URL}, keep: time.Hour, realClock: true})
	f, a := rd.fleet()
	require.Equal(b, StatusOK, f.Hosts[0].Status)
	return rd.url + "/v1/fleet", a.body
}

// hammer GETs url from GOMAXPROCS goroutines through benchClient and
// reports requests per second.
func hammer(b *testing.B, url string, size int) {
	b.Helper()
	b.Cleanup(benchClient.CloseIdleConnections)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := benchClient.Get(url)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

// BenchmarkFleetReader measures GET /v1/fleet answered from the cache: one
// atomic load, the served times encoded, the ETag, the headers.
func BenchmarkFleetReader(b *testing.B) {
	url, body := benchFleet(b)
	hammer(b, url, len(body))
}

// BenchmarkBaselineStatic is the baseline of BenchmarkFleetReader: a plain
// net/http handler that writes the same bytes, with the same client.
func BenchmarkBaselineStatic(b *testing.B) {
	_, body := benchFleet(b)
	length := strconv.Itoa(len(body))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", length)
		_, _ = w.Write(body)
	}))
	b.Cleanup(srv.Close)
	hammer(b, srv.URL+"/v1/fleet", len(body))
}
