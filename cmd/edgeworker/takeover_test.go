package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/collate"
	"github.com/edgeindex/edgeindex/coordinator"
	"github.com/edgeindex/edgeindex/edge"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/sqlstore"
	"github.com/edgeindex/edgeindex/storetest"
	"github.com/edgeindex/edgeindex/usenet"
)

// clockedPipeline is a pipeline whose store's clock the test moves.
type clockedPipeline struct {
	pipeline
	clock *clock.Manual
}

func newClockedPipeline(t *testing.T, g grouplease.Group) *clockedPipeline {
	t.Helper()
	clock := storetest.NewClock()
	return &clockedPipeline{pipeline: *newPipelineOn(t, sqlstore.Config{Clock: clock}, g), clock: clock}
}

// stopTransport stops a worker once an answer contains mark: it cancels the
// run's context, as SIGTERM would, and when kill is set it also fails every
// later request, as if the process had died.
type stopTransport struct {
	rt     http.RoundTripper
	mark   string
	kill   bool
	cancel context.CancelFunc
	mu     sync.Mutex
	dead   bool
}

func (d *stopTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	d.mu.Lock()
	dead := d.dead
	d.mu.Unlock()
	if dead {
		return nil, errors.New("killed")
	}
	resp, err := d.rt.RoundTrip(req)
	if err != nil || strings.HasSuffix(req.URL.Path, "/stream") {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if bytes.Contains(body, []byte(d.mark)) {
		d.mu.Lock()
		d.dead = d.kill
		d.mu.Unlock()
		d.cancel()
	}
	return resp, nil
}

// collateUntil runs a collating lane worker over p with rt until stop says so.
func collateUntil(t *testing.T, ctx context.Context, cancel context.CancelFunc, p *clockedPipeline, rt http.RoundTripper, stop func() bool) edge.Stats {
	t.Helper()
	col, err := collate.New(collate.Config{})
	require.NoError(t, err)
	cl, err := edge.NewClient(edge.Config{BaseURL: p.url, Token: p.token, HTTP: &http.Client{Transport: rt}, Attempts: 1})
	require.NoError(t, err)
	w, err := edge.NewWorker(edge.WorkerConfig{Client: cl, Handler: col, Lanes: []lease.Lane{lease.LaneHistory}, Idle: 10 * time.Millisecond})
	require.NoError(t, err)
	errc := make(chan error, 1)
	go func() { errc <- w.Run(ctx) }()
	require.Eventually(t, stop, 60*time.Second, 10*time.Millisecond)
	cancel()
	require.NoError(t, <-errc)
	return w.Stats()
}

// items returns the group's results feed as sorted "key value" strings, and
// merged per key.
func items(t *testing.T, p *clockedPipeline, group string) ([]string, map[string]usenet.Binary) {
	var out []string
	merged := map[string]usenet.Binary{}
	for _, res := range p.results(t, group) {
		out = append(out, res.Key+" "+string(res.Value))
		var b usenet.Binary
		require.NoError(t, json.Unmarshal(res.Value, &b))
		if m, ok := merged[res.Key]; ok {
			b = usenet.Merge(m, b)
		}
		merged[res.Key] = b
	}
	slices.Sort(out)
	return out, merged
}

const laneGroup = "alt.binaries.ordered"

// uninterrupted returns the results feed of one worker that collates the
// ordered group alone, from start to end.
func uninterrupted(t *testing.T, group grouplease.Group) ([]string, map[string]usenet.Binary) {
	ref := newClockedPipeline(t, group)
	ctx, cancel := context.WithCancel(t.Context())
	collateUntil(t, ctx, cancel, ref, http.DefaultTransport, func() bool { return ref.done(t) })
	want, wantBins := items(t, ref, group.Name)
	require.NotEmpty(t, want)
	return want, wantBins
}

// takeover stops a lane holder when an answer holds `"next":2601` (ranges
// 301..1800, 1801..3300, 3301..4800 in chunks of 400: 1801..2600 of the
// second are stored), killing it when kill is set, then lets another worker
// take the lane over, after the grants expire when the first was killed. It
// checks the results feed is the one of an uninterrupted worker, and returns
// the second worker's stats.
func takeover(t *testing.T, kill bool) edge.Stats {
	group := grouplease.Group{Name: laneGroup, Ordered: true, RangeSize: 1500, ChunkSize: 400}
	want, wantBins := uninterrupted(t, group)

	p := newClockedPipeline(t, group)
	ctx, cancel := context.WithCancel(t.Context())
	tr := &stopTransport{rt: http.DefaultTransport, mark: `"next":2601`, kill: kill, cancel: cancel}
	collateUntil(t, ctx, cancel, p, tr, func() bool { return ctx.Err() != nil })
	require.False(t, p.done(t))
	if kill {
		p.clock.Advance(2 * coordinator.DefaultLeaseTTL) // the lane's and the range's grants expire
	}

	ctx, cancel = context.WithCancel(t.Context())
	st := collateUntil(t, ctx, cancel, p, http.DefaultTransport, func() bool { return p.done(t) })
	got, gotBins := items(t, p, laneGroup)
	require.Equal(t, wantBins, gotBins, "the binaries merged per key")
	require.Equal(t, want, got, "the items")
	return st
}

// Issue 9, defect 6, over the coordinator: a lane holder stopped (SIGTERM)
// in the middle of a range saves its window at the range's next before it
// gives the range back; the next holder goes on from there, and the results
// are those of an uninterrupted run.
func TestLaneHandoffCollates(t *testing.T) {
	t.Parallel()
	st := takeover(t, false)
	require.Zero(t, st.Replayed, "the saved window was in step with next")
}

// Issue 9, defect 6, over the coordinator: a lane holder killed in the
// middle of a range; once its grants expire another worker takes the lane
// over, hands the stored chunks of the range to the window again, and the
// results are those of an uninterrupted run.
// The coordinator's GET /v1/ranges/{id}/stream?from=N streams from the
// chunk holding N; without it the new holder's window lacks 1801..2600.
func TestLaneTakeoverCollates(t *testing.T) {
	t.Parallel()
	st := takeover(t, true)
	require.Equal(t, int64(2), st.Replayed, "1801..2200 and 2201..2600 were handed to the window again")
}
