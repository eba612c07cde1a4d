package edge_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/collate"
	"github.com/edgeindex/edgeindex/edge"
	"github.com/edgeindex/edgeindex/internal/syncbuf"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/usenet"
)

// A lane's new holder gets a range that an earlier holder left in the
// middle: the stored chunks between the lane's snapshot and the range's next
// are handed to the window again (Replay), and not posted; the rest is
// worked as usual, and the saved window covers the whole range.
func TestWorkerLaneTakeoverRebuildsWindow(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	gid := c.addLane("alt.tail", lease.LaneTail, 1, 400, 200)
	// The earlier holder finished range 1, saving its window at 201, and
	// stored 201..300 of range 2 before it died.
	c.setState(1, lease.StateDone)
	c.setSnapshot(gid, gz(t, "lines=200"), 201)
	c.setNext(2, 301)
	h := &window{}
	r := startWorker(t, c, h, edge.WorkerConfig{Lanes: []lease.Lane{lease.LaneTail}})
	require.NoError(t, r.untilIdle(t))

	require.Equal(t, []string{"lines=200"}, h.loads)
	require.Equal(t, []int64{201}, c.streamFroms(), "the stream starts where the window ends")
	require.Equal(t, []lease.Span{{From: 201, To: 300}, {From: 301, To: 400}}, h.seen())
	require.Equal(t, []lease.Span{{From: 201, To: 300}}, h.replays)
	require.Equal(t, []lease.Span{{From: 301, To: 400}}, spans(c.batches()), "a replayed chunk is not posted")
	ls := c.laneState(gid)
	require.Equal(t, gz(t, "lines=400"), ls.snap, "the window covers the whole range")
	require.Equal(t, int64(401), ls.snapNext)
	require.Equal(t, lease.StateDone, c.rng(2).State)
	st := r.w.Stats()
	require.Equal(t, int64(1), st.Replayed)
	require.Equal(t, int64(1), st.Batches)
}

// The earlier holder stored every batch of the range but died before saving
// the window: the new holder hands the whole range to the window again,
// saves it and finishes the range, posting nothing.
func TestWorkerLaneTakeoverAllStored(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	gid := c.addLane("alt.tail", lease.LaneTail, 1, 400, 200)
	c.setState(1, lease.StateDone)
	c.setSnapshot(gid, gz(t, "lines=200"), 201)
	c.setNext(2, 401)
	h := &window{}
	r := startWorker(t, c, h, edge.WorkerConfig{Lanes: []lease.Lane{lease.LaneTail}})
	require.NoError(t, r.untilIdle(t))

	require.Equal(t, []int64{201}, c.streamFroms())
	require.Equal(t, []lease.Span{{From: 201, To: 300}, {From: 301, To: 400}}, h.replays)
	require.Empty(t, c.batches())
	ls := c.laneState(gid)
	require.Equal(t, gz(t, "lines=400"), ls.snap)
	require.Equal(t, int64(401), ls.snapNext)
	require.Equal(t, lease.StateDone, c.rng(2).State)
}

// A coordinator that does not know ?from= streams from next: the worker
// says the window lacks the chunks it was not sent and works the range as
// before.
func TestWorkerLaneTakeoverFromIgnored(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	gid := c.addLane("alt.tail", lease.LaneTail, 1, 400, 200)
	c.ignoreFrom = true
	c.setState(1, lease.StateDone)
	c.setSnapshot(gid, gz(t, "lines=200"), 201)
	c.setNext(2, 301)
	var logs syncbuf.Buffer
	h := &window{}
	r := startWorker(t, c, h, edge.WorkerConfig{Lanes: []lease.Lane{lease.LaneTail}, Logger: newLogger(&logs)})
	require.NoError(t, r.untilIdle(t))

	require.Equal(t, []int64{201}, c.streamFroms())
	require.Empty(t, h.replays)
	require.Equal(t, []lease.Span{{From: 301, To: 400}}, spans(c.batches()))
	require.Equal(t, gz(t, "lines=300"), c.laneState(gid).snap, "the window lacks 201..300")
	require.Equal(t, lease.StateDone, c.rng(2).State)
	require.Contains(t, logs.String(), "lacks their articles")
}

// A worker stopped in the middle of a lane's range, with its window in step
// with the range's next, saves the window at next before it gives the range
// back: the lane's next holder goes on from there without replaying.
func TestWorkerLaneShutdownSavesWindow(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	gid := c.addLane("alt.tail", lease.LaneTail, 1, 400, 200)
	srv := c.start()
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// SIGTERM arrives just as the batch 1..100 is stored.
	tr := &cancelAfterTransport{rt: srv.Client().Transport, mark: `"next":101`, cancel: cancel}
	cl, err := edge.NewClient(edge.Config{BaseURL: srv.URL, Token: c.token, HTTP: &http.Client{Transport: tr}})
	require.NoError(t, err)
	h := &window{}
	w, err := edge.NewWorker(edge.WorkerConfig{Client: cl, Handler: h, Lanes: []lease.Lane{lease.LaneTail}, Clock: blockClock})
	require.NoError(t, err)
	require.NoError(t, w.Run(ctx))

	var calls []string
	for _, call := range c.callLog() {
		if f := strings.Fields(call); f[1] != "/v1/leases" {
			calls = append(calls, call)
		}
	}
	require.Equal(t, []string{
		"POST /v1/groups/lease 200",
		"POST /v1/groups/100/next 200",
		"GET /v1/ranges/1/stream 200",
		"POST /v1/ranges/1/batch 200",
		"PUT /v1/groups/100/snapshot 200", // at next, before the range is given back
		"POST /v1/ranges/1/release 200",
		"POST /v1/groups/100/release 200",
	}, calls)
	ls := c.laneState(gid)
	require.Equal(t, gz(t, "lines=100"), ls.snap)
	require.Equal(t, int64(101), ls.snapNext)

	h2 := &window{}
	r := startWorker(t, c, h2, edge.WorkerConfig{Lanes: []lease.Lane{lease.LaneTail}})
	require.NoError(t, r.untilIdle(t))
	require.Equal(t, []string{"lines=100"}, h2.loads)
	require.Empty(t, h2.replays)
	require.Equal(t, []lease.Span{{From: 101, To: 200}, {From: 201, To: 300}, {From: 301, To: 400}}, h2.seen())
	require.Equal(t, []int64{0, 0, 0}, c.streamFroms(), "nobody needed a replay")
	require.Equal(t, gz(t, "lines=400"), c.laneState(gid).snap)
}

// A window that may be ahead of next (its last chunk's batch was not
// stored) is not saved on the way out.
func TestWorkerLaneShutdownDirtyWindowNotSaved(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	c.addLane("alt.tail", lease.LaneTail, 1, 400, 200)
	var r *run
	h := &window{counter: counter{hook: func(ctx context.Context, ch edge.Chunk) error {
		if ch.From == 101 {
			r.stop()
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}}}
	r = startWorker(t, c, h, edge.WorkerConfig{Lanes: []lease.Lane{lease.LaneTail}})
	require.NoError(t, r.untilIdle(t))
	require.Zero(t, countCalls(c.callLog(), "PUT /v1/groups/100/snapshot"))
}

// killTransport stands for a worker process that dies: once kill says so
// for a request (before it is sent, or after its answer), that request and
// every later one fail at once, and the run's context is cancelled.
type killTransport struct {
	rt     http.RoundTripper
	before func(r *http.Request, body []byte) bool
	after  func(r *http.Request, answer []byte) bool
	cancel context.CancelFunc

	mu   sync.Mutex
	dead bool
}

var errKilled = errors.New("the worker process was killed")

func (k *killTransport) die() {
	k.mu.Lock()
	k.dead = true
	k.mu.Unlock()
	k.cancel()
}

func (k *killTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	k.mu.Lock()
	dead := k.dead
	k.mu.Unlock()
	if dead {
		return nil, errKilled
	}
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	if k.before != nil && k.before(req, body) {
		k.die()
		return nil, errKilled
	}
	resp, err := k.rt.RoundTrip(req)
	if err != nil || k.after == nil || strings.HasSuffix(req.URL.Path, "/stream") {
		return resp, err
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(answer))
	if k.after(req, answer) {
		k.die() // the answer is read, but the process dies before acting on it
	}
	return resp, nil
}

// collateLane works an ordered lane of 1..1200 (ranges of 400, chunks of
// 100, so the synthetic releases' files straddle chunks and ranges) with
// collators: one worker made with tr (nil: none) first, until it dies or is
// idle, then, after the lane's grant expires, a second one until idle. It
// returns the coord.
func collateLane(t *testing.T, tr *killTransport, replay bool) (*coord, int64) {
	t.Helper()
	c := newCoord(100)
	gid := c.addLane("alt.binaries.lane", lease.LaneHistory, 1, 1200, 400)
	srv := c.start()
	t.Cleanup(srv.Close)
	nowait := waitFunc(func(time.Duration) bool { return true })
	runOne := func(rt http.RoundTripper, ctx context.Context, cancel context.CancelFunc) *edge.Worker {
		cl, err := edge.NewClient(edge.Config{BaseURL: srv.URL, Token: c.token, HTTP: &http.Client{Transport: rt}, Clock: nowait})
		require.NoError(t, err)
		col, err := collate.New(collate.Config{})
		require.NoError(t, err)
		w, err := edge.NewWorker(edge.WorkerConfig{Client: cl, Handler: col, Lanes: []lease.Lane{lease.LaneHistory},
			Idle: idle, Clock: waitFunc(func(d time.Duration) bool {
				if d == idle {
					cancel() // no more work
				}
				return false
			})})
		require.NoError(t, err)
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(20 * time.Second):
			t.Fatal("the worker did not stop")
		}
		return w
	}
	if tr != nil {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		tr.rt, tr.cancel = srv.Client().Transport, cancel
		runOne(tr, ctx, cancel)
		require.True(t, tr.dead, "the first worker was killed")
		c.expireLane(gid)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := runOne(srv.Client().Transport, ctx, cancel)
	for id := int64(1); id <= 3; id++ {
		require.Equal(t, lease.StateDone, c.rng(id).State, "range %d", id)
	}
	require.Equal(t, replay, w.Stats().Replayed > 0, "the new holder rebuilt the window: %v", w.Stats())
	return c, gid
}

// merged joins the stored items per key, as a consumer of the results feed.
func merged(t *testing.T, bs []batch.Batch) map[string]usenet.Binary {
	t.Helper()
	out := map[string]usenet.Binary{}
	for _, b := range bs {
		for _, it := range b.Items {
			var bin usenet.Binary
			require.NoError(t, json.Unmarshal(it.Value, &bin))
			if m, ok := out[it.Key]; ok {
				bin = usenet.Merge(m, bin)
			}
			out[it.Key] = bin
		}
	}
	return out
}

func gunzipT(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	require.NoError(t, err)
	out, err := io.ReadAll(zr)
	require.NoError(t, err)
	return out
}

// Issue 9, defect 6: the holder of an ordered lane is killed in the middle
// of a range; after the lane's grant expires another worker takes the lane
// over. The collated output, and the window left at the end, equal those of
// an uninterrupted run.
func TestWorkerLaneTakeoverCollates(t *testing.T) {
	t.Parallel()
	ref, refGid := collateLane(t, nil, false)
	want := ref.batches()
	wantBins := merged(t, want)
	wantWindow := gunzipT(t, ref.laneState(refGid).snap)
	incomplete := 0
	for _, b := range wantBins {
		if !b.Complete {
			incomplete++
		}
	}
	require.NotZero(t, len(wantBins))
	require.Less(t, incomplete, len(wantBins))

	batchFrom := func(from string) func(r *http.Request, body []byte) bool {
		return func(r *http.Request, body []byte) bool {
			b, ok := sentBatch(r, body)
			return ok && strconv.FormatInt(b.From, 10) == from
		}
	}
	for _, tc := range []struct {
		name   string
		tr     *killTransport
		replay bool
	}{
		{"killed after a stored batch", &killTransport{after: func(r *http.Request, answer []byte) bool {
			return strings.HasSuffix(r.URL.Path, "/batch") && bytes.Contains(answer, []byte(`"next":601`))
		}}, true},
		{"killed before posting a handled chunk", &killTransport{before: batchFrom("701")}, true},
		{"killed before the first batch of a range", &killTransport{before: batchFrom("401")}, false},
		{"killed before saving the window of a stored range", &killTransport{before: func(r *http.Request, _ []byte) bool {
			return r.Method == http.MethodPut && r.URL.Query().Get("next") == "801"
		}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, gid := collateLane(t, tc.tr, tc.replay)
			got := c.batches()
			require.Equal(t, spans(want), spans(got))
			require.Equal(t, want, got, "the same items, batch by batch")
			require.Equal(t, wantBins, merged(t, got))
			require.Equal(t, string(wantWindow), string(gunzipT(t, c.laneState(gid).snap)))
		})
	}
}

func newLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
