package coordinator_test

import (
	"fmt"
	"net/http"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/lease"
)

// TestMemoryFlat runs 1,000 ranges through the API (lease, stream, batch,
// finish) and checks that the coordinator's live heap does not grow with
// them: whatever a range costs is given back when it is done.
func TestMemoryFlat(t *testing.T) {
	h := newHarness(t, backends[0].URL(t), nil)
	const ranges = 1000
	h.group("mem", false, 1, ranges*100, lease.LaneHistory)
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	var base uint64
	for i := range ranges {
		if i == 200 {
			base = heap()
		}
		l := h.lease(h.token)
		h.fill(l.Range, l.ChunkSize)
		path := fmt.Sprintf("/v1/ranges/%d", l.Range.ID)
		r := h.do("GET", path+"/stream", h.token, l.Token, nil)
		require.Equal(t, http.StatusOK, r.status)
		require.Len(t, decodeFrames(t, r.body), 5)
		r = h.do("POST", path+"/batch", h.token, l.Token, jsonBody(map[string]any{"from": l.Range.Start, "to": l.Range.End, "headers": 100,
			"items": []map[string]any{{"key": fmt.Sprint(i), "value": i}}}))
		require.Equal(t, http.StatusOK, r.status)
		require.Equal(t, http.StatusOK, h.do("POST", path+"/finish", h.token, l.Token, nil).status)
	}
	grown := int64(heap()) - int64(base)
	t.Logf("live heap after 200 ranges: %d KiB; after %d: %+d KiB", base>>10, ranges, grown>>10)
	require.Less(t, grown, int64(2<<20), "the heap grew by %d bytes over %d ranges", grown, ranges-200)
	require.Zero(t, h.spool.Size(), "every done range's chunks were dropped")
}
