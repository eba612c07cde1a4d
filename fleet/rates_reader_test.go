package fleet

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/lease"
)

// scripted is a coordinator whose GET /v1/fleet answers come from a
// script, one a request, the last one again once the script is done: a nil
// fleet answers 500. Its `at`s are whatever the script says, so rates are
// exact.
type scripted struct {
	URL, Host string

	mu     sync.Mutex
	script []*api.Fleet
	n      int
}

func newScripted(t *testing.T, script ...*api.Fleet) *scripted {
	t.Helper()
	s := &scripted{script: script}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/fleet" || r.Header.Get("Authorization") != "Bearer "+adminToken {
			http.Error(w, `{"error": "not here", "code": "not_found"}`, http.StatusNotFound)
			return
		}
		s.mu.Lock()
		f := s.script[min(s.n, len(s.script)-1)]
		s.n++
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if f == nil {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"error": "the database is on fire", "code": "internal"}`))
			return
		}
		_ = json.NewEncoder(w).Encode(f)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	s.Host = strings.TrimPrefix(srv.URL, "http://")
	return s
}

// reads is how many fleet reads the coordinator answered.
func (s *scripted) reads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// ratesBody is GET /v1/fleet with its rates, as a client reads them.
type ratesBody struct {
	Hosts []Host `json:"hosts"`
	Rates struct {
		Window int `json:"window"`
		Reads  int `json:"reads"`
		Hosts  map[string]struct {
			At                []time.Time `json:"at"`
			ArticlesPerSecond *float64    `json:"articlesPerSecond"`
			Average           *float64    `json:"average"`
			Series            []*float64  `json:"series"`
		} `json:"hosts"`
		Lanes []struct {
			Host              string     `json:"host"`
			Group             string     `json:"group"`
			Lane              api.Lane   `json:"lane"`
			ArticlesPerSecond *float64   `json:"articlesPerSecond"`
			Series            []*float64 `json:"series"`
			Lag               *int64     `json:"lag"`
			LagSeries         []*int64   `json:"lagSeries"`
		} `json:"lanes"`
	} `json:"rates"`
	Served struct {
		Stale bool `json:"stale"`
	} `json:"served"`
}

func (rd *reader) rates() ratesBody {
	rd.t.Helper()
	a := rd.do("GET", "/v1/fleet")
	require.Equal(rd.t, http.StatusOK, a.status, "%s", a.body)
	var b ratesBody
	require.NoError(rd.t, json.Unmarshal(a.body, &b), "%s", a.body)
	return b
}

// refresh makes the reader read again, as requests do: past --keep, a
// request starts one read in the background; it waits for it.
func (rd *reader) refresh() {
	rd.t.Helper()
	rd.clock.Advance(rd.m.cfg.Keep + time.Second)
	require.True(rd.t, rd.rates().Served.Stale)
	require.NoError(rd.t, rd.m.fleet.Wait(rd.t.Context()))
}

// TestFleetRatesAcrossAFailedRead: two coordinators; the second fails in
// the second read, which is not kept. The third read's step spans both,
// from the first read, for each host; the failed read's answer from the
// first coordinator is not used.
func TestFleetRatesAcrossAFailedRead(t *testing.T) {
	t.Parallel()
	a := newScripted(t,
		fleetAt(t0, group(1, "g", nil, lane(lease.LaneHistory, 0))),
		fleetAt(t0.Add(15*time.Second), group(1, "g", nil, lane(lease.LaneHistory, 9999))), // read 2: not kept
		fleetAt(t0.Add(30*time.Second), group(1, "g", nil, lane(lease.LaneHistory, 300))))
	b := newScripted(t,
		fleetAt(t0.Add(time.Second), group(4, "h", polled(70), lane(lease.LaneTail, 0))),
		nil,
		fleetAt(t0.Add(31*time.Second), group(4, "h", polled(10), lane(lease.LaneTail, 6000))))
	rd := startReader(t, readerOptions{urls: []string{a.URL, b.URL}})

	r := rd.rates()
	require.Equal(t, 60, r.Rates.Window, "the default")
	require.Equal(t, 1, r.Rates.Reads)
	require.Nil(t, r.Rates.Hosts[a.Host].ArticlesPerSecond, "one read: no rate yet")
	require.Len(t, r.Rates.Lanes, 2)

	rd.refresh() // read 2: b fails, the read is not kept
	require.Equal(t, 2, b.reads())
	info, ok := rd.m.lastRead()
	require.True(t, ok)
	require.False(t, info.OK)
	r = rd.rates() // still read 1, stale; this starts read 3
	require.Equal(t, 1, r.Rates.Reads, "the failed read added nothing")
	require.NoError(t, rd.m.fleet.Wait(t.Context()))
	require.Equal(t, 3, b.reads())

	r = rd.rates()
	require.False(t, r.Served.Stale)
	require.Equal(t, 2, r.Rates.Reads)
	ha, hb := r.Rates.Hosts[a.Host], r.Rates.Hosts[b.Host]
	require.Equal(t, []time.Time{t0, t0.Add(30 * time.Second)}, ha.At)
	require.Equal(t, []any{nil, 10.0}, vals(ha.Series), "300 over the 30 s since the last kept read")
	require.Equal(t, 200.0, val(hb.ArticlesPerSecond), "6000 over 30 s")
	require.Equal(t, b.Host, r.Rates.Lanes[1].Host)
	require.Equal(t, lease.LaneTail, r.Rates.Lanes[1].Lane)
	require.Equal(t, int64(10), *r.Rates.Lanes[1].Lag)
	require.Equal(t, int64(70), *r.Rates.Lanes[1].LagSeries[0])
}

// TestFleetLanesBounded (issue 17, defect 7): a coordinator whose group
// names change on every read, 1,000 lanes a read, took the reader from
// 255 MB to 1.41 GB over 60 reads, and the dashboard to 37 MB of HTML. The
// history keeps at most --max-lanes lanes a read and counts the others; the
// dashboard shows at most that many lanes, and says how many it left out.
// Headers near MaxInt64 on two lanes do not wrap the host's rate negative.
func TestFleetLanesBounded(t *testing.T) {
	t.Parallel()
	const reads, groups, maxLanes, window = 12, 500, 100, 5
	var script []*api.Fleet
	for i := range reads {
		var gs []api.FleetGroup
		for j := range groups {
			name := fmt.Sprintf("alt.binaries.read%d.group%d", i, j)
			gs = append(gs, group(int64(i*groups+j+1), name, nil, lane(lease.LaneHistory, 0), lane(lease.LaneTail, 0)))
		}
		// Two lanes that stay, whose counters jump from 0 to MaxInt64 in
		// the last step: the host's step is their sum.
		var h int64
		if i == reads-1 {
			h = math.MaxInt64
		}
		gs = append([]api.FleetGroup{group(-1, "steady", nil, lane(lease.LaneHistory, h), lane(lease.LaneTail, h))}, gs...)
		script = append(script, fleetAt(t0.Add(time.Duration(i)*time.Second), gs...))
	}
	up := newScripted(t, script...)
	rd := startReader(t, readerOptions{urls: []string{up.URL}, rateReads: window, maxLanes: maxLanes})
	rd.rates() // the first read
	for range reads - 1 {
		rd.refresh()
	}
	require.Equal(t, reads, up.reads())

	a, err := rd.m.fleet.Get(t.Context())
	require.NoError(t, err)
	h := a.Value.history
	require.Len(t, h.samples, window)
	for _, s := range h.samples {
		require.Equal(t, maxLanes, len(s.lanes), "a read keeps at most --max-lanes lanes")
		require.Equal(t, 2*groups+2-maxLanes, s.dropped)
	}
	var r struct {
		Rates struct {
			MaxLanes     int `json:"maxLanes"`
			DroppedLanes int `json:"droppedLanes"`
			Hosts        map[string]struct {
				ArticlesPerSecond *float64 `json:"articlesPerSecond"`
			} `json:"hosts"`
			Lanes []json.RawMessage `json:"lanes"`
		} `json:"rates"`
	}
	body := rd.do("GET", "/v1/fleet")
	require.NoError(t, json.Unmarshal(body.body, &r))
	require.Equal(t, maxLanes, r.Rates.MaxLanes)
	require.Equal(t, 2*groups+2-maxLanes, r.Rates.DroppedLanes)
	require.Len(t, r.Rates.Lanes, maxLanes)
	require.Positive(t, *r.Rates.Hosts[up.Host].ArticlesPerSecond, "two lanes' steps sum without wrapping")

	page := rd.do("GET", "/")
	require.Equal(t, http.StatusOK, page.status)
	html := string(page.body)
	require.Equal(t, maxLanes, strings.Count(html, `<tr class="lane"`), "the dashboard shows at most --max-lanes lanes")
	require.Contains(t, html, fmt.Sprintf("%d more lanes not shown", 2*groups+2-maxLanes))
	require.Contains(t, html, fmt.Sprintf("%d lanes of the last read are past the %d the rates follow", 2*groups+2-maxLanes, maxLanes))
	require.Less(t, len(html), 256<<10, "the page is bounded")
}
