package coordinator_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/coordinator"
	"github.com/edgeindex/edgeindex/internal/syncbuf"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/prefetch"
)

// panicPut is a store whose first Put panics, as a driver bug would.
type panicPut struct {
	coordinator.Store
	n *atomic.Int32
}

func (p panicPut) Put(ctx context.Context, id int64, f lease.Fence, b batch.Batch) (batch.Result, error) {
	if p.n.Add(1) == 1 {
		panic("driver bug")
	}
	return p.Store.Put(ctx, id, f, b)
}

// TestBatchBudgetAfterPanic: a batch whose store panics gives its share of
// the batch memory back; without it, a body of unknown length keeps all of
// MaxBody for the life of the process and every batch after is busy.
func TestBatchBudgetAfterPanic(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	h := newHarness(t, backends[0].URL(t), func(c *coordinator.Config) {
		c.MaxBody = 4096
		c.MaxBatchBytes = 4096
		c.Store = panicPut{c.Store, &n}
	})
	h.group("g", false, 1, 100, lease.LaneHistory)
	l := h.lease(h.token)
	path := fmt.Sprintf("%s/v1/ranges/%d/batch", h.http.URL, l.Range.ID)
	post := func(body string, length int64) (int, string) {
		req, err := http.NewRequestWithContext(t.Context(), "POST", path, strings.NewReader(body))
		require.NoError(t, err)
		req.ContentLength = length
		req.Header.Set("Authorization", "Bearer "+h.token)
		req.Header.Set("Lease-Token", fmt.Sprint(l.Token))
		resp, err := h.http.Client().Do(req)
		if err != nil {
			return 0, err.Error() // the panic cuts the connection
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	b := `{"from": 1, "to": 10, "headers": 10, "items": []}`
	post(b, -1) // unknown length: it takes its bytes, and Put panics
	st, body := post(b, int64(len(b)))
	require.Equal(t, http.StatusOK, st, "the budget is given back after a panic: %s", body)
}

// TestTypedNilPrefetcherIsNone: a nil *prefetch.Prefetcher in the Config
// is no prefetcher, as an untyped nil is: a stream does not kick it.
func TestTypedNilPrefetcherIsNone(t *testing.T) {
	t.Parallel()
	var none *prefetch.Prefetcher
	h := newHarness(t, backends[0].URL(t), func(c *coordinator.Config) { c.Prefetcher = none })
	h.group("g", false, 1, 100, lease.LaneHistory)
	l := h.lease(h.token)
	h.fill(l.Range, 25)
	r := h.do("GET", fmt.Sprintf("/v1/ranges/%d/stream", l.Range.ID), h.token, l.Token, nil)
	require.Equal(t, http.StatusOK, r.status, "a stream with no prefetcher to kick: %s", r.body)
}

// TestHTTPServerLogsWhereTold: the server logs to the Config's Logger, and
// without one to net/http's own log, so a recovered panic is never silent.
func TestHTTPServerLogsWhereTold(t *testing.T) {
	t.Parallel()
	h := newHarness(t, backends[0].URL(t), nil)
	server := func(log *slog.Logger) *http.Server {
		svc, err := coordinator.NewService(coordinator.Config{Store: h.store, Spool: h.spool, Snapshots: h.snaps, Logger: log})
		require.NoError(t, err)
		return coordinator.NewServer(svc).HTTPServer()
	}
	require.Nil(t, server(nil).ErrorLog, "net/http's own log")
	var out syncbuf.Buffer
	hs := server(slog.New(slog.NewTextHandler(&out, nil)))
	require.NotNil(t, hs.ErrorLog)
	hs.ErrorLog.Print("http: panic serving")
	require.Contains(t, out.String(), "panic serving")
}
