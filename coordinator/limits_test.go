package coordinator_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/coordinator"
	"github.com/edgeindex/edgeindex/internal/syncbuf"
	"github.com/edgeindex/edgeindex/lease"
)

// logTo is a logger that writes to b, which the test reads.
func logTo(b *syncbuf.Buffer) *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

// stalledClient sends a request on a raw connection with a small receive
// buffer and never reads the answer.
func stalledClient(t *testing.T, base, method, path, token string, leaseToken int64) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	require.NoError(t, conn.(*net.TCPConn).SetReadBuffer(4096))
	_, err = fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nLease-Token: %d\r\n\r\n", method, path, token, leaseToken)
	require.NoError(t, err)
	return conn
}

// bigRange leases a range whose four chunks are 4 MiB each, stored.
func (h *harness) bigRange(token string) lease.Lease {
	h.t.Helper()
	l := h.lease(token)
	big := make([]byte, 4<<20)
	for _, span := range lease.Spans(l.Range.Start, l.Range.End, l.ChunkSize) {
		require.NoError(h.t, h.spool.Put(l.Range.ID, span, big))
	}
	return l
}

// Defect 4: a worker that stops reading its stream costs one write timeout:
// the handler ends, the chunk files are let go, and the lease is no longer
// renewed by the stream.
func TestStreamStalledWorker(t *testing.T) {
	t.Parallel()
	var log syncbuf.Buffer
	h := newHarness(t, backends[0].URL(t), func(c *coordinator.Config) {
		c.WriteTimeout = 300 * time.Millisecond
		c.LeaseTTL = 2 * time.Second
		c.Logger = logTo(&log)
	})
	h.group("g", false, 1, 100, lease.LaneHistory)
	l := h.bigRange(h.token)
	stalledClient(t, h.http.URL, "GET", fmt.Sprintf("/v1/ranges/%d/stream", l.Range.ID), h.token, l.Token)
	require.Eventually(t, func() bool { return strings.Contains(log.String(), "stream ended") },
		10*time.Second, 10*time.Millisecond, "the handler of a stalled stream ends")
	require.Contains(t, log.String(), "timeout")

	held := func() time.Time {
		hs, err := h.store.Held(t.Context())
		require.NoError(t, err)
		require.Len(t, hs, 1)
		return hs[0].ExpiresAt
	}
	exp := held()
	time.Sleep(time.Second) // more than the stream's renewal period, TTL/3
	require.Equal(t, exp, held(), "the stalled stream no longer renews the lease")
}

// Defect 4: SIGTERM's shutdown stays clean while a worker does not read its
// stream, whatever the write timeout: Drain cuts the blocked write.
func TestStreamStalledWorkerShutdown(t *testing.T) {
	t.Parallel()
	h := newHarness(t, backends[0].URL(t), nil) // the default write timeout, 30 s
	h.group("g", false, 1, 100, lease.LaneHistory)
	l := h.bigRange(h.token)
	conn := stalledClient(t, h.http.URL, "GET", fmt.Sprintf("/v1/ranges/%d/stream", l.Range.ID), h.token, l.Token)
	time.Sleep(300 * time.Millisecond) // the socket buffers fill up
	h.srv.Drain()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	require.NoError(t, h.http.Config.Shutdown(ctx), "the blocked stream lets shutdown finish")
	conn.Close()
}

// Defect 4: the snapshot GET is bounded by the write timeout too.
func TestSnapshotGetStalledWorker(t *testing.T) {
	t.Parallel()
	var log syncbuf.Buffer
	h := newHarness(t, backends[0].URL(t), func(c *coordinator.Config) {
		c.WriteTimeout = 300 * time.Millisecond
		c.MaxSnapshot = 32 << 20
		c.Logger = logTo(&log)
	})
	g := h.group("o", true, 1, 200, lease.LaneTail)
	gl := h.laneGrant(h.token, lease.LaneTail)
	var body bytes.Buffer
	zw, err := gzip.NewWriterLevel(&body, gzip.NoCompression)
	require.NoError(t, err)
	_, err = zw.Write(make([]byte, 16<<20))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	snap := fmt.Sprintf("/v1/groups/%d/snapshot?lane=tail", g.ID)
	require.Equal(t, http.StatusOK, h.do("PUT", snap+"&next=50", h.token, gl.Token, &body).status)
	stalledClient(t, h.http.URL, "GET", snap, h.token, gl.Token)
	require.Eventually(t, func() bool { return strings.Contains(log.String(), "snapshot not sent whole") },
		10*time.Second, 10*time.Millisecond, "the handler of a stalled snapshot read ends")
}

// A stream leaves a write deadline on its connection (net/http clears it
// after each request); the next request on the same connection, after that
// deadline, is still answered, with and without a body.
func TestKeepAliveAfterStream(t *testing.T) {
	t.Parallel()
	h := newHarness(t, backends[0].URL(t), func(c *coordinator.Config) { c.WriteTimeout = 100 * time.Millisecond })
	h.group("g", false, 1, 100, lease.LaneHistory)
	l := h.lease(h.token)
	h.fill(l.Range, l.ChunkSize)
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.http.URL, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	br := bufio.NewReader(conn)
	get := func(method, path string) *http.Response {
		req, _ := http.NewRequest(method, h.http.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+h.token)
		req.Header.Set("Lease-Token", fmt.Sprint(l.Token))
		require.NoError(t, req.Write(conn))
		resp, err := http.ReadResponse(br, req)
		require.NoError(t, err)
		_, err = io.Copy(io.Discard, resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	require.Equal(t, http.StatusOK, get("GET", fmt.Sprintf("/v1/ranges/%d/stream", l.Range.ID)).StatusCode)
	time.Sleep(300 * time.Millisecond)
	require.Equal(t, http.StatusNoContent, get("POST", "/v1/lease").StatusCode, "the same connection, after the stream's deadline")
	require.Equal(t, http.StatusOK, get("GET", "/healthz").StatusCode)
}

// Defect 8: a batch from a stale holder is refused before its body is read
// (a body over 64 KiB; a smaller one is read and refused the same way).
func TestBatchFenceBeforeDecode(t *testing.T) {
	t.Parallel()
	h := newHarness(t, backends[0].URL(t), nil)
	h.group("g", false, 1, 100, lease.LaneHistory)
	l := h.lease(h.token)
	raw := `{"from": 1, "to": 10, "headers": 0, "items": [` + strings.Repeat(`{"key":"k","value":1},`, 10000) + `{"key":"k","value":1}]}`
	body := &countingBody{r: strings.NewReader(raw)}
	req := httptest.NewRequestWithContext(t.Context(), "POST", fmt.Sprintf("/v1/ranges/%d/batch", l.Range.ID), nil)
	req.Body, req.ContentLength = io.NopCloser(body), int64(len(raw)) // over smallBatch: the fence comes first
	req.Header.Set("Authorization", "Bearer "+h.token)
	req.Header.Set("Lease-Token", fmt.Sprint(l.Token+1))
	rec := httptest.NewRecorder()
	h.srv.ServeHTTP(rec, req)
	require.Equal(t, http.StatusConflict, rec.Code, "%s", rec.Body)
	require.Zero(t, body.n.Load(), "a stale holder's batch is not read")
}

// Defect 8: the bytes of batches decoded at once are bounded; a batch with
// no room gets 503 busy with Retry-After, and nothing is stored.
func TestBatchBudget(t *testing.T) {
	t.Parallel()
	h := newHarness(t, backends[0].URL(t), func(c *coordinator.Config) { c.MaxBody = 4096; c.MaxBatchBytes = 6000 })
	h.group("g", false, 1, 100, lease.LaneHistory)
	l := h.lease(h.token)
	post := h.batchPoster(l)

	// A first batch of 4000 bytes is being read.
	first := []byte(`{"from": 1, "to": 10, "headers": 10, "items": [{"key": "a", "value": "` + strings.Repeat("x", 3000) + `"}]}`)
	first = append(first, bytes.Repeat([]byte(" "), 4000-len(first))...)
	pr, pw := io.Pipe()
	firstDone := make(chan reply, 1)
	go func() { firstDone <- post(pr, int64(len(first))) }()
	_, err := pw.Write(first[:100])
	require.NoError(t, err)
	time.Sleep(100 * time.Millisecond) // its bytes are taken from the budget

	second := `{"from": 11, "to": 20, "headers": 10, "items": []}`
	padded := second + strings.Repeat(" ", 3000-len(second))
	for name, length := range map[string]int64{"no room for 3000 bytes": 3000, "no room for an unknown length's 3000 bytes": -1} {
		r := post(strings.NewReader(padded), length)
		require.Equal(t, http.StatusServiceUnavailable, r.status, "%s: %s", name, r.body)
		require.Equal(t, "1", r.header.Get("Retry-After"))
		require.Contains(t, string(r.body), `"code":"busy"`)
	}
	r := post(strings.NewReader(second), int64(len(second)))
	require.Equal(t, http.StatusConflict, r.status, "a small batch fits beside the first (and is a gap): %s", r.body)
	got, err := h.store.Range(t.Context(), l.Range.ID)
	require.NoError(t, err)
	require.Equal(t, int64(1), got.Next, "nothing was stored")

	_, err = pw.Write(first[100:])
	require.NoError(t, err)
	pw.Close()
	fr := <-firstDone
	require.Equal(t, http.StatusOK, fr.status, "%s", fr.body)
	r = post(strings.NewReader(second), int64(len(second)))
	require.Equal(t, http.StatusOK, r.status, "the budget is given back: %s", r.body)
}

// smallBudget is a coordinator whose MaxBody and batch budget are both
// 32 KiB, the lease of its one range, and the poster of its batches.
func smallBudget(t *testing.T) (*harness, lease.Lease, func(io.Reader, int64) reply) {
	h := newHarness(t, backends[0].URL(t), func(c *coordinator.Config) { c.MaxBody = 32 << 10; c.MaxBatchBytes = 32 << 10 })
	h.group("g", false, 1, 100, lease.LaneHistory)
	l := h.lease(h.token)
	return h, l, h.batchPoster(l)
}

// batchPoster returns a func that posts a batch body to l's range over
// HTTP, as l's holder, with the Content-Length given (-1: unknown, the
// body chunked).
func (h *harness) batchPoster(l lease.Lease) func(body io.Reader, length int64) reply {
	path := fmt.Sprintf("%s/v1/ranges/%d/batch", h.http.URL, l.Range.ID)
	return func(body io.Reader, length int64) reply {
		req, err := http.NewRequestWithContext(h.t.Context(), "POST", path, body)
		require.NoError(h.t, err)
		req.ContentLength = length
		req.Header.Set("Authorization", "Bearer "+h.token)
		req.Header.Set("Lease-Token", fmt.Sprint(l.Token))
		resp, err := h.http.Client().Do(req)
		require.NoError(h.t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return reply{status: resp.StatusCode, header: resp.Header, body: b}
	}
}

// TestBatchBudgetStalledBody: a body of unknown length holds the budget's
// bytes it sent, not MaxBody from its first byte, so a worker that stalls
// halfway through one does not make every other batch busy.
func TestBatchBudgetStalledBody(t *testing.T) {
	t.Parallel()
	h, l, post := smallBudget(t)
	next := func(size int, length int64) reply { // 11-20: a gap (409, nothing stored) until 1-10 is stored
		b := []byte(`{"from": 11, "to": 20, "headers": 10, "items": []}`)
		b = append(b, bytes.Repeat([]byte(" "), size-len(b))...)
		return post(bytes.NewReader(b), length)
	}

	stalled := []byte(`{"from": 1, "to": 10, "headers": 10, "items": [{"key": "a", "value": "` + strings.Repeat("x", 24000) + `"}]}`)
	pr, pw := io.Pipe()
	done := make(chan reply, 1)
	go func() { done <- post(pr, -1) }()
	_, err := pw.Write(stalled[:20000])
	require.NoError(t, err)
	require.Eventually(t, func() bool { return coordinator.BatchBytesHeld(h.srv) == 20000 },
		10*time.Second, 10*time.Millisecond, "the stalled body holds the 20,000 bytes it sent")
	r := next(20000, 20000)
	require.Equal(t, http.StatusServiceUnavailable, r.status, "no room for 20,000 more: %s", r.body)
	r = next(8000, 8000)
	require.Equal(t, http.StatusConflict, r.status, "8,000 bytes fit beside what the stalled body sent: %s", r.body)
	r = next(50, -1)
	require.Equal(t, http.StatusConflict, r.status, "so does a small body of unknown length: %s", r.body)
	require.Equal(t, int64(20000), coordinator.BatchBytesHeld(h.srv), "they gave theirs back")

	_, err = pw.Write(stalled[20000:])
	require.NoError(t, err)
	pw.Close()
	fr := <-done
	require.Equal(t, http.StatusOK, fr.status, "%s", fr.body)
	r = next(20000, 20000)
	require.Equal(t, http.StatusOK, r.status, "the budget is given back, and 11-20 follows 1-10: %s", r.body)
	got, err := h.store.Range(t.Context(), l.Range.ID)
	require.NoError(t, err)
	require.Equal(t, int64(21), got.Next, "only the two batches were stored")
	require.Zero(t, coordinator.BatchBytesHeld(h.srv))
}

// TestBatchBusyAnswersAPausedBody: a batch refused before its body is read
// (here: busy) is answered at once with Connection: close, not after
// net/http has read on in the body of a worker that paused in it.
func TestBatchBusyAnswersAPausedBody(t *testing.T) {
	t.Parallel()
	h, _, post := smallBudget(t)
	full := []byte(`{"from": 1, "to": 10, "headers": 10, "items": []}`)
	full = append(full, bytes.Repeat([]byte(" "), 32<<10-len(full))...)
	pr1, pw1 := io.Pipe()
	done1 := make(chan reply, 1)
	go func() { done1 <- post(pr1, int64(len(full))) }()
	_, err := pw1.Write(full[:100])
	require.NoError(t, err)
	require.Eventually(t, func() bool { return coordinator.BatchBytesHeld(h.srv) == 32<<10 },
		10*time.Second, 10*time.Millisecond, "the first batch holds the whole budget")

	for name, length := range map[string]int64{"unknown length": -1, "known length": 20000} {
		pr2, pw2 := io.Pipe()
		done2 := make(chan reply, 1)
		go func() { done2 <- post(pr2, length) }()
		_, err = pw2.Write([]byte(`{"from": 11, "to": 20, `)) // then the worker pauses
		require.NoError(t, err)
		select {
		case r := <-done2:
			require.Equal(t, http.StatusServiceUnavailable, r.status, "%s: %s", name, r.body)
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: the busy answer waits for the paused body", name)
		}
		pw2.Close()
	}
	_, err = pw1.Write(full[100:])
	require.NoError(t, err)
	pw1.Close()
	r := <-done1
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
}

// pingFails is a store whose database does not answer.
type pingFails struct{ coordinator.Store }

func (pingFails) Ping(context.Context) error {
	return errors.New(`dial tcp 10.9.8.7:5432: pq: password authentication failed for user "edgeindex"`)
}

// Defect 9: /readyz answers a plain sentence; the detail goes to the log.
func TestReadyzHidesDetail(t *testing.T) {
	t.Parallel()
	var log syncbuf.Buffer
	h := newHarness(t, backends[0].URL(t), func(c *coordinator.Config) {
		c.Store = pingFails{c.Store}
		c.Logger = logTo(&log)
	})
	r := h.do("GET", "/readyz", "", 0, nil)
	require.Equal(t, http.StatusServiceUnavailable, r.status)
	require.NotEmpty(t, r.errorText(t))
	for _, secret := range []string{"10.9.8.7", "5432", "pq", "password", "edgeindex\\\""} {
		require.NotContains(t, string(r.body), secret)
	}
	require.Contains(t, string(r.body), `"code":"busy"`)
	require.NotEmpty(t, r.header.Get("Retry-After"))
	require.Contains(t, log.String(), "10.9.8.7:5432", "the detail is in the log")
}
