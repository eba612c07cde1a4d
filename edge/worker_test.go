package edge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/edge"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/overview"
)

const (
	idle      = 2 * time.Second  // the worker's Idle
	rangeBeat = 20 * time.Second // TTL/3 of the coord's 60 s range leases
	laneBeat  = 30 * time.Second // TTL/3 of its 90 s lane grants
)

// wsleep is a worker's injected clock. The idle wait stops the run: the
// work is done. A heartbeat wait passes when the test sends on its channel
// in beats, else waits for ctx. Every other wait (backoffs) passes at once.
type wsleep struct {
	stop      context.CancelFunc
	beats     map[time.Duration]chan time.Time
	onBackoff func()
	mu        sync.Mutex
	ds        []time.Duration
}

func (s *wsleep) Now() time.Time { return time.Now() }

func (s *wsleep) After(d time.Duration) <-chan time.Time {
	s.mu.Lock()
	s.ds = append(s.ds, d)
	s.mu.Unlock()
	if d == idle {
		s.stop()
		return nil // clock.Sleep waits for ctx
	}
	if d == rangeBeat || d == laneBeat || d == 10*time.Second {
		return s.beats[d] // a nil channel never sends
	}
	if s.onBackoff != nil {
		s.onBackoff()
	}
	ch := make(chan time.Time, 1)
	ch <- time.Now()
	return ch
}

func (s *wsleep) got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ds)
}

// run is a worker set up against a coord.
type run struct {
	c     *coord
	w     *edge.Worker
	sleep *wsleep
	ctx   context.Context
	stop  context.CancelFunc // stops Run, like SIGTERM
}

// startWorker makes a worker of handler against c. cfg's Client, Handler,
// Idle and Clock are filled in.
func startWorker(t testing.TB, c *coord, h edge.Handler, cfg edge.WorkerConfig) *run {
	t.Helper()
	return startWorkerWith(t, c, edge.Config{}, h, cfg)
}

// untilIdle runs the worker until it first goes idle, or is stopped, and
// returns Run's error.
func (r *run) untilIdle(t testing.TB) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- r.w.Run(r.ctx) }()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("the worker did not stop")
		return nil
	}
}

// lines counts the overview lines of c in [c.From, c.To], the way a real
// handler skips lines an earlier holder handled.
func lines(c edge.Chunk) (int64, error) {
	var n int64
	err := overview.ReadChunk(c.Data, func(o overview.Overview) error {
		if o.Number >= c.From && o.Number <= c.To {
			n++
		}
		return nil
	})
	return n, err
}

// counter is a Handler that counts lines and posts one item per chunk; it
// records the chunks it was given.
type counter struct {
	mu      sync.Mutex
	chunks  []lease.Span
	replays []lease.Span // the chunks handed with Replay set
	hook    func(ctx context.Context, c edge.Chunk) error
}

func (h *counter) HandleChunk(ctx context.Context, c edge.Chunk) (edge.Output, error) {
	h.mu.Lock()
	h.chunks = append(h.chunks, lease.Span{From: c.From, To: c.To})
	if c.Replay {
		h.replays = append(h.replays, lease.Span{From: c.From, To: c.To})
	}
	h.mu.Unlock()
	if h.hook != nil {
		if err := h.hook(ctx, c); err != nil {
			return edge.Output{}, err
		}
	}
	n, err := lines(c)
	if err != nil {
		return edge.Output{}, err
	}
	return edge.Output{Headers: n, Items: []batch.Item{{Key: fmt.Sprintf("%s:%d", c.Range.Group, c.From), Value: json.RawMessage(strconv.FormatInt(n, 10))}}}, nil
}

func (h *counter) seen() []lease.Span {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.chunks)
}

func spans(bs []batch.Batch) []lease.Span {
	out := make([]lease.Span, len(bs))
	for i, b := range bs {
		out[i] = lease.Span{From: b.From, To: b.To}
	}
	return out
}

// rangeCalls returns the calls on range id, without their status.
func rangeCalls(log []string, id int64) []string {
	var out []string
	prefix := fmt.Sprintf("/v1/ranges/%d/", id)
	for _, c := range log {
		f := strings.Fields(c)
		if strings.HasPrefix(f[1], prefix) {
			out = append(out, f[0]+" "+strings.TrimPrefix(f[1], prefix)+" "+f[2])
		}
	}
	return out
}

func TestWorkerWorksRanges(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	a := c.addRange("alt.a", 1, 250)
	b := c.addRange("alt.b", 1001, 1100)
	c.keep = true
	h := &counter{}
	r := startWorker(t, c, h, edge.WorkerConfig{})

	// Stats are read while the worker runs.
	stopPoll := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for {
			select {
			case <-stopPoll:
				return
			default:
				_ = r.w.Stats()
			}
		}
	}()
	require.NoError(t, r.untilIdle(t))
	close(stopPoll)
	<-polled

	require.Equal(t, lease.StateDone, c.rng(a).State)
	require.Equal(t, lease.StateDone, c.rng(b).State)
	require.Equal(t, []lease.Span{{From: 1, To: 100}, {From: 101, To: 200}, {From: 201, To: 250}, {From: 1001, To: 1100}}, spans(c.batches()))
	var headers int64
	for _, bt := range c.batches() {
		headers += bt.Headers
		require.Len(t, bt.Items, 1)
	}
	require.Equal(t, int64(350), headers, "one synthetic line per article")
	st := r.w.Stats()
	require.Equal(t, edge.Stats{Ranges: 2, Batches: 4, Items: 4, Headers: 350, Bytes: st.Bytes}, st)
	require.Positive(t, st.Bytes)
	require.Equal(t, []string{"GET stream 200", "POST batch 200", "POST batch 200", "POST batch 200", "POST finish 200"},
		rangeCalls(c.callLog(), a))
}

func TestWorkerResumesFromNext(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	id := c.addRange("alt.a", 1, 250)
	c.setNext(id, 150) // an earlier holder stored 1..149
	h := &counter{}
	r := startWorker(t, c, h, edge.WorkerConfig{})
	require.NoError(t, r.untilIdle(t))

	require.Equal(t, []lease.Span{{From: 150, To: 200}, {From: 201, To: 250}}, h.seen())
	bs := c.batches()
	require.Equal(t, []lease.Span{{From: 150, To: 200}, {From: 201, To: 250}}, spans(bs))
	require.Equal(t, int64(51), bs[0].Headers, "lines below next are skipped")
	require.Equal(t, lease.StateDone, c.rng(id).State)
}

func TestWorkerLeaseLostStopsRange(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	id := c.addRange("alt.a", 1, 300)
	c.before = func(r *http.Request) (int, string) {
		if b, ok := readSent(r); ok && b.From == 101 {
			return 409, "range 1: lease lost: token 1 is not current"
		}
		return 0, ""
	}
	h := &counter{}
	r := startWorker(t, c, h, edge.WorkerConfig{})
	require.NoError(t, r.untilIdle(t))

	require.Equal(t, []string{"GET stream 200", "POST batch 200", "POST batch 409"}, rangeCalls(c.callLog(), id),
		"nothing more is written: no batch, no finish, no release")
	require.Len(t, h.seen(), 3, "the handler works the next chunk while the refused batch is in flight; its batch is never posted")
	require.Equal(t, int64(1), r.w.Stats().Lost)
	require.Equal(t, int64(0), r.w.Stats().Released)
}

func TestWorkerHeartbeatLostCancelsRange(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	id := c.addRange("alt.a", 1, 300)
	c.before = func(r *http.Request) (int, string) {
		if strings.HasSuffix(r.URL.Path, "/heartbeat") {
			return 409, "range 1: lease lost: it was granted to another node"
		}
		return 0, ""
	}
	started := make(chan struct{})
	var handlerErr atomic.Value
	h := &counter{hook: func(ctx context.Context, _ edge.Chunk) error {
		close(started)
		<-ctx.Done() // a slow handler: the heartbeat's verdict stops it
		handlerErr.Store(ctx.Err())
		return ctx.Err()
	}}
	// A TTL override of 30 s heartbeats every 10 s.
	r := startWorker(t, c, h, edge.WorkerConfig{TTL: 30 * time.Second})
	beat := make(chan time.Time)
	r.sleep.beats[10*time.Second] = beat
	go func() {
		<-started
		beat <- time.Time{}
	}()
	require.NoError(t, r.untilIdle(t))

	require.Equal(t, context.Canceled, handlerErr.Load())
	require.Equal(t, []string{"GET stream 200", "POST heartbeat 409"}, rangeCalls(c.callLog(), id))
	require.Equal(t, int64(1), r.w.Stats().Lost)
	require.Contains(t, r.sleep.got(), 10*time.Second)
	require.NotContains(t, r.sleep.got(), rangeBeat)
}

func TestWorkerHeartbeatsAtTTLThird(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	id := c.addRange("alt.a", 1, 200)
	beat := make(chan time.Time)
	h := &counter{hook: func(_ context.Context, ch edge.Chunk) error {
		if ch.From == 1 {
			beat <- time.Time{} // two heartbeats while the first chunk is handled
			beat <- time.Time{}
			// The second send returns once the loop took the tick, before
			// its call: wait for the answer, or the range may finish
			// first and the heartbeat find it done (409).
			for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
				if countCalls(rangeCalls(c.callLog(), id), "POST heartbeat 200") == 2 {
					break
				}
			}
		}
		return nil
	}}
	r := startWorker(t, c, h, edge.WorkerConfig{})
	r.sleep.beats[rangeBeat] = beat
	require.NoError(t, r.untilIdle(t))

	calls := rangeCalls(c.callLog(), id)
	require.Equal(t, 2, countCalls(calls, "POST heartbeat 200"), "%v", calls)
	require.Equal(t, "POST finish 200", calls[len(calls)-1])
	require.Equal(t, lease.StateDone, c.rng(id).State)
}

func TestWorkerBadChunkReportsCorrupt(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	id := c.addRange("alt.a", 1, 300)
	c.data[101] = []byte("not gzip at all") // dropped by corrupt, so it is fetched again
	h := &counter{}
	r := startWorker(t, c, h, edge.WorkerConfig{})
	require.NoError(t, r.untilIdle(t))

	require.Equal(t, []string{
		"GET stream 200", "POST batch 200", "POST corrupt 200", // the first grant
		"GET stream 200", "POST batch 200", "POST batch 200", "POST finish 200", // granted again: from next
	}, rangeCalls(c.callLog(), id))
	got := c.rng(id)
	require.Equal(t, lease.StateDone, got.State)
	require.Equal(t, 1, got.Attempts)
	require.Equal(t, []lease.Span{{From: 1, To: 100}, {From: 101, To: 200}, {From: 201, To: 300}}, spans(c.batches()))
	st := r.w.Stats()
	require.Equal(t, int64(1), st.Corrupt)
	require.Equal(t, int64(0), st.Released)
}

func TestWorkerHandlerErrorReleases(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	id := c.addRange("alt.a", 1, 300)
	var failed atomic.Bool
	h := &counter{hook: func(_ context.Context, ch edge.Chunk) error {
		if ch.From == 101 && !failed.Swap(true) {
			return errors.New("the disk is full")
		}
		return nil
	}}
	r := startWorker(t, c, h, edge.WorkerConfig{})
	require.NoError(t, r.untilIdle(t))

	require.Equal(t, []string{
		"GET stream 200", "POST batch 200", "POST release 200",
		"GET stream 200", "POST batch 200", "POST batch 200", "POST finish 200",
	}, rangeCalls(c.callLog(), id))
	got := c.rng(id)
	require.Equal(t, lease.StateDone, got.State)
	require.Equal(t, 0, got.Attempts, "a release counts no attempt")
	require.Contains(t, r.sleep.got(), 2*idle, "the failed round backs off")
	require.Equal(t, int64(1), r.w.Stats().Released)
}

func TestWorkerReopensCutStream(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	id := c.addRange("alt.a", 1, 300)
	c.cutAt = []int{1, 0} // the first stream stops after a chunk, the second before any
	c.keep = true
	h := &counter{}
	r := startWorker(t, c, h, edge.WorkerConfig{})
	require.NoError(t, r.untilIdle(t))

	require.Equal(t, []string{
		"GET stream 200", "POST batch 200",
		"GET stream 200",
		"GET stream 200", "POST batch 200", "POST batch 200", "POST finish 200",
	}, rangeCalls(c.callLog(), id))
	require.Equal(t, []lease.Span{{From: 1, To: 100}, {From: 101, To: 200}, {From: 201, To: 300}}, h.seen())
	require.Equal(t, lease.StateDone, c.rng(id).State)
}

func TestWorkerErrorFrameReleases(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	id := c.addRange("alt.a", 1, 100)
	c.abortMsg = "chunk 1-100 did not come within 1h0m0s"
	h := &counter{}
	r := startWorker(t, c, h, edge.WorkerConfig{})
	r.sleep.onBackoff = func() {
		c.mu.Lock()
		c.abortMsg = ""
		c.mu.Unlock()
	}
	require.NoError(t, r.untilIdle(t))

	require.Equal(t, []string{"GET stream 200", "POST release 200", "GET stream 200", "POST batch 200", "POST finish 200"},
		rangeCalls(c.callLog(), id))
}

func TestWorkerShutdownReleases(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	id := c.addRange("alt.a", 1, 300)
	var r *run
	h := &counter{hook: func(ctx context.Context, ch edge.Chunk) error {
		if ch.From == 101 {
			r.stop() // SIGTERM while a chunk is being handled
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}}
	r = startWorker(t, c, h, edge.WorkerConfig{})
	require.NoError(t, r.untilIdle(t))

	require.Equal(t, []string{"GET stream 200", "POST batch 200", "POST release 200"}, rangeCalls(c.callLog(), id))
	got := c.rng(id)
	require.Equal(t, lease.StatePending, got.State)
	require.Equal(t, int64(101), got.Next)
	require.Equal(t, "POST /v1/ranges/1/release 200", c.callLog()[len(c.callLog())-1], "Run returns after the release")
}

// cancelAfterTransport cancels a run once an answer's body contains mark,
// having read that body first, so the caller still gets the answer.
type cancelAfterTransport struct {
	rt     http.RoundTripper
	mark   string
	cancel func()
}

func (c *cancelAfterTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if bytes.Contains(body, []byte(c.mark)) {
		c.cancel()
	}
	return resp, nil
}

func TestWorkerShutdownFinishesWhenOnlyFinishLeft(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	id := c.addRange("alt.a", 1, 250)
	srv := c.start()
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// SIGTERM arrives just as the last batch is stored.
	tr := &cancelAfterTransport{rt: srv.Client().Transport, mark: `"next":251`, cancel: cancel}
	cl, err := edge.NewClient(edge.Config{BaseURL: srv.URL, Token: c.token, HTTP: &http.Client{Transport: tr}})
	require.NoError(t, err)
	w, err := edge.NewWorker(edge.WorkerConfig{Client: cl, Handler: &counter{}, Clock: blockClock})
	require.NoError(t, err)
	require.NoError(t, w.Run(ctx))

	require.Equal(t, []string{"GET stream 200", "POST batch 200", "POST batch 200", "POST batch 200", "POST finish 200"},
		rangeCalls(c.callLog(), id))
	require.Equal(t, lease.StateDone, c.rng(id).State)
	require.Equal(t, int64(1), w.Stats().Ranges)
}

func TestWorkerUnauthorized(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	c.addRange("alt.a", 1, 300)
	srv := c.start()
	t.Cleanup(srv.Close)
	cl, err := edge.NewClient(edge.Config{BaseURL: srv.URL, Token: "revoked", HTTP: srv.Client()})
	require.NoError(t, err)
	w, err := edge.NewWorker(edge.WorkerConfig{Client: cl, Handler: &counter{}, Clock: blockClock})
	require.NoError(t, err)
	err = w.Run(context.Background())
	require.ErrorIs(t, err, edge.ErrUnauthorized)
	require.Equal(t, []string{"POST /v1/leases 401"}, c.callLog())
}

func TestNewWorkerConfig(t *testing.T) {
	t.Parallel()
	cl, err := edge.NewClient(edge.Config{BaseURL: "http://127.0.0.1:1", Token: "t"})
	require.NoError(t, err)
	for _, cfg := range []edge.WorkerConfig{
		{},
		{Client: cl},
		{Handler: &counter{}},
		{Client: cl, Handler: &counter{}, Lanes: []lease.Lane{"sideways"}},
		{Client: cl, Handler: &counter{}, Idle: -time.Second},
	} {
		_, err := edge.NewWorker(cfg)
		require.ErrorIs(t, err, edgeindex.ErrInvalid)
	}
}

// window is a Windowed handler whose window is the running count of lines
// of its lane.
type window struct {
	counter
	lines int64
	loads []string
}

var _ edge.Windowed = (*window)(nil)

func (h *window) HandleChunk(ctx context.Context, c edge.Chunk) (edge.Output, error) {
	out, err := h.counter.HandleChunk(ctx, c)
	h.mu.Lock()
	h.lines += out.Headers
	h.mu.Unlock()
	return out, err
}

func (h *window) SaveWindow() ([]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return fmt.Appendf(nil, "lines=%d", h.lines), nil
}

func (h *window) LoadWindow(state []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if state == nil {
		h.loads = append(h.loads, "<nil>")
		h.lines = 0
		return nil
	}
	h.loads = append(h.loads, string(state))
	n, err := strconv.ParseInt(strings.TrimPrefix(string(state), "lines="), 10, 64)
	h.lines = n
	return err
}

func TestWorkerLaneWindow(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	tail := c.addLane("alt.tail", lease.LaneTail, 1, 400, 200)
	hist := c.addLane("alt.hist", lease.LaneHistory, 5001, 5100, 200)
	c.setSnapshot(tail, gz(t, "lines=1000"), 1)
	h := &window{}
	r := startWorker(t, c, h, edge.WorkerConfig{Lanes: []lease.Lane{lease.LaneTail, lease.LaneHistory}})
	require.NoError(t, r.untilIdle(t))

	require.Equal(t, []string{"lines=1000", "<nil>"}, h.loads)
	ts := c.laneState(tail)
	require.Equal(t, gz(t, "lines=1400"), ts.snap)
	require.Equal(t, int64(401), ts.snapNext)
	require.False(t, ts.held, "the lane is released when no range is ready")
	hs := c.laneState(hist)
	require.Equal(t, gz(t, "lines=100"), hs.snap)
	require.Equal(t, int64(5101), hs.snapNext)
	for id := int64(1); id <= 3; id++ {
		require.Equal(t, lease.StateDone, c.rng(id).State)
	}

	// Each range's window is saved once its batches are stored, before
	// its finish, so a crash between the two leaves a consistent pair.
	var laneCalls []string
	for _, call := range c.callLog() {
		f := strings.Fields(call)
		if strings.HasPrefix(f[1], "/v1/groups/") || strings.HasSuffix(f[1], "/finish") {
			laneCalls = append(laneCalls, f[0]+" "+f[1])
		}
	}
	require.Equal(t, []string{
		"POST /v1/groups/lease",
		"GET /v1/groups/100/snapshot",
		"POST /v1/groups/100/next",
		"PUT /v1/groups/100/snapshot", "POST /v1/ranges/1/finish",
		"POST /v1/groups/100/next",
		"PUT /v1/groups/100/snapshot", "POST /v1/ranges/2/finish",
		"POST /v1/groups/100/next", // 204
		"POST /v1/groups/100/release",
		"POST /v1/groups/lease",
		"POST /v1/groups/101/next",
		"PUT /v1/groups/101/snapshot", "POST /v1/ranges/3/finish",
		"POST /v1/groups/101/next",
		"POST /v1/groups/101/release",
		"POST /v1/groups/lease", "POST /v1/groups/lease", // the next round: 204, 204
	}, laneCalls)
}

func TestWorkerLaneLost(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	gid := c.addLane("alt.tail", lease.LaneTail, 1, 400, 200)
	c.before = func(r *http.Request) (int, string) {
		if r.URL.Path == "/v1/groups/100/heartbeat" {
			return 409, "group 100 lane tail: lease lost"
		}
		return 0, ""
	}
	started := make(chan struct{})
	h := &window{counter: counter{hook: func(ctx context.Context, ch edge.Chunk) error {
		if ch.From == 101 {
			close(started)
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}}}
	r := startWorker(t, c, h, edge.WorkerConfig{Lanes: []lease.Lane{lease.LaneTail}})
	beat := make(chan time.Time)
	r.sleep.beats[laneBeat] = beat
	go func() {
		<-started
		beat <- time.Time{}
	}()
	require.NoError(t, r.untilIdle(t))

	log := c.callLog()
	require.Equal(t, []string{"GET stream 200", "POST batch 200"}, rangeCalls(log, 1), "nothing more on the range")
	require.Zero(t, countCalls(log, "POST /v1/groups/100/release"), "a lost lane is not released")
	require.Zero(t, countCalls(log, "PUT /v1/groups/100/snapshot"))
	require.True(t, c.laneState(gid).held)
	require.Equal(t, int64(1), r.w.Stats().Lost)
}

func TestWorkerLaneShutdownReleasesLane(t *testing.T) {
	t.Parallel()
	c := newCoord(100)
	gid := c.addLane("alt.tail", lease.LaneTail, 1, 400, 200)
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

	log := c.callLog()
	require.Equal(t, []string{"GET stream 200", "POST batch 200", "POST release 200"}, rangeCalls(log, 1))
	require.Equal(t, "POST /v1/groups/100/release 200", log[len(log)-1])
	require.False(t, c.laneState(gid).held)
	require.Equal(t, int64(101), c.rng(1).Next)
}
