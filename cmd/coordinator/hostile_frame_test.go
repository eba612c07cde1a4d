package main

import (
	"bytes"
	"encoding/hex"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/nntp/nntptest"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// bigLines are group's overview lines from to to, as nntptest.Lines, with
// pad bytes of random hex put at the front of each subject: lines that
// gzip to about half their size, so a chunk of them stays large.
func bigLines(group string, from, to int64, pad int) [][]byte {
	rng := rand.New(rand.NewPCG(uint64(from), uint64(to)))
	raw := make([]byte, pad/2)
	out := make([][]byte, 0, to-from+1)
	for n := from; n <= to; n++ {
		line := nntptest.Line(group, n)
		tab := bytes.IndexByte(line, '\t')
		for i := range raw {
			raw[i] = byte(rng.Uint32())
		}
		big := make([]byte, 0, len(line)+pad+1)
		big = append(big, line[:tab+1]...)
		big = hex.AppendEncode(big, raw)
		big = append(big, ' ')
		big = append(big, line[tab+1:]...)
		out = append(out, big)
	}
	return out
}

// TestHostileOversizedFrame (defect 3): a group whose chunks are over the
// workers' frame limit, though under the source's chunk bound, so the
// coordinator stores and streams them. Each worker that cannot take such a
// frame reports its chunk corrupt rather than giving the range back: the
// range counts an attempt each time and fails after its tries, status says
// so, and meanwhile (attempted ranges going behind healthy ones) the other
// group, and the big group's own healthy ranges, are indexed in full with
// nothing counted lost.
func TestHostileOversizedFrame(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, db string) {
		// alt.big's articles 101..200 carry about 4 KB of subject each: a
		// 50-article chunk is about 200 KB, 100 KB gzipped, over the
		// workers' 64 KiB frame limit; its other chunks are a few KB.
		big := nntptest.Lines("alt.big", 1, 100)
		big = append(big, bigLines("alt.big", 101, 200, 4096)...)
		big = append(big, nntptest.Lines("alt.big", 201, 300)...)
		h := newHostile(t, db, nntptest.Config{Groups: []nntptest.Group{
			{Name: "alt.big", Lines: big},
			{Name: "alt.ok", Lines: nntptest.Lines("alt.ok", 1, 2000)},
		}})
		h.maxFrame = 64 << 10
		h.mustCLI("group", "add", "alt.big", "--range-size", "100", "--chunk-size", "50", "--plan", "tail,history")
		h.mustCLI("group", "add", "alt.ok", "--range-size", "500", "--chunk-size", "100", "--plan", "tail,history")
		h.start()
		h.workers(2)

		bad := func(r lease.Range) bool { return r.Start <= 200 && r.End >= 101 }
		settled := func() bool {
			if h.done("alt.ok") != 4 || h.plan("alt.ok").Lag != 0 {
				return false
			}
			rs := h.ranges("alt.big")
			if len(rs) == 0 {
				return false
			}
			for _, r := range rs {
				want := lease.StateDone
				if bad(r) {
					want = lease.StateFailed
				}
				if r.State != want {
					return false
				}
			}
			return true
		}
		if !assert.Eventually(t, settled, 60*time.Second, 20*time.Millisecond,
			"alt.ok indexed in full and alt.big's oversized ranges failed") {
			t.Fatalf("alt.ok: %d of 4 ranges done; alt.big: %+v", h.done("alt.ok"), h.ranges("alt.big"))
		}

		var failed int64
		for _, r := range h.ranges("alt.big") {
			if !bad(r) {
				continue
			}
			failed++
			require.Equal(t, sqlstore.DefaultMaxAttempts, r.Attempts, "range %d-%d: a corrupt report per try", r.Start, r.End)
			require.Contains(t, r.Reason, "reported corrupt by hostile-edge")
		}
		require.Positive(t, failed)
		for _, g := range []string{"alt.ok", "alt.big"} {
			require.Zero(t, h.plan(g).Missing.Lost, "%s: nothing counted lost", g)
		}
		require.Equal(t, int64(2000), h.plan("alt.ok").High)

		// status counts the failed ranges on alt.big's lanes.
		var shown float64
		for _, l := range h.statusJSON()["lanes"].([]any) {
			lane := l.(map[string]any)
			if lane["group"] != "alt.big" {
				continue
			}
			if n, ok := lane["ranges"].(map[string]any)["failed"].(float64); ok {
				shown += n
			}
		}
		require.Equal(t, float64(failed), shown, "status shows the failed ranges")
	})
}
