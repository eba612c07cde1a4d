package coordinator_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

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
