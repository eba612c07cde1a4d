package faulttest

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/blobstore"
	"github.com/edgeindex/edgeindex/internal/miniotest"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// The scale-out workload: an unordered group and an ordered one with both
// lanes, smaller than the fault test's, so that the run stays within two
// minutes on two cores beside three coordinators and MinIO.
const (
	scalePlain   = "alt.binaries.scale.plain"
	scaleOrdered = "alt.binaries.scale.ordered"

	scalePlainArticles, scalePlainRange, scalePlainChunk = 120_000, 2_000, 1_000 // 60 ranges
	scaleHistoryEnd, scaleTailEnd                        = 12_000, 20_000        // history 1..12000, tail 12001..20000
	scaleOrderedRange, scaleOrderedChunk                 = 500, 100              // 24 + 16 ranges

	scaleRanges       = scalePlainArticles/scalePlainRange + scaleTailEnd/scaleOrderedRange
	scaleCoordinators = 3
	scaleWorkers      = 8
	// scaleClaimTTL is how long the chunks a killed coordinator had
	// claimed wait for another (15 s by default; shorter keeps the run
	// short, and a synthetic fetch takes milliseconds).
	scaleClaimTTL = 5 * time.Second
)

// scaleOut is the fleet of the scale-out test.
type scaleOut struct {
	t         *testing.T
	coordBin  string
	workerBin string
	pg        *pgCluster
	storage   string // the s3:// URL of the bucket the coordinators share
	logs      string
	coords    []*scaleCoord
	workers   []*proc
	store     *sqlstore.Store
	faults    []string
}

// scaleCoord is one coordinator: its address and data directory stay
// across restarts; nothing of the data directory is shared.
type scaleCoord struct {
	name string
	addr string
	data string
	p    *proc
	runs int
	dead bool // killed for good
}

// newScaleOut makes the harness of a test of several processes: a logs
// directory (kept when the test fails or EDGEINDEX_FAULTTEST_KEEP=1), a MinIO bucket,
// the coordinator and worker binaries built into it, and a PostgreSQL
// cluster. began is when the test started, for the log line.
func newScaleOut(t *testing.T, name string, began time.Time) *scaleOut {
	h := &scaleOut{t: t}
	logs, err := os.MkdirTemp("", "edgeindex-"+name+"-")
	require.NoError(t, err)
	h.logs = logs
	t.Cleanup(func() {
		if t.Failed() || os.Getenv(envKeep) == "1" {
			t.Logf("logs and data kept in %s", logs)
			return
		}
		os.RemoveAll(logs)
	})
	h.storage = miniotest.URL(t)
	h.coordBin, h.workerBin = buildBinaries(t, logs, os.Getenv(envRace) != "0")
	h.pg = newPGCluster(t)
	t.Logf("built the binaries, started PostgreSQL and MinIO in %v", time.Since(began).Round(time.Millisecond))
	return h
}

// Issue 12, deliverable 5: three coordinator processes on one PostgreSQL
// and one MinIO bucket, with no directory in common, and eight worker
// processes spread over them, each with the three as its failover list.
// While they index, one coordinator is SIGKILLed for good and another is
// SIGKILLed and started again. Then every range is done, its stored
// batches cover it exactly once, in the order they were stored (so no two
// holders ever wrote to one range at once), every result is in the feed
// exactly once, and every snapshot in the bucket is readable gzip, the
// lanes' current ones at the size the database records.
func TestScaleOut(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL, MinIO, three coordinators and eight worker processes; skipped under -short")
	}
	began := time.Now()
	h := newScaleOut(t, "scaleout", began)

	h.cli("group", "add", scalePlain, "--range-size", fmt.Sprint(scalePlainRange), "--chunk-size", fmt.Sprint(scalePlainChunk))
	h.cli("range", "add", scalePlain, "1", fmt.Sprint(scalePlainArticles))
	h.cli("group", "add", scaleOrdered, "--ordered", "--range-size", fmt.Sprint(scaleOrderedRange), "--chunk-size", fmt.Sprint(scaleOrderedChunk))
	h.cli("range", "add", scaleOrdered, "1", fmt.Sprint(scaleHistoryEnd))
	h.cli("range", "add", scaleOrdered, fmt.Sprint(scaleHistoryEnd+1), fmt.Sprint(scaleTailEnd), "--lane", "tail")
	var err error
	h.store, err = sqlstore.Open(t.Context(), h.pg.URL(), sqlstore.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { h.store.Close() })

	for i := range scaleCoordinators {
		c := &scaleCoord{name: fmt.Sprintf("c%d", i+1), addr: fmt.Sprintf("127.0.0.1:%d", freePort(t)),
			data: filepath.Join(h.logs, fmt.Sprintf("data-c%d", i+1))}
		h.coords = append(h.coords, c)
		h.start(c)
	}
	var tokens []string
	for i := range scaleWorkers {
		tokens = append(tokens, strings.TrimSpace(h.cli("node", "add", fmt.Sprintf("w%02d", i+1))))
	}
	for i, token := range tokens {
		h.startWorker(i, token)
	}

	steps := []step{
		{0.25, func() { h.kill(h.coords[2], 0) }},                                 // for good
		{0.50, func() { h.kill(h.coords[1], time.Second); h.start(h.coords[1]) }}, // and back
	}
	h.run(began, steps)
	t.Logf("all %d ranges done %v after the start", scaleRanges, time.Since(began).Round(time.Millisecond))

	for _, w := range h.workers {
		w.kill()
	}
	for _, c := range h.coords {
		if c.dead {
			continue
		}
		require.NoError(t, c.p.signal(syscall.SIGTERM))
		if !c.p.wait(20 * time.Second) {
			t.Errorf("coordinator %s did not exit within 20 s of SIGTERM\n%s", c.name, tail(c.p.log, 20))
			c.p.kill()
		} else if c.p.err != nil {
			t.Errorf("coordinator %s exited after SIGTERM with %v\n%s", c.name, c.p.err, tail(c.p.log, 20))
		}
	}
	h.verify()
	for _, f := range h.faults {
		t.Logf("fault: %s", f)
	}
	t.Logf("took %v", time.Since(began).Round(time.Millisecond))
}

// cli runs a coordinator command against the database and returns stdout.
func (h *scaleOut) cli(args ...string) string {
	h.t.Helper()
	cmd := exec.Command(h.coordBin, append(args, "--db", h.pg.URL(), "--data", filepath.Join(h.logs, "cli"))...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(h.t, err, "coordinator %s: %s", strings.Join(args, " "), stderr.String())
	return string(out)
}

// start starts coordinator c on its address and data directory, sharing
// the database and the bucket, and waits for /readyz.
func (h *scaleOut) start(c *scaleCoord) {
	h.t.Helper()
	c.runs++
	c.p = startProc(h.t, c.name, filepath.Join(h.logs, c.name+".log"), nil, nil, h.logs, h.coordBin, "serve",
		"--db", h.pg.URL(), "--data", c.data, "--storage", h.storage, "--addr", c.addr, "--source", "synthetic",
		"--lease-ttl", leaseTTL.String(), "--claim-ttl", scaleClaimTTL.String(), "--releases=false")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c.p.exited() {
			h.t.Fatalf("coordinator %s exited: %v\n%s", c.name, c.p.err, tail(c.p.log, 30))
		}
		if ready(c.addr) {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("coordinator %s is not ready after 30 s\n%s", c.name, tail(c.p.log, 30))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ready reports whether the coordinator at addr answers /readyz with 200.
func ready(addr string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// kill SIGKILLs coordinator c; down 0 leaves it dead for good, else the
// caller starts it again after waiting down.
func (h *scaleOut) kill(c *scaleCoord, down time.Duration) {
	h.t.Helper()
	c.p.kill()
	if down == 0 {
		c.dead = true
		h.faults = append(h.faults, fmt.Sprintf("SIGKILL %s for good", c.name))
		return
	}
	time.Sleep(down)
	h.faults = append(h.faults, fmt.Sprintf("SIGKILL %s, started again after %v (run %d)", c.name, down, c.runs+1))
}

// startWorker starts worker i, node w<i+1> of token, its failover list
// the coordinators from the i-th on, round.
func (h *scaleOut) startWorker(i int, token string) {
	h.t.Helper()
	name := fmt.Sprintf("w%02d", i+1)
	var urls []string
	for j := range h.coords {
		urls = append(urls, "http://"+h.coords[(i+j)%len(h.coords)].addr)
	}
	h.workers = append(h.workers, startProc(h.t, name, filepath.Join(h.logs, name+".log"),
		[]string{"EDGEINDEX_NODE_TOKEN=" + token, "EDGEINDEX_COORDINATOR=" + strings.Join(urls, ",")}, nil, h.logs,
		h.workerBin, "--lanes", "history,tail"))
}

// run drives the fleet until every range is done, running the steps as
// progress reaches them.
func (h *scaleOut) run(began time.Time, steps []step) {
	h.t.Helper()
	limit := began.Add(4 * time.Minute)
	if d, ok := h.t.Deadline(); ok && d.Add(-30*time.Second).Before(limit) {
		limit = d.Add(-30 * time.Second)
	}
	lastDone, lastProgress, lastLog := int64(-1), time.Now(), time.Now()
	for {
		lanes, err := h.store.Lanes(h.t.Context(), "")
		require.NoError(h.t, err)
		var done, failed int64
		for _, l := range lanes {
			done += l.Ranges[lease.StateDone]
			failed += l.Ranges[lease.StateFailed]
		}
		if time.Since(lastLog) >= 5*time.Second || done >= scaleRanges {
			lastLog = time.Now()
			h.t.Logf("progress %d/%d ranges at %v", done, scaleRanges, time.Since(began).Round(time.Millisecond))
		}
		if done >= scaleRanges {
			return
		}
		require.Zero(h.t, failed, "ranges failed")
		if done > lastDone {
			lastDone, lastProgress = done, time.Now()
		}
		if time.Now().After(limit) || time.Since(lastProgress) > 60*time.Second {
			h.diagnose()
			h.t.Fatalf("stuck: %d of %d ranges done, the last progress %v ago", done, scaleRanges, time.Since(lastProgress).Round(time.Second))
		}
		for len(steps) > 0 && float64(done) >= steps[0].at*scaleRanges {
			h.t.Logf("progress %d/%d ranges at %v", done, scaleRanges, time.Since(began).Round(time.Millisecond))
			steps[0].run()
			steps = steps[1:]
		}
		for _, c := range h.coords {
			if !c.dead && c.p.exited() {
				h.t.Fatalf("coordinator %s exited by itself: %v\n%s", c.name, c.p.err, tail(c.p.log, 30))
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// diagnose logs the tails of the logs.
func (h *scaleOut) diagnose() {
	for _, c := range h.coords {
		h.t.Logf("%s log:\n%s", c.name, tail(c.p.log, 15))
	}
	for _, w := range h.workers {
		h.t.Logf("%s log:\n%s", w.name, tail(w.log, 8))
	}
}

// verify checks what the fleet stored (checkStored), that the batches of
// each range were stored in article order, that workers failed over, that
// no coordinator saw a data race, and that every snapshot is readable.
func (h *scaleOut) verify() {
	t := h.t
	w := workload{articles: map[string]int64{scalePlain: scalePlainArticles, scaleOrdered: scaleTailEnd}, ranges: scaleRanges}
	perRange := checkStored(t, h.store, w, func(string) string { return "" })

	// No range was held by two at once: its batches, in the order they
	// were stored, follow each other in article order, whoever stored
	// them (fencing lets only the current holder store, from next).
	handovers := 0
	for id, bs := range perRange {
		slices.SortFunc(bs, func(a, b record) int { return a.At.Compare(b.At) })
		for i := 1; i < len(bs); i++ {
			require.Equal(t, bs[i-1].To+1, bs[i].From, "range %d: batch %d..%d by %s stored after %d..%d by %s: %s",
				id, bs[i].From, bs[i].To, bs[i].node, bs[i-1].From, bs[i-1].To, bs[i-1].node, describe(bs))
			if bs[i].node != bs[i-1].node {
				handovers++
			}
		}
	}
	moved := 0
	for _, p := range h.workers {
		moved += strings.Count(p.logFrom(0), "moving to the next coordinator")
	}
	require.NotZero(t, moved, "some worker moved to another coordinator")
	t.Logf("verified: the batches of every range were stored in article order; %d ranges changed hands mid-range; workers moved to another coordinator %d times",
		handovers, moved)

	for _, c := range h.coords {
		if b, err := os.ReadFile(c.p.log); err == nil && strings.Contains(string(b), "WARNING: DATA RACE") {
			t.Errorf("coordinator %s reported a data race: see %s", c.name, c.p.log)
		}
	}
	h.verifySnapshots()
}

// verifySnapshots reads every snapshot in the bucket: each is whole gzip,
// and each lane of the ordered group has a current one, stored at the
// size the database records.
func (h *scaleOut) verifySnapshots() {
	t := h.t
	ctx := t.Context()
	root, err := blobstore.OpenURL(ctx, h.storage)
	require.NoError(t, err)
	defer root.Close()
	snaps, err := blobstore.Sub(root, "snapshots")
	require.NoError(t, err)
	var keys []string
	require.NoError(t, snaps.List(ctx, "", func(info blobstore.Info) error {
		keys = append(keys, info.Key)
		return nil
	}))
	for _, k := range keys {
		_, err := readGzip(ctx, snaps, k)
		require.NoError(t, err, "snapshot %s", k)
	}
	var current []struct {
		Lane string `db:"lane"`
		File string `db:"snap_file"`
		Size int64  `db:"snap_size"`
	}
	require.NoError(t, h.store.DB().SelectContext(ctx, &current,
		`SELECT l.lane, l.snap_file, l.snap_size FROM lanes l JOIN groups g ON g.id = l.group_id WHERE g.name = $1 AND l.snap_file IS NOT NULL`,
		scaleOrdered))
	require.Len(t, current, 2, "each lane has a snapshot")
	for _, c := range current {
		n, err := readGzip(ctx, snaps, c.File)
		require.NoError(t, err, "the %s lane's current snapshot %s", c.Lane, c.File)
		require.Equal(t, c.Size, n, "the %s lane's current snapshot %s", c.Lane, c.File)
	}
	t.Logf("verified: %d snapshots in the bucket, all whole gzip; both lanes' current ones at their recorded sizes", len(keys))
}

// readGzip reads a blob whole, as gzip, and returns its size.
func readGzip(ctx context.Context, s blobstore.Store, key string) (int64, error) {
	rc, size, err := s.Open(ctx, key)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	cr := &countingReader{r: rc}
	zr, err := gzip.NewReader(cr)
	if err == nil {
		_, err = io.Copy(io.Discard, zr)
	}
	if err == nil && cr.n != size {
		err = fmt.Errorf("read %d bytes of %d", cr.n, size)
	}
	return size, err
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
