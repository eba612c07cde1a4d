package coordinator_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
)

// leases calls POST /v1/leases?max=n and returns what it granted.
func (h *harness) leases(token string, n int) []api.Lease {
	h.t.Helper()
	r := h.do("POST", fmt.Sprintf("/v1/leases?max=%d", n), token, 0, nil)
	require.Equal(h.t, http.StatusOK, r.status, "%s", r.body)
	var ans api.LeasesReply
	require.NoError(h.t, json.Unmarshal(r.body, &ans))
	require.NotNil(h.t, ans.Leases, "an empty list, not null: %s", r.body)
	return ans.Leases
}

// POST /v1/leases grants up to max ranges at once, each with its own token,
// in the order POST /v1/lease grants them, and an empty list when there is
// no work; a max out of bounds is 400 and grants nothing.
func TestLeases(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, url func(testing.TB) string) {
		h := newHarness(t, url(t), nil)
		h.group("g", false, 1, 500, lease.LaneHistory) // five ranges of 100
		for _, q := range []string{"max=0", "max=-1", "max=257", "max=x"} {
			r := h.do("POST", "/v1/leases?"+q, h.token, 0, nil)
			require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", q, r.body)
		}
		ranges, err := h.store.Ranges(t.Context(), grouplease.RangeFilter{})
		require.NoError(t, err)
		for _, rg := range ranges {
			require.Equal(t, lease.StatePending, rg.State, "a refused call grants nothing")
		}

		got := h.leases(h.token, 3)
		require.Len(t, got, 3)
		ids := map[int64]bool{}
		for _, l := range got {
			require.Positive(t, l.Token)
			require.Equal(t, lease.StateLeased, l.Range.State)
			ids[l.Range.ID] = true
		}
		require.Len(t, ids, 3, "three different ranges")
		require.Len(t, h.leases(h.token2, 3), 2, "what is left")
		require.Empty(t, h.leases(h.token, 3), "no work")
		r := h.do("POST", "/v1/leases", h.token, 0, nil)
		require.Equal(t, http.StatusOK, r.status)
		require.JSONEq(t, `{"leases":[]}`, string(r.body), "no max is one, and no work an empty list")
	})
}

// POST /v1/batches stores each entry under its own fence, as its own call
// would: a stored batch, a duplicate, a lost lease, a gap and a batch past
// its range's end each get their own answer, and only the stored ones
// change anything. With ?then=lease each entry that finishes its range
// carries a lease. A malformed body stores nothing.
func TestBatches(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, url func(testing.TB) string) {
		h := newHarness(t, url(t), nil)
		h.group("g", false, 1, 800, lease.LaneHistory) // eight ranges of 100
		ls := h.leases(h.token, 5)
		require.Len(t, ls, 5)
		entry := func(l api.Lease, token int64, from, to int64, final bool) string {
			return fmt.Sprintf(`{"range":%d,"token":%d,"batch":{"from":%d,"to":%d,"headers":0,"items":[{"key":"k%d","value":1}],"final":%t}}`,
				l.Range.ID, token, from, to, l.Range.ID, final)
		}
		s := func(l api.Lease, n int64) int64 { return l.Range.Start + n }

		// A malformed entry: nothing of the call is stored.
		bad := `{"batches":[` + entry(ls[0], ls[0].Token, s(ls[0], 0), s(ls[0], 99), true) + `,` +
			entry(ls[1], ls[1].Token, s(ls[1], 9), s(ls[1], 0), false) + `]}`
		r := h.do("POST", "/v1/batches?then=lease", h.token, 0, strings.NewReader(bad))
		require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
		require.Contains(t, r.errorText(t), "batches[1].batch: from")
		rg, err := h.store.Range(t.Context(), ls[0].Range.ID)
		require.NoError(t, err)
		require.Equal(t, lease.StateLeased, rg.State, "the good entry of a bad call is not stored")
		r = h.do("POST", "/v1/batches?then=now", h.token, 0, strings.NewReader(bad))
		require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)

		// ls[1] gets a first batch now, so that its retry is a duplicate below.
		r = h.do("POST", "/v1/batches", h.token, 0, strings.NewReader(`{"batches":[`+entry(ls[1], ls[1].Token, s(ls[1], 0), s(ls[1], 9), false)+`]}`))
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		require.JSONEq(t, fmt.Sprintf(`{"results":[{"range":%d,"next":%d,"duplicate":false}]}`, ls[1].Range.ID, s(ls[1], 10)), string(r.body))

		call := `{"batches":[` + strings.Join([]string{
			entry(ls[0], ls[0].Token, s(ls[0], 0), s(ls[0], 99), true),   // stored, finishes its range
			entry(ls[1], ls[1].Token, s(ls[1], 0), s(ls[1], 9), false),   // a duplicate
			entry(ls[2], ls[2].Token+1, s(ls[2], 0), s(ls[2], 99), true), // not its token: lost
			entry(ls[3], ls[3].Token, s(ls[3], 50), s(ls[3], 99), true),  // a gap
			entry(ls[4], ls[4].Token, s(ls[4], 0), s(ls[4], 100), false), // past its end
		}, ",") + `]}`
		r = h.do("POST", "/v1/batches?then=lease", h.token, 0, strings.NewReader(call))
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var ans api.BatchesReply
		require.NoError(t, json.Unmarshal(r.body, &ans))
		require.Len(t, ans.Results, 5)
		for i, res := range ans.Results {
			require.Equal(t, ls[i].Range.ID, res.Range, "in the order posted")
		}
		require.NoError(t, ans.Results[0].Err())
		require.True(t, ans.Results[0].Done)
		require.NotNil(t, ans.Results[0].Lease, "the finished range hands over the next")
		require.NoError(t, ans.Results[1].Err())
		require.True(t, ans.Results[1].Duplicate)
		require.Nil(t, ans.Results[1].Lease)
		require.ErrorIs(t, ans.Results[2].Err(), api.ErrLeaseLost)
		require.Equal(t, api.CodeLeaseLost, ans.Results[2].Code)
		require.Nil(t, ans.Results[2].BatchReply)
		require.ErrorIs(t, ans.Results[3].Err(), api.ErrConflict)
		require.NotErrorIs(t, ans.Results[3].Err(), api.ErrLeaseLost)
		require.ErrorIs(t, ans.Results[4].Err(), api.ErrInvalid)

		want := []lease.State{lease.StateDone, lease.StateLeased, lease.StateLeased, lease.StateLeased, lease.StateLeased}
		wantNext := []int64{s(ls[0], 100), s(ls[1], 10), s(ls[2], 0), s(ls[3], 0), s(ls[4], 0)}
		for i, l := range ls {
			rg, err := h.store.Range(t.Context(), l.Range.ID)
			require.NoError(t, err)
			require.Equal(t, want[i], rg.State, "range %d", i)
			require.Equal(t, wantNext[i], rg.Next, "range %d", i)
		}
		next := *ans.Results[0].Lease
		ans = api.BatchesReply{}
		rg, err = h.store.Range(t.Context(), next.Range.ID)
		require.NoError(t, err)
		require.Equal(t, lease.StateLeased, rg.State)

		// The same call again, as a worker whose answer was lost sends
		// it: the finished entry is a duplicate, done, and hands over
		// another range (the first one expires, as with POST
		// /v1/ranges/{id}/batch).
		r = h.do("POST", "/v1/batches?then=lease", h.token, 0, strings.NewReader(call))
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		require.NoError(t, json.Unmarshal(r.body, &ans))
		require.Len(t, ans.Results, 5)
		require.True(t, ans.Results[0].Duplicate)
		require.True(t, ans.Results[0].Done)
		require.NotNil(t, ans.Results[0].Lease)
		require.NotEqual(t, next.Range.ID, ans.Results[0].Lease.Range.ID, "first %+v then %+v", next, ans.Results[0].Lease)

		ans = api.BatchesReply{}

		// Another node's tokens are not its own.
		r = h.do("POST", "/v1/batches", h.token2, 0, strings.NewReader(`{"batches":[`+entry(ls[3], ls[3].Token, s(ls[3], 0), s(ls[3], 99), true)+`]}`))
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		require.NoError(t, json.Unmarshal(r.body, &ans))
		require.ErrorIs(t, ans.Results[0].Err(), api.ErrLeaseLost)
		r = h.do("POST", "/v1/batches", "", 0, strings.NewReader(call))
		require.Equal(t, http.StatusUnauthorized, r.status)
	})
}

// threeHeld is a harness whose edge-1 holds three ranges, and the body of
// a call of many ranges that names them: the first and third with their
// tokens, the second with a stale one, then a range that does not exist.
func threeHeld(t *testing.T, url string) (*harness, []lease.Lease, string) {
	t.Helper()
	h := newHarness(t, url, nil)
	h.group("g", false, 1, 300, lease.LaneHistory)
	ls := h.leases(h.token, 3)
	require.Len(t, ls, 3)
	body := fmt.Sprintf(`{"ranges":[{"range":%d,"token":%d},{"range":%d,"token":%d},{"range":%d,"token":%d},{"range":99999,"token":1}]}`,
		ls[0].Range.ID, ls[0].Token, ls[1].Range.ID, ls[1].Token+1, ls[2].Range.ID, ls[2].Token)
	return h, ls, body
}

// POST /v1/finishes finishes each named range under its own fence: a range
// whose batches reach its end is done, one short of its end is a conflict,
// a stale token is a lost lease, an unknown range is not found, and the
// refused ones are unchanged. A retry of a finished one is a lost lease.
func TestFinishes(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, url func(testing.TB) string) {
		h, ls, body := threeHeld(t, url(t))
		for _, l := range ls[:2] {
			r := h.do("POST", fmt.Sprintf("/v1/ranges/%d/batch", l.Range.ID), h.token, l.Token,
				strings.NewReader(fmt.Sprintf(`{"from":%d,"to":%d,"headers":0,"items":[]}`, l.Range.Start, l.Range.End)))
			require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		}
		r := h.do("POST", "/v1/finishes", h.token, 0, strings.NewReader(body))
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var ans api.FinishesReply
		require.NoError(t, json.Unmarshal(r.body, &ans))
		require.Len(t, ans.Results, 4)
		require.True(t, ans.Results[0].OK)
		require.NoError(t, ans.Results[0].Err())
		require.ErrorIs(t, ans.Results[1].Err(), api.ErrLeaseLost)
		require.ErrorIs(t, ans.Results[2].Err(), api.ErrConflict)
		require.NotErrorIs(t, ans.Results[2].Err(), api.ErrLeaseLost)
		require.ErrorIs(t, ans.Results[3].Err(), api.ErrNotFound)
		want := []lease.State{lease.StateDone, lease.StateLeased, lease.StateLeased}
		for i, l := range ls {
			rg, err := h.store.Range(t.Context(), l.Range.ID)
			require.NoError(t, err)
			require.Equal(t, want[i], rg.State, "range %d", i)
		}
		r = h.do("POST", "/v1/finishes", h.token, 0, strings.NewReader(body))
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		require.NoError(t, json.Unmarshal(r.body, &ans))
		require.ErrorIs(t, ans.Results[0].Err(), api.ErrLeaseLost, "finished already")
	})
}

// POST /v1/heartbeats renews each named range's lease under its own fence:
// a held range gets its new expiry, a stale token is a lost lease and an
// unknown range is not found, and the refused ones are unchanged.
func TestHeartbeats(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, url func(testing.TB) string) {
		h, ls, body := threeHeld(t, url(t))
		time.Sleep(5 * time.Millisecond) // so a renewal moves the expiry
		r := h.do("POST", "/v1/heartbeats", h.token, 0, strings.NewReader(body))
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var ans api.HeartbeatsReply
		require.NoError(t, json.Unmarshal(r.body, &ans))
		require.Len(t, ans.Results, 4)
		for _, i := range []int{0, 2} {
			require.NoError(t, ans.Results[i].Err())
			require.NotNil(t, ans.Results[i].ExpiresAt)
			require.True(t, ans.Results[i].ExpiresAt.After(ls[i].ExpiresAt), "range %d renewed", i)
		}
		require.Nil(t, ans.Results[1].ExpiresAt)
		require.ErrorIs(t, ans.Results[1].Err(), api.ErrLeaseLost)
		require.ErrorIs(t, ans.Results[3].Err(), api.ErrNotFound)
		// The refused range is still its holder's.
		r = h.do("POST", fmt.Sprintf("/v1/ranges/%d/heartbeat", ls[1].Range.ID), h.token, ls[1].Token, nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)

		r = h.do("POST", "/v1/heartbeats", h.token2, 0, strings.NewReader(body))
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		require.NoError(t, json.Unmarshal(r.body, &ans))
		require.ErrorIs(t, ans.Results[0].Err(), api.ErrLeaseLost, "another node's tokens are not its own")
		r = h.do("POST", "/v1/heartbeats", "", 0, strings.NewReader(body))
		require.Equal(t, http.StatusUnauthorized, r.status)
	})
}
