package coordinator_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
)

// A final batch stores the range's last articles and finishes it in one
// call: the range is done and its spool chunks dropped. Its retry says done
// again; one short of the end is 400; finish after it is 409.
func TestFinalBatch(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, b.URL(t), nil)
			h.group("g", false, 1, 100, lease.LaneHistory)
			l := h.lease(h.token)
			h.fill(l.Range, 25)
			path := fmt.Sprintf("/v1/ranges/%d/batch", l.Range.ID)

			r := h.do("POST", path, h.token, l.Token, strings.NewReader(`{"from":1,"to":50,"headers":50,"items":[],"final":true}`))
			require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
			require.Contains(t, r.errorText(t), "final batch must reach the range's end 100")

			r = h.do("POST", path, h.token, l.Token, strings.NewReader(`{"from":1,"to":50,"headers":50,"items":[]}`))
			require.Equal(t, http.StatusOK, r.status, "%s", r.body)
			require.JSONEq(t, `{"next":51,"duplicate":false}`, string(r.body), "an answer without final is as before")
			final := `{"from":51,"to":100,"headers":50,"items":[{"key":"k","value":1}],"final":true}`
			r = h.do("POST", path, h.token, l.Token, strings.NewReader(final))
			require.Equal(t, http.StatusOK, r.status, "%s", r.body)
			require.JSONEq(t, `{"next":101,"duplicate":false,"done":true}`, string(r.body))
			rg, err := h.store.Range(t.Context(), l.Range.ID)
			require.NoError(t, err)
			require.Equal(t, lease.StateDone, rg.State)
			require.Zero(t, h.spool.Size(), "the range's chunks are dropped")

			r = h.do("POST", path, h.token, l.Token, strings.NewReader(final))
			require.Equal(t, http.StatusOK, r.status, "%s", r.body)
			require.JSONEq(t, `{"next":101,"duplicate":true,"done":true}`, string(r.body), "a retry whose first answer was lost")
			r = h.do("POST", path, h.token, l.Token, strings.NewReader(`{"from":51,"to":100,"headers":50,"items":[]}`))
			require.Equal(t, http.StatusConflict, r.status, "a batch that is not final, as before")
			r = h.do("POST", fmt.Sprintf("/v1/ranges/%d/finish", l.Range.ID), h.token, l.Token, nil)
			require.Equal(t, http.StatusConflict, r.status, "finished already")
			r = h.do("POST", path, h.token, l.Token, strings.NewReader(`{"from":51,"to":100,"headers":50,"items":[],"final":1}`))
			require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
			require.Contains(t, r.errorText(t), "final must be a boolean")
		})
	}
}

// A final batch posted with ?then=lease is answered with the sender's next
// lease, as POST /v1/lease would grant it; a batch that does not finish its
// range, or with no work left, is answered as before; another value of
// then is 400 and stores nothing.
func TestFinalBatchThenLease(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, b.URL(t), nil)
			h.group("g", false, 1, 200, lease.LaneHistory) // two ranges of 100
			l := h.lease(h.token)
			path := fmt.Sprintf("/v1/ranges/%d/batch", l.Range.ID)

			r := h.do("POST", path+"?then=lease2", h.token, l.Token, strings.NewReader(`{"from":1,"to":100,"headers":100,"items":[],"final":true}`))
			require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
			rg, err := h.store.Range(t.Context(), l.Range.ID)
			require.NoError(t, err)
			require.Equal(t, lease.StateLeased, rg.State, "nothing stored")
			require.Equal(t, int64(1), rg.Next)

			r = h.do("POST", path+"?then=lease", h.token, l.Token, strings.NewReader(`{"from":1,"to":50,"headers":50,"items":[]}`))
			require.Equal(t, http.StatusOK, r.status, "%s", r.body)
			require.JSONEq(t, `{"next":51,"duplicate":false}`, string(r.body), "not final: no lease")

			r = h.do("POST", path+"?then=lease", h.token, l.Token, strings.NewReader(`{"from":51,"to":100,"headers":50,"items":[],"final":true}`))
			require.Equal(t, http.StatusOK, r.status, "%s", r.body)
			var reply api.BatchReply
			require.NoError(t, json.Unmarshal(r.body, &reply))
			require.True(t, reply.Done)
			require.NotNil(t, reply.Lease, "%s", r.body)
			next := *reply.Lease
			require.NotEqual(t, l.Range.ID, next.Range.ID)
			require.Equal(t, int64(101), next.Range.Start)
			held, err := h.store.Check(t.Context(), next.Range.ID, lease.Fence{Node: "edge-1", Token: next.Token})
			require.NoError(t, err, "the lease handed over is the sender's")
			require.Equal(t, next.Token, held.Token)

			path = fmt.Sprintf("/v1/ranges/%d/batch", next.Range.ID)
			r = h.do("POST", path+"?then=lease", h.token, next.Token, strings.NewReader(`{"from":101,"to":200,"headers":100,"items":[],"final":true}`))
			require.Equal(t, http.StatusOK, r.status, "%s", r.body)
			require.JSONEq(t, `{"next":201,"duplicate":false,"done":true}`, string(r.body), "no work left: no lease")
		})
	}
}

// A body of garbage posted with ?then=lease is 400 like any bad body: nothing
// is stored and nothing granted, so the other range stays pending.
func TestFinalBatchThenLeaseGarbage(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, b.URL(t), nil)
			h.group("g", false, 1, 200, lease.LaneHistory) // two ranges of 100
			l := h.lease(h.token)
			path := fmt.Sprintf("/v1/ranges/%d/batch?then=lease", l.Range.ID)
			for _, body := range []string{`{"from":1,"to":100,"final":tru`, "\x00\xff garbage", `{"from":1,"to":100,"headers":100,"items":[],"final":true,"x":1}`} {
				r := h.do("POST", path, h.token, l.Token, strings.NewReader(body))
				require.Equal(t, http.StatusBadRequest, r.status, "%q: %s", body, r.body)
			}
			rs, err := h.store.Ranges(t.Context(), grouplease.RangeFilter{Group: "g"})
			require.NoError(t, err)
			require.Len(t, rs, 2)
			for _, rg := range rs {
				if rg.ID == l.Range.ID {
					require.Equal(t, lease.StateLeased, rg.State)
					require.Equal(t, int64(1), rg.Next, "nothing stored")
				} else {
					require.Equal(t, lease.StatePending, rg.State, "nothing granted")
				}
			}
		})
	}
}
