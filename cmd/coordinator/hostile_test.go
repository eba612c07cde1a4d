package main

import (
	"context"
	"encoding/json"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/collate"
	"github.com/edgeindex/edgeindex/edge"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/internal/pgtest"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/nntp/nntptest"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// The hostile-provider suite (issue 17): serve --source nntp:// as it is
// deployed, in this process, reading an nntptest server that misbehaves in
// one way per test, with workers in the same process. Each TestHostile test
// checks what a user would: no cursor moved wrongly, no article lost or
// counted lost wrongly, memory bounded, other groups still served, a clear
// log line and status; on every backend.

// eachBackend runs fn as a subtest on every backend, with a new database.
func eachBackend(t *testing.T, fn func(t *testing.T, db string)) {
	t.Helper()
	for _, b := range pgtest.Backends {
		t.Run(b.Name, func(t *testing.T) { fn(t, b.URL(t)) })
	}
}

// hostile is a serve command reading a hostile NNTP server.
type hostile struct {
	t     *testing.T
	data  string
	db    string
	srv   *nntptest.Server
	serve *serving
	store *sqlstore.Store // the same database, for the checks

	token string
	stop  context.CancelFunc
	wg    sync.WaitGroup

	// maxFrame is the workers' edge.Config.MaxFrame; 0 means the default.
	maxFrame int
}

// newHostile starts the server with cfg, and a data directory and
// database for serve (not started yet: add groups first, then start).
func newHostile(t *testing.T, db string, cfg nntptest.Config) *hostile {
	t.Helper()
	srv, err := nntptest.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	h := &hostile{t: t, data: t.TempDir(), db: db, srv: srv}
	st, err := sqlstore.Open(t.Context(), db, sqlstore.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	h.store = st
	return h
}

// cli runs an admin command against the test's data and database.
func (h *hostile) cli(args ...string) (string, error) {
	h.t.Helper()
	return run(h.t, h.data, append(args, "--db", h.db)...)
}

// mustCLI runs an admin command that must succeed.
func (h *hostile) mustCLI(args ...string) string {
	h.t.Helper()
	out, err := h.cli(args...)
	require.NoError(h.t, err, "%q", args)
	return out
}

// start runs serve on the server with args after the defaults, and stops
// it (workers first) when the test ends.
func (h *hostile) start(args ...string) {
	h.t.Helper()
	base := []string{"--db", h.db, "--poll", "20ms", "--repair-delay", "10ms", "--retry-delay", "20ms"}
	if !slices.Contains(args, "--source") { // one unnamed --source at most
		base = append(base, "--source", h.srv.URL())
	}
	h.serve = startServe(h.t, h.data, append(base, args...)...)
	h.t.Cleanup(func() {
		h.stopWorkers()
		h.serve.stop(h.t)
	})
}

// workers starts n collating workers on every lane; they stop when the test
// ends or at stopWorkers.
func (h *hostile) workers(n int) {
	h.t.Helper()
	if h.token == "" {
		h.token = strings.TrimSpace(h.mustCLI("node", "add", "hostile-edge"))
	}
	ctx, cancel := context.WithCancel(h.t.Context())
	prev := h.stop
	h.stop = func() {
		if prev != nil {
			prev()
		}
		cancel()
	}
	for range n {
		col, err := collate.New(collate.Config{})
		require.NoError(h.t, err)
		cl, err := edge.NewClient(edge.Config{BaseURL: h.serve.base, Token: h.token, MaxFrame: h.maxFrame})
		require.NoError(h.t, err)
		w, err := edge.NewWorker(edge.WorkerConfig{Client: cl, Handler: col, Idle: 20 * time.Millisecond,
			Lanes: []lease.Lane{lease.LaneTail, lease.LaneHistory}})
		require.NoError(h.t, err)
		h.wg.Go(func() { w.Run(ctx) })
	}
}

// stopWorkers stops the workers and waits for them.
func (h *hostile) stopWorkers() {
	if h.stop != nil {
		h.stop()
	}
	h.wg.Wait()
}

// plan is the status of a group's plan.
func (h *hostile) plan(group string) grouplease.PlanStatus {
	h.t.Helper()
	plans, err := h.store.Plans(h.t.Context())
	require.NoError(h.t, err)
	for _, p := range plans {
		if p.Group == group {
			return p
		}
	}
	h.t.Fatalf("no plan for %q", group)
	return grouplease.PlanStatus{}
}

// statusJSON is coordinator status --json, decoded loosely.
func (h *hostile) statusJSON() map[string]any {
	h.t.Helper()
	out := h.mustCLI("status", "--json")
	var st map[string]any
	require.NoError(h.t, json.Unmarshal([]byte(out), &st))
	return st
}

// ranges returns the group's ranges.
func (h *hostile) ranges(group string) []lease.Range {
	h.t.Helper()
	rs, err := h.store.Ranges(h.t.Context(), grouplease.RangeFilter{Group: group, Limit: 10_000})
	require.NoError(h.t, err)
	return rs
}

// done counts the group's ranges that are done.
func (h *hostile) done(group string) int {
	n := 0
	for _, r := range h.ranges(group) {
		if r.State == lease.StateDone {
			n++
		}
	}
	return n
}

// logSays reports whether serve's log has a line with every one of words.
func (h *hostile) logSays(words ...string) bool {
	for _, line := range strings.Split(h.serve.stderr.String(), "\n") {
		all := true
		for _, w := range words {
			all = all && strings.Contains(line, w)
		}
		if all {
			return true
		}
	}
	return false
}

// heapWatch samples the live heap until stopped and reports its peak, in
// bytes. Tests that measure it are not parallel, so the heap is theirs
// (parallel tests run only after every sequential one has ended).
type heapWatch struct {
	peak atomic.Uint64
	done chan struct{}
	wg   sync.WaitGroup
}

func watchHeap() *heapWatch {
	runtime.GC() // the heap left by earlier tests is not this one's
	w := &heapWatch{done: make(chan struct{})}
	w.wg.Go(func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > w.peak.Load() {
				w.peak.Store(ms.HeapAlloc)
			}
			select {
			case <-w.done:
				return
			case <-tick.C:
			}
		}
	})
	return w
}

// below ends the sampling, logs the peak and fails t when it is not
// below limit bytes; why says what the peak was before the bound.
func (w *heapWatch) below(t *testing.T, limit uint64, why string) {
	t.Helper()
	close(w.done)
	w.wg.Wait()
	peak := w.peak.Load()
	t.Logf("heap peak %d MiB", peak>>20)
	require.Less(t, peak, limit, "heap peak %d MiB; %s", peak>>20, why)
}

// TestHostileControl is the suite's control: a well-behaved server's group
// is planned and indexed to its end on every backend.
func TestHostileControl(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db string) {
		h := newHostile(t, db, nntptest.Config{Groups: []nntptest.Group{{Name: "alt.ok", Lines: nntptest.Lines("alt.ok", 1, 2000)}}})
		h.mustCLI("group", "add", "alt.ok", "--range-size", "500", "--chunk-size", "100", "--plan", "tail,history")
		h.start()
		h.workers(2)
		require.Eventually(t, func() bool {
			p := h.plan("alt.ok")
			return p.High == 2000 && p.Lag == 0 && h.done("alt.ok") == 4
		}, 30*time.Second, 20*time.Millisecond)
		require.Zero(t, h.plan("alt.ok").Missing)
	})
}
