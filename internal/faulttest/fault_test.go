package faulttest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// The workload: an unordered group and an ordered one with both lanes.
//
// The unordered group's chunks are 1000 articles, aligned to the synthetic
// source's releases (articles 1000k+1..1000k+1000 are one release), so every
// binary completes within one chunk and a worker killed between chunks holds
// nothing in its collator's window: its results are exactly once by the
// coordinator's rules alone. The ordered group's chunks (100) and ranges
// (500) cut through binaries, so its binaries are carried across chunks and
// ranges in the lane's window and snapshots.
const (
	plainGroup   = "alt.binaries.fault.plain"
	orderedGroup = "alt.binaries.fault.ordered"

	plainArticles, plainRange, plainChunk = 240_000, 2_000, 1_000 // 120 ranges
	historyEnd, tailEnd                   = 30_000, 45_000        // ordered: history 1..30000, tail 30001..45000
	orderedRange, orderedChunk            = 500, 100              // 60 + 30 ranges

	totalRanges = plainArticles/plainRange + tailEnd/orderedRange

	workers  = 8
	leaseTTL = 2 * time.Second
)

// Environment switches.
const (
	// envNoFaults runs the same workload without faults: a control run.
	envNoFaults = "EDGEINDEX_FAULTTEST_NOFAULTS"
	// envSeed fixes the random choices (which worker is killed).
	envSeed = "EDGEINDEX_FAULTTEST_SEED"
	// envKeep keeps the logs and data directory even when the test passes.
	envKeep = "EDGEINDEX_FAULTTEST_KEEP"
	// envRace=0 builds the coordinator without the race detector.
	envRace = "EDGEINDEX_FAULTTEST_RACE"
)

// harness is the fleet under test and what was done to it.
type harness struct {
	t         *testing.T
	coordBin  string
	workerBin string
	pg        *pgCluster
	data      string // the coordinator's --data
	logs      string
	addr      string
	coord     *proc
	coordRuns int
	store     *sqlstore.Store
	rng       *rand.Rand

	workers []*worker // every worker process started, in order
	started int
	faults  []string       // the faults, in order, as logged
	counts  map[string]int // faults by kind
	metrics map[string]float64
	paused  []pause
}

type worker struct {
	name  string
	p     *proc
	alive bool
}

// pause is a worker stopped past its TTL and continued.
type pause struct {
	w        *worker
	held     []lease.Lease           // what it held when stopped
	lanes    []grouplease.LaneStatus // the lanes it held when stopped
	movedTo  map[int64]string        // range id → the node holding it when continued ("" when done or pending)
	unmoved  []int64                 // ranges still under its lease when it was continued
	contAt   time.Time
	logAfter int64
}

func TestFaultsRealProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL, a coordinator and worker processes; skipped under -short")
	}
	began := time.Now()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(envSeed); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, envSeed)
		seed = n
	}
	h := &harness{t: t, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), counts: map[string]int{}, metrics: map[string]float64{}}
	t.Logf("seed %d (%s=%d repeats the choices)", seed, envSeed, seed)

	logs, err := os.MkdirTemp("", "edgeindex-faulttest-")
	require.NoError(t, err)
	h.logs = logs
	t.Cleanup(func() {
		if t.Failed() || os.Getenv(envKeep) == "1" {
			t.Logf("logs and data kept in %s", logs)
			return
		}
		os.RemoveAll(logs)
	})
	h.data = filepath.Join(logs, "data")
	race := os.Getenv(envRace) != "0"
	h.coordBin, h.workerBin = buildBinaries(t, logs, race)
	h.pg = newPGCluster(t)
	h.addr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	t.Logf("built the binaries and started PostgreSQL in %v", time.Since(began).Round(time.Millisecond))

	h.cli("group", "add", plainGroup, "--range-size", fmt.Sprint(plainRange), "--chunk-size", fmt.Sprint(plainChunk))
	h.cli("range", "add", plainGroup, "1", fmt.Sprint(plainArticles))
	h.cli("group", "add", orderedGroup, "--ordered", "--range-size", fmt.Sprint(orderedRange), "--chunk-size", fmt.Sprint(orderedChunk))
	h.cli("range", "add", orderedGroup, "1", fmt.Sprint(historyEnd))
	h.cli("range", "add", orderedGroup, fmt.Sprint(historyEnd+1), fmt.Sprint(tailEnd), "--lane", "tail")

	// The test reads the database itself, on the same cluster.
	ctx := t.Context()
	h.store, err = sqlstore.Open(ctx, h.pg.URL(), sqlstore.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { h.store.Close() })

	h.startCoordinator()
	for range workers {
		h.startWorker()
	}

	faults := os.Getenv(envNoFaults) != "1"
	if !faults {
		t.Logf("%s=1: no faults (a control run)", envNoFaults)
	}
	h.run(began, faults)
	h.scrapeMetrics()
	t.Logf("all %d ranges done %v after the start", totalRanges, time.Since(began).Round(time.Millisecond))

	// Stop the fleet before reading what it stored: the workers at once,
	// the coordinator gracefully (SIGTERM: it must exit 0, and a race-built
	// one exits 66 when it saw a race).
	for _, w := range h.workers {
		w.p.kill()
	}
	require.NoError(t, h.coord.signal(syscall.SIGTERM))
	if !h.coord.wait(20 * time.Second) {
		t.Errorf("the coordinator did not exit within 20 s of SIGTERM\n%s", tail(h.coord.log, 20))
		h.coord.kill()
	} else if h.coord.err != nil {
		t.Errorf("the coordinator exited after SIGTERM with %v\n%s", h.coord.err, tail(h.coord.log, 20))
	}

	h.verify()
	t.Logf("faults injected (%d): %v", len(h.faults), h.counts)
	for _, f := range h.faults {
		t.Logf("  %s", f)
	}
	t.Logf("coordinator batch outcomes over its %d lives: %v", h.coordRuns, h.metrics)
	t.Logf("took %v", time.Since(began).Round(time.Millisecond))
}

// fault records one fault.
func (h *harness) fault(kind, format string, args ...any) {
	msg := fmt.Sprintf("%-16s ", kind) + fmt.Sprintf(format, args...)
	h.faults = append(h.faults, msg)
	h.counts[kind]++
	h.t.Logf("fault: %s", msg)
}

// cli runs a coordinator command against the cluster and returns stdout.
func (h *harness) cli(args ...string) string {
	h.t.Helper()
	args = append(args, "--db", h.pg.URL(), "--data", h.data)
	cmd := exec.Command(h.coordBin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(h.t, err, "coordinator %s: %s", strings.Join(args, " "), stderr.String())
	return string(out)
}

// startCoordinator starts coordinator serve on h.addr and waits for /readyz.
func (h *harness) startCoordinator() {
	h.t.Helper()
	h.coordRuns++
	h.coord = startProc(h.t, "coordinator", filepath.Join(h.logs, "coordinator.log"), nil, nil, h.logs, h.coordBin, "serve",
		"--db", h.pg.URL(), "--data", h.data, "--addr", h.addr, "--source", "synthetic", "--lease-ttl", leaseTTL.String())
	deadline := time.Now().Add(30 * time.Second)
	for {
		if h.coord.exited() {
			h.t.Fatalf("the coordinator exited: %v\n%s", h.coord.err, tail(h.coord.log, 30))
		}
		if code, _ := h.get("/readyz"); code == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("the coordinator is not ready after 30 s\n%s", tail(h.coord.log, 30))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// get fetches a path of the coordinator.
func (h *harness) get(path string) (int, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+h.addr+path, nil)
	if err != nil {
		return 0, ""
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// scrapeMetrics adds the coordinator's batch counters to h.metrics: the
// counters restart with each coordinator process, so they are read before
// each kill.
func (h *harness) scrapeMetrics() {
	code, body := h.get("/metrics")
	if code != http.StatusOK {
		h.t.Logf("metrics: status %d", code)
		return
	}
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for _, name := range []string{"edgeindex_batches_total", "edgeindex_items_stored_total", "edgeindex_leases_granted_total"} {
			if !strings.HasPrefix(line, name) {
				continue
			}
			key, val, ok := strings.Cut(line, " ")
			if !ok {
				continue
			}
			if v, err := strconv.ParseFloat(val, 64); err == nil {
				h.metrics[strings.TrimPrefix(key, "edgeindex_")] += v
			}
		}
	}
}

// startWorker adds a node and starts a worker process for it. Every process
// is a node of its own, so the stored batches tell which process wrote them.
func (h *harness) startWorker() *worker {
	h.t.Helper()
	h.started++
	name := fmt.Sprintf("w%02d", h.started)
	token := strings.TrimSpace(h.cli("node", "add", name))
	p := startProc(h.t, name, filepath.Join(h.logs, name+".log"), []string{"EDGEINDEX_NODE_TOKEN=" + token}, nil, h.logs,
		h.workerBin, "--coordinator", "http://"+h.addr, "--lanes", "history,tail")
	w := &worker{name: name, p: p, alive: true}
	h.workers = append(h.workers, w)
	return w
}

func (h *harness) worker(name string) *worker {
	for _, w := range h.workers {
		if w.name == name && w.alive {
			return w
		}
	}
	return nil
}

func (h *harness) alive() []*worker {
	var out []*worker
	for _, w := range h.workers {
		if w.alive {
			out = append(out, w)
		}
	}
	return out
}

// held returns the range leases held now, by node.
func (h *harness) held() map[string][]lease.Lease {
	h.t.Helper()
	ls, err := again(func() ([]lease.Lease, error) { return h.store.Held(h.t.Context()) })
	require.NoError(h.t, err)
	out := map[string][]lease.Lease{}
	for _, l := range ls {
		out[l.Node] = append(out[l.Node], l)
	}
	return out
}

// again runs a read of the test's own up to 10 times, 100 ms apart: the
// first use of a pooled connection that PostgreSQL's restart ended fails.
func again[T any](read func() (T, error)) (T, error) {
	var v T
	var err error
	for range 10 {
		if v, err = read(); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return v, err
}

func (h *harness) lanes(group string) ([]grouplease.LaneStatus, error) {
	return again(func() ([]grouplease.LaneStatus, error) { return h.store.Lanes(h.t.Context(), group) })
}

// killWorker SIGKILLs w and starts a replacement.
func (h *harness) killWorker(w *worker, why string) {
	h.t.Helper()
	held := h.held()[w.name]
	w.p.kill()
	w.alive = false
	nw := h.startWorker()
	var desc []string
	for _, l := range held {
		desc = append(desc, fmt.Sprintf("%s range %d (%s, next %d of %d..%d)", l.Range.Group, l.Range.ID, l.Range.Lane, l.Range.Next, l.Range.Start, l.Range.End))
	}
	h.fault("kill-worker", "%s (%s) holding %v; replaced by %s", w.name, why, desc, nw.name)
}

// laneHolder returns a live worker that holds a lane of the ordered group
// and a range of it in the middle (some batches stored, some not), and that
// range.
func (h *harness) laneHolder() (*worker, lease.Lease, bool) {
	for node, ls := range h.held() {
		w := h.worker(node)
		if w == nil {
			continue
		}
		for _, l := range ls {
			if l.Range.Group == orderedGroup && l.Range.Next > l.Range.Start && l.Range.Next <= l.Range.End {
				return w, l, true // mid-range
			}
		}
	}
	return nil, lease.Lease{}, false
}

// waitLaneHolder polls laneHolder for at most d.
func (h *harness) waitLaneHolder(d time.Duration) (*worker, lease.Lease, bool) {
	deadline := time.Now().Add(d)
	for {
		if w, l, ok := h.laneHolder(); ok || time.Now().After(deadline) {
			return w, l, ok
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// plainHolder returns a live worker, not one of not, that holds a range of
// the plain group.
func (h *harness) plainHolder(not ...*worker) (*worker, bool) {
	var ws []*worker
	for node, ls := range h.held() {
		w := h.worker(node)
		if w == nil || slices.Contains(not, w) {
			continue
		}
		for _, l := range ls {
			if l.Range.Group == plainGroup {
				ws = append(ws, w)
				break
			}
		}
	}
	if len(ws) == 0 {
		return nil, false
	}
	slices.SortFunc(ws, func(a, b *worker) int { return strings.Compare(a.name, b.name) })
	return ws[h.rng.IntN(len(ws))], true
}

// pauseWorkers SIGSTOPs ws past their TTL, waits until every range lease
// and lane they held has been granted to someone else (at most 20 s), and
// SIGCONTs them.
func (h *harness) pauseWorkers(ws ...*worker) {
	h.t.Helper()
	held := h.held()
	lanes, err := h.lanes(orderedGroup)
	require.NoError(h.t, err)
	ps := make([]pause, len(ws))
	for i, w := range ws {
		ps[i] = pause{w: w, held: held[w.name], movedTo: map[int64]string{}}
		for _, l := range lanes {
			if l.Holder == w.name {
				ps[i].lanes = append(ps[i].lanes, l)
			}
		}
		require.NoError(h.t, w.p.signal(syscall.SIGSTOP))
	}
	stopAt := time.Now()
	deadline := stopAt.Add(20 * time.Second)
	for {
		time.Sleep(100 * time.Millisecond)
		if time.Since(stopAt) < leaseTTL+500*time.Millisecond {
			continue
		}
		now := h.held()
		lanes, err := h.lanes(orderedGroup)
		require.NoError(h.t, err)
		moved := true
		for i := range ps {
			p := &ps[i]
			p.unmoved = nil
			for _, l := range p.held {
				if still := slices.ContainsFunc(now[p.w.name], func(x lease.Lease) bool { return x.Range.ID == l.Range.ID && x.Token == l.Token }); still {
					p.unmoved = append(p.unmoved, l.Range.ID)
					moved = false
					continue
				}
				p.movedTo[l.Range.ID] = ""
				for node, ls := range now {
					if slices.ContainsFunc(ls, func(x lease.Lease) bool { return x.Range.ID == l.Range.ID }) {
						p.movedTo[l.Range.ID] = node
					}
				}
			}
			for _, pl := range p.lanes {
				for _, l := range lanes {
					if l.Lane == pl.Lane && l.Token == pl.Token {
						moved = false // the lane is still under the same grant
					}
				}
			}
		}
		if moved || time.Now().After(deadline) {
			break
		}
	}
	stopped := time.Since(stopAt)
	for i := range ps {
		p := &ps[i]
		p.logAfter = p.w.p.logSize()
		p.contAt = time.Now()
		require.NoError(h.t, p.w.p.signal(syscall.SIGCONT))
		var desc []string
		for _, l := range p.held {
			to := p.movedTo[l.Range.ID]
			if slices.Contains(p.unmoved, l.Range.ID) {
				to = "NOT MOVED: still under its lease"
			} else if to == "" {
				to = "not leased"
				if r, err := h.store.Range(h.t.Context(), l.Range.ID); err == nil {
					to = string(r.State)
				}
			}
			desc = append(desc, fmt.Sprintf("%s range %d (%s, token %d) → %s", l.Range.Group, l.Range.ID, l.Range.Lane, l.Token, to))
		}
		for _, l := range p.lanes {
			desc = append(desc, fmt.Sprintf("%s lane %s (token %d)", l.Group, l.Lane, l.Token))
		}
		h.fault("pause-worker", "%s SIGSTOP for %v (TTL %v), then SIGCONT; it held %v", p.w.name, stopped.Round(time.Millisecond), leaseTTL, desc)
	}
	h.paused = append(h.paused, ps...)
}

// restartCoordinator SIGKILLs the coordinator, leaves it down for down, and
// starts it again with the same database, data directory and address.
func (h *harness) restartCoordinator(down time.Duration) func() {
	return func() {
		h.t.Helper()
		h.scrapeMetrics()
		began := time.Now()
		h.coord.kill()
		time.Sleep(down)
		h.startCoordinator()
		h.fault("kill-coordinator", "SIGKILL, down %v, ready again %v after the kill (run %d)", down,
			time.Since(began).Round(time.Millisecond), h.coordRuns)
	}
}

// restartPostgres restarts the cluster (a fast shutdown, then a start).
func (h *harness) restartPostgres() {
	h.t.Helper()
	d := h.pg.restart()
	h.fault("restart-postgres", "fast shutdown and start in %v", d.Round(time.Millisecond))
}

// progress counts ranges by state over both groups.
func (h *harness) progress() (done, failed int64, ordered map[lease.Lane]int64) {
	ctx, cancel := context.WithTimeout(h.t.Context(), 10*time.Second)
	defer cancel()
	lanes, err := h.store.Lanes(ctx, "")
	if err != nil {
		return -1, 0, nil // PostgreSQL restarting
	}
	ordered = map[lease.Lane]int64{}
	for _, l := range lanes {
		done += l.Ranges[lease.StateDone]
		failed += l.Ranges[lease.StateFailed]
		if l.Group == orderedGroup {
			ordered[l.Lane] = l.Ranges[lease.StateDone]
		}
	}
	return done, failed, ordered
}

// step is one fault, run once progress reaches at (a fraction of all ranges).
type step struct {
	at  float64
	run func()
}

// run drives the fleet until every range is done, injecting the faults.
func (h *harness) run(began time.Time, faults bool) {
	h.t.Helper()
	limit := began.Add(4 * time.Minute)
	if d, ok := h.t.Deadline(); ok && d.Add(-30*time.Second).Before(limit) {
		limit = d.Add(-30 * time.Second)
	}
	randomKill := func(n int) func() {
		return func() {
			for range n {
				ws := h.alive()
				h.killWorker(ws[h.rng.IntN(len(ws))], "random")
			}
		}
	}
	steps := []step{
		{0.04, randomKill(1)},
		{0.08, func() {
			var ws []*worker
			if lw, l, ok := h.waitLaneHolder(5 * time.Second); ok {
				ws = append(ws, lw)
				h.t.Logf("pausing lane holder %s mid-range on %s range %d (next %d of %d..%d)", lw.name, l.Range.Lane, l.Range.ID,
					l.Range.Next, l.Range.Start, l.Range.End)
			}
			if pw, ok := h.plainHolder(ws...); ok {
				ws = append(ws, pw)
			}
			if len(ws) > 0 {
				h.pauseWorkers(ws...)
			}
		}},
		{0.20, h.restartCoordinator(time.Second)},
		{0.28, func() {
			if w, l, ok := h.waitLaneHolder(5 * time.Second); ok {
				h.killWorker(w, fmt.Sprintf("targeted: holding %s lane range %d mid-range", l.Range.Lane, l.Range.ID))
				return
			}
			randomKill(1)()
		}},
		{0.38, h.restartPostgres},
		{0.48, randomKill(1)},
		{0.58, h.restartCoordinator(leaseTTL + time.Second)}, // every lease expires meanwhile
		{0.66, randomKill(2)},
		{0.75, randomKill(1)},
	}
	if !faults {
		steps = nil
	}
	lastDone, lastProgress, lastLog := int64(-1), time.Now(), time.Now()
	for {
		done, failed, ordered := h.progress()
		if time.Since(lastLog) >= 5*time.Second || done >= totalRanges {
			lastLog = time.Now()
			h.t.Logf("progress %d/%d ranges (ordered lanes done %v) at %v", done, totalRanges, ordered, time.Since(began).Round(time.Millisecond))
		}
		if done >= totalRanges {
			return
		}
		require.Zero(h.t, failed, "ranges failed")
		if done > lastDone {
			lastDone, lastProgress = done, time.Now()
		}
		if time.Now().After(limit) || time.Since(lastProgress) > 90*time.Second {
			h.diagnose()
			h.t.Fatalf("stuck: %d of %d ranges done (ordered lanes %v), the last progress %v ago",
				done, totalRanges, ordered, time.Since(lastProgress).Round(time.Second))
		}
		for len(steps) > 0 && done >= 0 && float64(done) >= steps[0].at*totalRanges {
			h.t.Logf("progress %d/%d ranges (ordered lanes done %v) at %v", done, totalRanges, ordered, time.Since(began).Round(time.Millisecond))
			steps[0].run()
			steps = steps[1:]
		}
		if h.coord.exited() {
			h.t.Fatalf("the coordinator exited by itself: %v\n%s", h.coord.err, tail(h.coord.log, 30))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// diagnose logs what is held and the tails of the logs.
func (h *harness) diagnose() {
	for node, ls := range h.held() {
		for _, l := range ls {
			h.t.Logf("held: %s %s range %d %s next %d of %d..%d token %d expires %v", node, l.Range.Group, l.Range.ID, l.Range.Lane,
				l.Range.Next, l.Range.Start, l.Range.End, l.Token, l.ExpiresAt)
		}
	}
	if lanes, err := h.store.Lanes(h.t.Context(), ""); err == nil {
		for _, l := range lanes {
			h.t.Logf("lane: %s %s holder %q token %d next %d ranges %v", l.Group, l.Lane, l.Holder, l.Token, l.Next, l.Ranges)
		}
	}
	h.t.Logf("coordinator log:\n%s", tail(h.coord.log, 20))
	for _, w := range h.alive() {
		h.t.Logf("%s log:\n%s", w.name, tail(w.p.log, 8))
	}
}
