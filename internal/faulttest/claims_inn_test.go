package faulttest

import (
	"fmt"
	"io"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/internal/inntest"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// The takeover test's workload: issue 28's run.
const (
	takeoverGroup                                = "alt.binaries.takeover"
	takeoverArticles, takeoverRange, takeoverChk = 6000, 200, 50 // 30 ranges
	takeoverRanges                               = takeoverArticles / takeoverRange
	takeoverConns, takeoverWorkers               = 4, 4
)

// Issue 28, part 4: three coordinator processes on one PostgreSQL and
// one bucket read a group from a real INN behind a proxy that refuses a
// fifth connection (and holds each command 150 ms, a provider's
// distance), sharing a budget of 4, while 4 workers index 30
// ranges of 200 articles. One coordinator is SIGKILLed 3 s in, with its
// chunk claims and connection slots held. Its claims live the default
// --claim-ttl (15 s), renewed while their fetches run, so the others take
// its chunks within seconds: every range is done within 90 s, the proxy
// never refused a connection, and no article was counted twice; while
// they wait, coordinator status lists them as c3's, silent, and when
// they are taken over.
func TestTakeoverAfterKillINN(t *testing.T) {
	if testing.Short() {
		t.Skip("starts INN, PostgreSQL, MinIO, three coordinators and four workers; skipped under -short")
	}
	began := time.Now()
	inn := inntest.Start(t)
	inn.NewGroup(t, takeoverGroup)
	inn.Post(t, inntest.Generate(takeoverArticles, takeoverGroup))
	t.Logf("INN holds %d articles after %v", takeoverArticles, time.Since(began).Round(time.Millisecond))
	px := startBudgetProxy(t, inn.Addr(), takeoverConns)

	h := newScaleOut(t, "takeover", began)
	h.cli("group", "add", takeoverGroup, "--range-size", fmt.Sprint(takeoverRange), "--chunk-size", fmt.Sprint(takeoverChk),
		"--plan", "history")
	var err error
	h.store, err = sqlstore.Open(t.Context(), h.pg.URL(), sqlstore.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { h.store.Close() })
	source := "nntp://" + px.addr() + fmt.Sprintf("?conns=%d", takeoverConns)
	for i := range 3 {
		c := &scaleCoord{name: fmt.Sprintf("c%d", i+1), addr: fmt.Sprintf("127.0.0.1:%d", freePort(t)),
			data: filepath.Join(h.logs, fmt.Sprintf("data-c%d", i+1))}
		h.coords = append(h.coords, c)
		h.startBudget(c, source, 0) // --claim-ttl: serve's default
	}
	tokens := make([]string, takeoverWorkers)
	for i := range tokens {
		tokens[i] = strings.TrimSpace(h.cli("node", "add", fmt.Sprintf("w%02d", i+1)))
	}
	start := time.Now()
	for i, tok := range tokens {
		h.startWorker(i, tok)
	}
	killed, killedAt, killTime, statusSeen := false, int64(0), time.Time{}, false
	for {
		lanes, err := h.store.Lanes(t.Context(), "")
		require.NoError(t, err)
		var done, failed, headers int64
		for _, l := range lanes {
			done += l.Ranges[lease.StateDone]
			failed += l.Ranges[lease.StateFailed]
			headers += l.Headers
		}
		require.Zero(t, failed, "ranges failed")
		require.Zero(t, px.refused.Load(), "the proxy refused a connection")
		// c3 dies as soon as it is caught fetching (its claims held), or
		// 3 s in.
		if !killed {
			claims, err := h.store.FetchingClaims(t.Context(), 100)
			require.NoError(t, err)
			held := slices.ContainsFunc(claims, func(c sqlstore.FetchingClaim) bool { return c.Owner == h.coords[2].name })
			if held || time.Since(start) >= 3*time.Second {
				t.Logf("SIGKILL c3 at %d/%d ranges, %v in, holding a claim: %t (%d claims fetching)",
					done, takeoverRanges, time.Since(start).Round(time.Millisecond), held, len(claims))
				h.kill(h.coords[2], 0)
				killed, killedAt, killTime = true, done, time.Now()
			}
		}
		// 9 s after: its claims have gone unrenewed past a third of the
		// TTL (and the grace), and are not taken over before 15 s.
		if killed && !statusSeen && time.Since(killTime) >= 9*time.Second {
			out := h.cli("status")
			t.Logf("status 9 s after the kill:\n%s", out)
			require.Contains(t, out, "Claims whose coordinator stopped renewing them")
			require.Regexp(t, `\sc3\s+\d+s\s+\d+s`, out, "c3's claims, silent, with when they are taken over")
			statusSeen = true
		}
		if done >= takeoverRanges {
			t.Logf("all %d ranges done %v after the workers started (%v in all); %d headers; the proxy took %d connections, at most %d at once",
				takeoverRanges, time.Since(start).Round(time.Millisecond), time.Since(began).Round(time.Millisecond),
				headers, px.accepted.Load(), px.maxOpen.Load())
			require.Equal(t, int64(takeoverArticles), headers, "every article counted once")
			break
		}
		if time.Since(start) > 90*time.Second {
			h.diagnose()
			t.Logf("status:\n%s", h.cli("status"))
			t.Fatalf("%d of %d ranges done 90 s after the workers started", done, takeoverRanges)
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.True(t, killed)
	require.True(t, statusSeen, "the run outlasted the claims of c3, which status showed")
	require.Less(t, killedAt, int64(takeoverRanges), "c3 was killed before the work was done")
	require.LessOrEqual(t, px.maxOpen.Load(), int64(takeoverConns))
	h.stop()
}

// budgetProxy carries connections to an NNTP server, at most max at
// once: one past that is answered 502, as a provider answers a
// connection over an account's limit, and counted.
type budgetProxy struct {
	ln                net.Listener
	max               int64
	open, maxOpen     atomic.Int64
	accepted, refused atomic.Int64
	wg                sync.WaitGroup
	mu                sync.Mutex
	conns             []net.Conn
}

func startBudgetProxy(t *testing.T, target string, max int) *budgetProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &budgetProxy{ln: ln, max: int64(max)}
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n := p.open.Add(1)
			if n > p.max {
				p.open.Add(-1)
				p.refused.Add(1)
				io.WriteString(c, "502 too many connections\r\n")
				c.Close()
				continue
			}
			p.accepted.Add(1)
			for m := p.maxOpen.Load(); n > m && !p.maxOpen.CompareAndSwap(m, n); m = p.maxOpen.Load() {
			}
			p.wg.Go(func() { p.carry(c, target) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

// providerLatency is how long the proxy holds each command on its way to
// INN: a provider's distance, so that a fetch (and its claim) lasts long
// enough for the kill to land during one, as it does on a real network.
const providerLatency = 150 * time.Millisecond

// delayCopy copies src to dst as io.Copy does, each read held d first.
func delayCopy(dst io.Writer, src io.Reader, d time.Duration) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			time.Sleep(d)
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *budgetProxy) addr() string { return p.ln.Addr().String() }

// carry copies c to and from a connection to target until either ends.
// The connection counts as closed once either side ended, as a provider
// counts one closed once it answered QUIT.
func (p *budgetProxy) carry(c net.Conn, target string) {
	var once sync.Once
	closed := func() { once.Do(func() { p.open.Add(-1) }) }
	defer closed()
	s, err := net.Dial("tcp", target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, c, s)
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { delayCopy(s, c, providerLatency); done <- struct{}{} }()
	go func() { io.Copy(c, s); done <- struct{}{} }()
	<-done
	closed()
	c.Close()
	s.Close()
	<-done
}
