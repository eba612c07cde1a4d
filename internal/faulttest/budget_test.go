package faulttest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/connlease"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/nntp/nntptest"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// The budget test's workload: a group planned from the provider, history
// down to article 1, in ranges of budgetRange.
const (
	budgetGroup                              = "alt.binaries.budget"
	budgetArticles, budgetRange, budgetChunk = 40_000, 1_000, 100 // 40 ranges
	budgetRanges                             = budgetArticles / budgetRange
	budgetConns                              = 4
	budgetWorkers                            = 6
)

// Issue 19, deliverable 3: three coordinator processes on one PostgreSQL
// and one bucket, each serving --source nntp://...?conns=4, share an
// account of 4 connections on a server that refuses a fifth with 502 too
// many connections, while six workers index a group the coordinators plan
// from GROUP. One coordinator is SIGKILLed mid-way while it holds a slot;
// the others finish the work on the slots left (its lease may outlast the
// run: the takeover of a lease that ran out is connlease's
// TestConnectionBudgetTakeoverAfterExpiry). The server never refused a
// connection, never saw more than 4 at once, and every range is done.
func TestConnectionBudgetThreeCoordinators(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL, MinIO, three coordinators and six worker processes; skipped under -short")
	}
	began := time.Now()
	srv, err := nntptest.New(nntptest.Config{MaxConns: budgetConns, MaxConnsReply: 502, LineDelay: 20 * time.Microsecond,
		Groups: []nntptest.Group{{Name: budgetGroup, Lines: nntptest.Lines(budgetGroup, 1, budgetArticles)}}})
	require.NoError(t, err)
	defer srv.Close()

	h := newScaleOut(t, "budget", began)

	h.cli("group", "add", budgetGroup, "--range-size", fmt.Sprint(budgetRange), "--chunk-size", fmt.Sprint(budgetChunk),
		"--plan", "history")
	h.store, err = sqlstore.Open(t.Context(), h.pg.URL(), sqlstore.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { h.store.Close() })

	source := srv.URL() + fmt.Sprintf("?conns=%d", budgetConns)
	for i := range 3 {
		c := &scaleCoord{name: fmt.Sprintf("c%d", i+1), addr: fmt.Sprintf("127.0.0.1:%d", freePort(t)),
			data: filepath.Join(h.logs, fmt.Sprintf("data-c%d", i+1))}
		h.coords = append(h.coords, c)
		h.startBudget(c, source, scaleClaimTTL)
	}
	// One worker starts first, so that c3 is killed while the work is
	// young; the others join once it is: six start faster than the
	// workload takes to finish.
	startWorkers := func(from, to int) {
		for i := from; i < to; i++ {
			h.startWorker(i, strings.TrimSpace(h.cli("node", "add", fmt.Sprintf("w%02d", i+1))))
		}
	}
	startWorkers(0, 1)

	killed := false
	limit := began.Add(5 * time.Minute)
	if d, ok := t.Deadline(); ok && d.Add(-30*time.Second).Before(limit) {
		limit = d.Add(-30 * time.Second)
	}
	lastDone, lastProgress, lastLog := int64(-1), time.Now(), time.Now()
	for {
		lanes, err := h.store.Lanes(t.Context(), "")
		require.NoError(t, err)
		var done, leased, failed int64
		for _, l := range lanes {
			done += l.Ranges[lease.StateDone]
			leased += l.Ranges[lease.StateLeased]
			failed += l.Ranges[lease.StateFailed]
		}
		require.Zero(t, failed, "ranges failed")
		st := srv.Stats()
		require.Zero(t, st.Refused, "the server refused a connection")
		if time.Since(lastLog) >= 5*time.Second {
			lastLog = time.Now()
			slots, _ := h.store.Slots(t.Context())
			t.Logf("progress %d/%d ranges at %v; server: %d open (at most %d), %d accepted; %d slots held",
				done, budgetRanges, time.Since(began).Round(time.Millisecond), st.Open, st.MaxOpen, st.Accepted, len(slots))
		}
		// c3 dies mid-way: as soon as it is caught holding a slot, or
		// once workers are at work, before the last range is done.
		// Ranges finish in bursts, so waiting for a share of them done
		// may wait past the last.
		if !killed && done < budgetRanges {
			slots, err := h.store.Slots(t.Context())
			require.NoError(t, err)
			holds := slices.ContainsFunc(slots, func(s connlease.Lease) bool { return s.Holder == h.coords[2].name })
			if holds || leased+done >= 1 {
				t.Logf("SIGKILL c3 at %d/%d ranges, holding a slot: %t; slots held: %v", done, budgetRanges, holds, slots)
				h.kill(h.coords[2], 0)
				killed = true
				startWorkers(1, budgetWorkers)
			}
		}
		if done >= budgetRanges {
			break
		}
		if done > lastDone {
			lastDone, lastProgress = done, time.Now()
		}
		if time.Now().After(limit) || time.Since(lastProgress) > 90*time.Second {
			h.diagnose()
			t.Fatalf("stuck: %d of %d ranges done, the last progress %v ago", done, budgetRanges, time.Since(lastProgress).Round(time.Second))
		}
		for _, c := range h.coords {
			if !c.dead && c.p.exited() {
				t.Fatalf("coordinator %s exited by itself: %v\n%s", c.name, c.p.err, tail(c.p.log, 30))
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	st := srv.Stats()
	t.Logf("all %d ranges done %v after the start; the server accepted %d connections, at most %d at once, refused %d",
		budgetRanges, time.Since(began).Round(time.Millisecond), st.Accepted, st.MaxOpen, st.Refused)
	require.True(t, killed, "c3 was never killed before the last range was done")
	require.Zero(t, st.Refused, "the server refused a connection")
	require.LessOrEqual(t, st.MaxOpen, budgetConns)

	h.stop()
	require.Zero(t, srv.Stats().Refused, "the server refused a connection")
	// The coordinators that stopped gave their slots back; the killed one's
	// ran out or were taken over.
	out := h.cli("status")
	t.Logf("status after the run:\n%s", out)
}

// startBudget starts coordinator c on the NNTP source, sharing the
// database and the bucket, with claims living claimTTL (0: serve's
// default), and waits for /readyz.
func (h *scaleOut) startBudget(c *scaleCoord, source string, claimTTL time.Duration) {
	h.t.Helper()
	c.runs++
	args := []string{"serve", "--db", h.pg.URL(), "--data", c.data, "--storage", h.storage, "--addr", c.addr, "--source", source,
		"--id", c.name, "--poll", "1s", "--lease-ttl", leaseTTL.String(), "--releases=false"}
	if claimTTL > 0 {
		args = append(args, "--claim-ttl", claimTTL.String())
	}
	c.p = startProc(h.t, c.name, filepath.Join(h.logs, c.name+".log"), nil, nil, h.logs, h.coordBin, args...)
	deadline := time.Now().Add(60 * time.Second)
	for !ready(c.addr) {
		if c.p.exited() {
			h.t.Fatalf("coordinator %s exited: %v\n%s", c.name, c.p.err, tail(c.p.log, 30))
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("coordinator %s is not ready after 60 s\n%s", c.name, tail(c.p.log, 30))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop kills the workers, then stops each live coordinator with SIGTERM,
// failing the test when one does not exit within 20 s or reported a
// data race.
func (h *scaleOut) stop() {
	h.t.Helper()
	for _, w := range h.workers {
		w.kill()
	}
	for _, c := range h.coords {
		if c.dead {
			continue
		}
		require.NoError(h.t, c.p.signal(syscall.SIGTERM))
		if !c.p.wait(20 * time.Second) {
			h.t.Errorf("coordinator %s did not exit within 20 s of SIGTERM\n%s", c.name, tail(c.p.log, 20))
			c.p.kill()
		}
		if b, err := os.ReadFile(c.p.log); err == nil && strings.Contains(string(b), "WARNING: DATA RACE") {
			h.t.Errorf("coordinator %s reported a data race: see %s", c.name, c.p.log)
		}
	}
}
