package fleet

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/lease"
)

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// group is a group of a scripted fleet: its lanes' headers, and its tail's
// lag when plan is set.
func group(id int64, name string, plan *api.FleetPlan, lanes ...api.FleetLane) api.FleetGroup {
	return api.FleetGroup{ID: id, Name: name, Ordered: true, Lanes: lanes, Plan: plan}
}

func lane(l api.Lane, headers int64) api.FleetLane {
	return api.FleetLane{Lane: l, Headers: headers, Ranges: map[lease.State]int64{}}
}

func polled(lag int64) *api.FleetPlan {
	return &api.FleetPlan{Polled: true, PolledAt: t0, High: 1_000_000 + lag, Lag: lag}
}

// fleetAt is a coordinator's fleet at a time.
func fleetAt(at time.Time, groups ...api.FleetGroup) *api.Fleet {
	return &api.Fleet{Schema: api.FleetSchema, At: at, Nodes: []api.FleetNode{}, Groups: groups, Ranges: map[lease.State]int64{}}
}

// okRead is a fleet read in which every host answered; hosts alternate
// name, fleet.
func okRead(t *testing.T, hostFleets ...any) *Read {
	t.Helper()
	var hosts []Host
	for i := 0; i < len(hostFleets); i += 2 {
		hosts = append(hosts, Host{Host: hostFleets[i].(string), Status: StatusOK, Fleet: hostFleets[i+1].(*api.Fleet)})
	}
	return &Read{hosts: hosts}
}

// keep makes the read's rates from previous, as readFleet does.
func keep(t *testing.T, f, previous *Read, window int) *Read {
	t.Helper()
	require.NoError(t, f.addRates(previous, window, DefaultMaxLanes))
	return f
}

func val(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func vals(ps []*float64) []any {
	out := make([]any, len(ps))
	for i, p := range ps {
		out[i] = val(p)
	}
	return out
}

func laneOf(t *testing.T, r *Rates, host, group string, l api.Lane) *LaneRate {
	t.Helper()
	for _, lr := range r.Lanes {
		if lr.Host == host && lr.Group == group && lr.Lane == l {
			return lr
		}
	}
	t.Fatalf("no lane %s %s %s in %+v", host, group, l, r.Lanes)
	return nil
}

// TestRatesNeedTwoReads: one kept read has no rate; the second gives each
// lane Δheaders/Δt over the coordinator's `at`s, and the host the sum.
func TestRatesNeedTwoReads(t *testing.T) {
	t.Parallel()
	r1 := keep(t, okRead(t, "a:1", fleetAt(t0, group(1, "g", nil, lane(lease.LaneHistory, 100), lane(lease.LaneTail, 10)))), nil, 60)
	require.Equal(t, 1, r1.rates.Reads)
	require.Equal(t, 60, r1.rates.Window)
	h := r1.rates.Hosts["a:1"]
	require.Nil(t, h.ArticlesPerSecond)
	require.Nil(t, h.Average)
	require.Equal(t, []any{nil}, vals(h.Series))
	require.Len(t, r1.rates.Lanes, 2)
	require.Equal(t, "–", h.view.Now)
	require.Zero(t, h.view.Spark.Points)

	r2 := keep(t, okRead(t, "a:1", fleetAt(t0.Add(10*time.Second), group(1, "g", nil, lane(lease.LaneHistory, 350), lane(lease.LaneTail, 20)))), r1, 60)
	require.Equal(t, 2, r2.rates.Reads)
	hist := laneOf(t, r2.rates, "a:1", "g", lease.LaneHistory)
	require.Equal(t, []any{nil, 25.0}, vals(hist.Series))
	require.Equal(t, 25.0, val(hist.ArticlesPerSecond))
	require.Equal(t, int64(350), hist.Headers)
	tail := laneOf(t, r2.rates, "a:1", "g", lease.LaneTail)
	require.Equal(t, 1.0, val(tail.ArticlesPerSecond))
	h = r2.rates.Hosts["a:1"]
	require.Equal(t, []any{nil, 26.0}, vals(h.Series))
	require.Equal(t, 26.0, val(h.Average))
	require.Equal(t, []time.Time{t0, t0.Add(10 * time.Second)}, h.At)
	require.Equal(t, "26.0/s", h.view.Now)
	require.Equal(t, 1, h.view.Spark.Points)

	// The first read's rates are untouched: a read is never changed.
	require.Equal(t, 1, r1.rates.Reads)
	require.Len(t, r1.history.samples, 1)
}

// TestRatesReset: a counter that goes back (a coordinator restarted on
// another database, a lane reset) gives no rate for that step, and counts
// again from there; the host sums the lanes that have a rate.
func TestRatesReset(t *testing.T) {
	t.Parallel()
	steps := []struct{ a, b int64 }{{1000, 0}, {1500, 100}, {200, 300}, {400, 500}}
	var r *Read
	for i, s := range steps {
		r = keep(t, okRead(t, "a:1", fleetAt(t0.Add(time.Duration(i)*10*time.Second),
			group(1, "a", nil, lane(lease.LaneHistory, s.a)), group(2, "b", nil, lane(lease.LaneHistory, s.b)))), r, 60)
	}
	a := laneOf(t, r.rates, "a:1", "a", lease.LaneHistory)
	require.Equal(t, []any{nil, 50.0, nil, 20.0}, vals(a.Series), "1000→1500, then back to 200: a reset, then 200→400")
	require.Equal(t, 35.0, val(a.Average), "(500+200)/20 s: the reset step counts neither its headers nor its time")
	b := laneOf(t, r.rates, "a:1", "b", lease.LaneHistory)
	require.Equal(t, []any{nil, 10.0, 20.0, 20.0}, vals(b.Series))
	h := r.rates.Hosts["a:1"]
	require.Equal(t, []any{nil, 60.0, 20.0, 40.0}, vals(h.Series), "the reset lane is left out of its step's sum")
	require.Empty(t, a.view.Spark.Runs, "the reset breaks the line: two points alone")
	require.Equal(t, []sparkDot{{X: "0.0", Y: "2.5"}, {X: "120.0", Y: "13.9", Last: true}}, a.view.Spark.Dots)
	require.Equal(t, 2, a.view.Spark.Points)

	// Every lane back: the whole coordinator restarted on another database.
	r = keep(t, okRead(t, "a:1", fleetAt(t0.Add(40*time.Second),
		group(1, "a", nil, lane(lease.LaneHistory, 3)), group(2, "b", nil, lane(lease.LaneHistory, 4)))), r, 60)
	h = r.rates.Hosts["a:1"]
	require.Nil(t, h.ArticlesPerSecond, "no lane has a rate: neither has the host")
	require.Equal(t, "–", h.view.Now)
	require.Contains(t, h.view.Title, "counter went back")
}

// TestRatesSeriesIdentity: a lane that is new has no rate for its first
// step; a group removed and added again (a new id under the same name) is a
// new series even though its counter did not go back; a lane gone is gone.
func TestRatesSeriesIdentity(t *testing.T) {
	t.Parallel()
	r := keep(t, okRead(t, "a:1", fleetAt(t0, group(1, "g", nil, lane(lease.LaneHistory, 10)))), nil, 60)
	r = keep(t, okRead(t, "a:1", fleetAt(t0.Add(10*time.Second),
		group(1, "g", nil, lane(lease.LaneHistory, 20), lane(lease.LaneTail, 500)))), r, 60)
	require.Equal(t, []any{nil, nil}, vals(laneOf(t, r.rates, "a:1", "g", lease.LaneTail).Series), "the tail lane is new")
	require.Equal(t, 1.0, val(r.rates.Hosts["a:1"].ArticlesPerSecond), "the host counts the history lane only")

	r = keep(t, okRead(t, "a:1", fleetAt(t0.Add(20*time.Second), group(7, "g", nil, lane(lease.LaneHistory, 900)))), r, 60)
	require.Len(t, r.rates.Lanes, 1, "the lanes of the last read")
	require.Equal(t, int64(7), r.rates.Lanes[0].GroupID)
	require.Equal(t, []any{nil, nil, nil}, vals(r.rates.Lanes[0].Series), "group 7 is not group 1")
}

// TestRatesClockBack: a step whose coordinator time did not move forward
// has no rate.
func TestRatesClockBack(t *testing.T) {
	t.Parallel()
	r := keep(t, okRead(t, "a:1", fleetAt(t0, group(1, "g", nil, lane(lease.LaneHistory, 10)))), nil, 60)
	r = keep(t, okRead(t, "a:1", fleetAt(t0, group(1, "g", nil, lane(lease.LaneHistory, 20)))), r, 60)
	r = keep(t, okRead(t, "a:1", fleetAt(t0.Add(-time.Second), group(1, "g", nil, lane(lease.LaneHistory, 30)))), r, 60)
	r = keep(t, okRead(t, "a:1", fleetAt(t0.Add(9*time.Second), group(1, "g", nil, lane(lease.LaneHistory, 130)))), r, 60)
	require.Equal(t, []any{nil, nil, nil, 10.0}, vals(laneOf(t, r.rates, "a:1", "g", lease.LaneHistory).Series))
}

// TestRatesFailedReadInBetween: a read in which a host failed is not kept
// and adds no sample, for any host: it carries the last kept read's rates,
// unchanged. The next kept read's step spans the gap, and its rate is the
// average over it (the counters are cumulative), for every host: nothing
// is invented for the failed read, and no step is lost.
func TestRatesFailedReadInBetween(t *testing.T) {
	t.Parallel()
	read := func(sec int, a, b int64) *Read {
		at := t0.Add(time.Duration(sec) * time.Second)
		return okRead(t, "a:1", fleetAt(at, group(1, "g", nil, lane(lease.LaneHistory, a))),
			"b:2", fleetAt(at.Add(time.Second), group(1, "g", nil, lane(lease.LaneHistory, b))))
	}
	r1 := keep(t, read(0, 0, 0), nil, 60)

	failed := read(15, 150, 1500)
	failed.hosts[1] = Host{Host: "b:2", Status: StatusUnreachable, Detail: "connection refused"}
	require.False(t, failed.allOK())
	keep(t, failed, r1, 60)
	require.Same(t, r1.rates, failed.rates, "a read not kept carries the last kept read's rates")
	require.Same(t, r1.history, failed.history, "and adds nothing to the history")
	require.Equal(t, string(r1.ratesJSON), string(failed.ratesJSON))

	// The cache hands the last KEPT read as previous: r1, not failed.
	r3 := keep(t, read(30, 300, 6000), r1, 60)
	require.Equal(t, 2, r3.rates.Reads)
	require.Equal(t, []any{nil, 10.0}, vals(r3.rates.Hosts["a:1"].Series), "300 over 30 s")
	require.Equal(t, []any{nil, 200.0}, vals(r3.rates.Hosts["b:2"].Series), "6000 over 30 s")

	// Before any read is kept, a failed read has empty rates.
	first := read(0, 0, 0)
	first.hosts[0].Status, first.hosts[0].Fleet = StatusError, nil
	keep(t, first, nil, 60)
	require.Nil(t, first.history)
	require.Zero(t, first.rates.Reads)
	require.JSONEq(t, `{"window":60,"reads":0,"maxLanes":2000,"droppedLanes":0,"hosts":{},"lanes":[]}`, string(first.ratesJSON))
}

// TestRatesWindow: memory is bounded: the history holds the last window
// kept reads, and every series as many entries.
func TestRatesWindow(t *testing.T) {
	t.Parallel()
	var r *Read
	for i := range 10 {
		r = keep(t, okRead(t, "a:1", fleetAt(t0.Add(time.Duration(i)*time.Second),
			group(1, "g", nil, lane(lease.LaneHistory, int64(i*i))))), r, 4)
		require.LessOrEqual(t, len(r.history.samples), 4)
	}
	require.Equal(t, 4, r.rates.Reads)
	g := laneOf(t, r.rates, "a:1", "g", lease.LaneHistory)
	require.Equal(t, []any{nil, 13.0, 15.0, 17.0}, vals(g.Series), "reads 6..9: the first has no read before it in the window")
	require.Equal(t, 15.0, val(g.Average), "(81-36)/3 s")
	require.Equal(t, t0.Add(6*time.Second), r.rates.Hosts["a:1"].At[0])
	require.Equal(t, 3, g.view.Spark.Points)
}

// TestRatesLag: a tail lane of a group whose plan was polled carries the
// plan's lag; a history lane, a group with no plan, or a plan not polled
// yet, carries none.
func TestRatesLag(t *testing.T) {
	t.Parallel()
	notPolled := &api.FleetPlan{}
	mk := func(sec int, lag int64) *Read {
		return okRead(t, "a:1", fleetAt(t0.Add(time.Duration(sec)*time.Second),
			group(1, "planned", polled(lag), lane(lease.LaneHistory, 0), lane(lease.LaneTail, 0)),
			group(2, "unplanned", nil, lane(lease.LaneTail, 0)),
			group(3, "waiting", notPolled, lane(lease.LaneTail, 0))))
	}
	r := keep(t, mk(0, 5000), nil, 60)
	r = keep(t, mk(10, 4000), r, 60)
	r = keep(t, mk(20, 1234567), r, 60)
	tail := laneOf(t, r.rates, "a:1", "planned", lease.LaneTail)
	require.Equal(t, int64(1234567), *tail.Lag)
	require.Len(t, tail.LagSeries, 3)
	require.Equal(t, int64(5000), *tail.LagSeries[0])
	require.Equal(t, "1,234,567", tail.lagView.Now)
	require.Equal(t, 3, tail.lagView.Spark.Points)
	require.Nil(t, laneOf(t, r.rates, "a:1", "planned", lease.LaneHistory).Lag)
	require.Nil(t, laneOf(t, r.rates, "a:1", "unplanned", lease.LaneTail).Lag)
	require.Nil(t, laneOf(t, r.rates, "a:1", "waiting", lease.LaneTail).Lag)
	require.False(t, laneOf(t, r.rates, "a:1", "waiting", lease.LaneTail).lagView.Has)

	var decoded struct {
		Lanes []struct {
			Group     string   `json:"group"`
			Lane      string   `json:"lane"`
			Lag       *int64   `json:"lag"`
			LagSeries []*int64 `json:"lagSeries"`
		} `json:"lanes"`
	}
	require.NoError(t, json.Unmarshal(r.ratesJSON, &decoded))
	require.Equal(t, "planned", decoded.Lanes[1].Group)
	require.Equal(t, "tail", decoded.Lanes[1].Lane)
	require.Equal(t, int64(1234567), *decoded.Lanes[1].Lag)
	require.Nil(t, decoded.Lanes[2].Lag)
	require.Equal(t, []*int64{nil, nil, nil}, decoded.Lanes[2].LagSeries)
}

// TestRatesJSON: the shape of "rates", every series aligned with its
// host's `at`s.
func TestRatesJSON(t *testing.T) {
	t.Parallel()
	r := keep(t, okRead(t, "a:1", fleetAt(t0, group(3, "alt.x", polled(40), lane(lease.LaneTail, 0)))), nil, 5)
	r = keep(t, okRead(t, "a:1", fleetAt(t0.Add(4*time.Second), group(3, "alt.x", polled(30), lane(lease.LaneTail, 10)))), r, 5)
	require.JSONEq(t, `{
		"window": 5, "reads": 2, "maxLanes": 2000, "droppedLanes": 0,
		"hosts": {"a:1": {"at": ["2025-06-01T12:00:00Z", "2025-06-01T12:00:04Z"],
			"articlesPerSecond": 2.5, "average": 2.5, "series": [null, 2.5]}},
		"lanes": [{"host": "a:1", "groupId": 3, "group": "alt.x", "lane": "tail", "headers": 10,
			"articlesPerSecond": 2.5, "average": 2.5, "series": [null, 2.5],
			"lag": 30, "lagSeries": [40, 30]}]
	}`, string(r.ratesJSON))
}

// TestSparkline: x is time, from the first value to the last read, y runs from 0 to the highest value; a missing
// value breaks the line; a lone value is a dot; the last value is marked.
func TestSparkline(t *testing.T) {
	t.Parallel()
	f := func(v float64) *float64 { return &v }
	at := []time.Time{t0, t0.Add(10 * time.Second), t0.Add(20 * time.Second), t0.Add(30 * time.Second), t0.Add(40 * time.Second)}
	sp := newSparkline(at, []*float64{nil, f(0), f(10), nil, f(5)})
	require.Equal(t, 3, sp.Points)
	require.Equal(t, 10.0, sp.Top)
	require.Equal(t, []string{"0.0,21.5 40.0,2.5"}, sp.Runs, "from the first value (the second read) to the last read")
	require.Equal(t, []sparkDot{{X: "120.0", Y: "12.0", Last: true}}, sp.Dots)

	sp = newSparkline(at, []*float64{f(1), nil, f(1), f(1), nil})
	require.Equal(t, []string{"60.0,2.5 90.0,2.5"}, sp.Runs)
	require.Equal(t, []sparkDot{{X: "0.0", Y: "2.5"}, {X: "90.0", Y: "2.5", Last: true}}, sp.Dots)

	sp = newSparkline(at[:1], []*float64{f(0)})
	require.Equal(t, 1, sp.Points)
	require.Equal(t, []sparkDot{{X: "120.0", Y: "21.5", Last: true}}, sp.Dots, "all zero: on the base line")

	// A gap between kept reads is a longer segment.
	sp = newSparkline([]time.Time{t0, t0.Add(time.Second), t0.Add(2 * time.Second), t0.Add(5 * time.Second)}, []*float64{nil, f(2), f(2), f(2)})
	require.Equal(t, []string{"0.0,2.5 30.0,2.5 120.0,2.5"}, sp.Runs)
}

func TestFormatRate(t *testing.T) {
	t.Parallel()
	for v, want := range map[float64]string{0: "0.00/s", 0.126: "0.13/s", 9.994: "9.99/s", 12.34: "12.3/s", 99.9: "99.9/s",
		100: "100/s", 1234.5: "1,235/s", 2_500_000: "2,500,000/s"} {
		require.Equal(t, want, formatRate(v), "%v", v)
	}
	require.Equal(t, "-1,000", groupDigits(-1000))
	require.Equal(t, "999", groupDigits(999))
	require.True(t, strings.HasPrefix(formatRate(0.5), "0.50"))
}

// TestRatesNegativeHeaders: a coordinator that answers a negative headers
// counter gives that lane no sample, so no step from or to it wraps
// (MinInt64 then MaxInt64 made a rate of -1).
func TestRatesNegativeHeaders(t *testing.T) {
	t.Parallel()
	a := keep(t, okRead(t, "h", fleetAt(t0, group(1, "g", nil, lane(lease.LaneTail, math.MinInt64)))), nil, 60)
	b := keep(t, okRead(t, "h", fleetAt(t0.Add(time.Second), group(1, "g", nil, lane(lease.LaneTail, math.MaxInt64)))), a, 60)
	require.Len(t, b.rates.Lanes, 1)
	require.Nil(t, b.rates.Lanes[0].ArticlesPerSecond, "no rate from a negative counter")
	require.Nil(t, b.rates.Hosts["h"].ArticlesPerSecond)
}
