package coordinator_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/coordinator"
	"github.com/edgeindex/edgeindex/lease"
)

// countingPrefetch counts the Service's kicks; its Notify never fires.
type countingPrefetch struct{ kicks atomic.Int64 }

func (p *countingPrefetch) Kick()                   { p.kicks.Add(1) }
func (p *countingPrefetch) Notify() <-chan struct{} { return make(chan struct{}) }
func (p *countingPrefetch) Stored()                 {}

// TestStreamsKickThePrefetcher: a grant does not wake the prefetcher, its
// range's stream does when it opens, so a range nobody streams costs no
// fetch (issue 21: half of serve's CPU went to chunks nobody read). Every
// way to a lease is tried: POST /v1/lease, a final batch's ?then=lease,
// and a lane's next range; each stream kicks once, even when its chunks
// are all stored (it moves the lookahead on).
func TestStreamsKickThePrefetcher(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			pf := &countingPrefetch{}
			h := newHarness(t, b.URL(t), func(c *coordinator.Config) { c.Prefetcher = pf })
			h.group("g", false, 1, 300, lease.LaneHistory)
			l := h.lease(h.token)
			path := fmt.Sprintf("/v1/ranges/%d", l.Range.ID)
			r := h.do("POST", path+"/batch?then=lease", h.token, l.Token, strings.NewReader(`{"from":1,"to":100,"headers":100,"items":[],"final":true}`))
			require.Equal(t, http.StatusOK, r.status, "%s", r.body)
			require.Contains(t, string(r.body), `"lease"`, "the answer hands the next range over")
			require.Zero(t, pf.kicks.Load(), "grants kick nothing")

			next := h.lease(h.token2)
			h.fill(next.Range, 25)
			r = h.do("GET", fmt.Sprintf("/v1/ranges/%d/stream", next.Range.ID), h.token2, next.Token, nil)
			require.Equal(t, http.StatusOK, r.status, "%s", r.body)
			require.Equal(t, int64(1), pf.kicks.Load(), "the stream kicked once, its chunks all stored")

			h.group("o", true, 1, 200, lease.LaneHistory)
			gl := h.laneGrant(h.token, lease.LaneHistory)
			require.NotZero(t, gl.Token)
			r = h.do("POST", fmt.Sprintf("/v1/groups/%d/next?lane=history", gl.Group.ID), h.token, gl.Token, nil)
			require.Equal(t, http.StatusOK, r.status, "%s", r.body)
			require.Equal(t, int64(1), pf.kicks.Load(), "a lane's next range kicks nothing")
		})
	}
}
