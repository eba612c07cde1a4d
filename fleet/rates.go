package fleet

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/internal/saturate"
	"github.com/edgeindex/edgeindex/lease"
)

// Rates are computed once, when a read is kept, from the samples of the last
// kept reads: a lane's rate between two consecutive kept reads is the growth
// of its headers counter over the time between its coordinator's `at`s. A
// counter that went back (a reset, another database) or a time that did not
// move forward gives no rate for that step. A read that is not kept adds no
// sample, so the step after it spans the gap, with the average over it.

// laneKey names a lane across reads. The group's id is part of it: a group
// removed and added again, or another database behind the same host, is
// another series even when its counter did not go back.
type laneKey struct {
	host    string
	groupID int64
	group   string
	lane    api.Lane
}

// laneSample is a lane's counters in one kept read.
type laneSample struct {
	headers int64
	lag     int64
	hasLag  bool // a tail lane of a group whose plan was polled
}

// sample is what one kept read adds to the history. Never changed once made.
type sample struct {
	at    map[string]time.Time // each host's `at`
	lanes map[laneKey]laneSample
	order []laneKey // the lanes in the read's order: host, group, lane
	// dropped counts the lanes of the read past maxLanes, not kept.
	dropped int
}

// newSample takes the counters of a read: of its first maxLanes lanes in
// the read's order, counting the others as dropped.
func newSample(hosts []Host, maxLanes int) *sample {
	s := &sample{at: make(map[string]time.Time, len(hosts)), lanes: map[laneKey]laneSample{}}
	for _, h := range hosts {
		if h.Fleet == nil {
			continue
		}
		s.at[h.Host] = h.Fleet.At
		for _, g := range h.Fleet.Groups {
			for _, l := range g.Lanes {
				if l.Headers < 0 {
					continue // no counter: a step from or to it would wrap
				}
				k := laneKey{host: h.Host, groupID: g.ID, group: g.Name, lane: l.Lane}
				ls := laneSample{headers: l.Headers}
				if l.Lane == lease.LaneTail && g.Plan != nil && g.Plan.Polled {
					ls.lag, ls.hasLag = g.Plan.Lag, true
				}
				if _, dup := s.lanes[k]; !dup {
					if len(s.order) == maxLanes {
						s.dropped++
						continue
					}
					s.order = append(s.order, k)
				}
				s.lanes[k] = ls
			}
		}
	}
	return s
}

// rateHistory is the samples of the last kept reads, oldest first. Never
// changed once made: a new read makes a new one.
type rateHistory struct {
	samples []*sample
}

// with returns the history with s added, holding at most window samples.
// h may be nil.
func (h *rateHistory) with(s *sample, window int) *rateHistory {
	var old []*sample
	if h != nil {
		old = h.samples
	}
	keep := min(len(old), window-1)
	samples := make([]*sample, 0, keep+1)
	samples = append(samples, old[len(old)-keep:]...)
	return &rateHistory{samples: append(samples, s)}
}

// laneStep is a lane's growth from prev to cur, and the time it took; ok is
// false when the step has no rate: the lane is not in both reads, its
// counter went back, or its coordinator's time did not move forward.
func laneStep(prev, cur *sample, k laneKey) (delta int64, dt time.Duration, ok bool) {
	a, inPrev := prev.lanes[k]
	b, inCur := cur.lanes[k]
	t0, t1 := prev.at[k.host], cur.at[k.host]
	if !inPrev || !inCur || t0.IsZero() || t1.IsZero() {
		return 0, 0, false
	}
	dt = t1.Sub(t0)
	if dt <= 0 || b.headers < a.headers {
		return 0, 0, false
	}
	return b.headers - a.headers, dt, true // both >= 0: no overflow
}

// Rates is the "rates" of GET /v1/fleet: articles/s per coordinator and
// per lane over the last Config.RateReads kept reads. Every series is aligned with
// its host's At: one entry per kept read, oldest first; a rate entry is the
// rate over the step from the read before, null for the first read and for a
// step without a rate.
type Rates struct {
	// Window is the most kept reads held; Reads how many are held now.
	Window int `json:"window"`
	Reads  int `json:"reads"`
	// MaxLanes is the most lanes followed; DroppedLanes how many lanes of
	// the last read were past it, and have no rate.
	MaxLanes     int                  `json:"maxLanes"`
	DroppedLanes int                  `json:"droppedLanes"`
	Hosts        map[string]*HostRate `json:"hosts"`
	Lanes        []*LaneRate          `json:"lanes"`

	byLane map[laneKey]*LaneRate
}

// RateSeries is a rate now, its average over the window, and its series.
type RateSeries struct {
	// ArticlesPerSecond is the last step's rate; null when it has none.
	ArticlesPerSecond *float64 `json:"articlesPerSecond"`
	// Average is the headers gained over the seconds of the steps that have
	// a rate; null when none has.
	Average *float64   `json:"average"`
	Series  []*float64 `json:"series"`

	delta int64         // the headers of the steps with a rate
	span  time.Duration // and their time
	view  rateView      // formatted for the dashboard, once
}

// HostRate is a coordinator's rate: the sum of its lanes'.
type HostRate struct {
	// At is the coordinator's `at` of each kept read.
	At []time.Time `json:"at"`
	RateSeries
}

// LaneRate is a lane's rate, and a tail lane's lag.
type LaneRate struct {
	Host    string   `json:"host"`
	GroupID int64    `json:"groupId"`
	Group   string   `json:"group"`
	Lane    api.Lane `json:"lane"`
	Headers int64    `json:"headers"`
	RateSeries
	// Lag is the tail's lag (FleetGroup.Plan.Lag) in the last read; null
	// for a lane that is not a tail lane of a group whose plan was polled.
	Lag       *int64   `json:"lag"`
	LagSeries []*int64 `json:"lagSeries"`

	lagView lagView
}

// addStep counts one step's growth into the series at i.
func (r *RateSeries) addStep(i int, delta int64, dt time.Duration) {
	r.Series[i] = ratePtr(float64(delta) / dt.Seconds())
	r.delta = saturate.Add(r.delta, delta)
	r.span += dt
}

// finish sets the rate now and the average.
func (r *RateSeries) finish() {
	r.ArticlesPerSecond = r.Series[len(r.Series)-1]
	if r.span > 0 {
		r.Average = ratePtr(float64(r.delta) / r.span.Seconds())
	}
}

// ratePtr rounds a rate to a thousandth.
func ratePtr(v float64) *float64 {
	v = math.Round(v*1000) / 1000
	return &v
}

// computeRates computes the rates of the history's last read. h may be nil
// (no read kept yet): the rates are then empty.
func computeRates(h *rateHistory, window, maxLanes int) *Rates {
	r := &Rates{Window: window, MaxLanes: maxLanes, Hosts: map[string]*HostRate{}, Lanes: []*LaneRate{}, byLane: map[laneKey]*LaneRate{}}
	if h == nil || len(h.samples) == 0 {
		return r
	}
	samples := h.samples
	n := len(samples)
	r.Reads = n
	latest := samples[n-1]
	r.DroppedLanes = latest.dropped
	for host := range latest.at {
		hr := &HostRate{At: make([]time.Time, n), RateSeries: RateSeries{Series: make([]*float64, n)}}
		for i, s := range samples {
			hr.At[i] = s.at[host]
		}
		r.Hosts[host] = hr
	}
	for _, k := range latest.order {
		lr := &LaneRate{Host: k.host, GroupID: k.groupID, Group: k.group, Lane: k.lane, Headers: latest.lanes[k].headers,
			RateSeries: RateSeries{Series: make([]*float64, n)}, LagSeries: make([]*int64, n)}
		for i, s := range samples {
			if ls, ok := s.lanes[k]; ok && ls.hasLag {
				lr.LagSeries[i] = &ls.lag
			}
		}
		lr.Lag = lr.LagSeries[n-1]
		r.Lanes = append(r.Lanes, lr)
		r.byLane[k] = lr
	}
	for i := 1; i < n; i++ {
		r.addSteps(samples[i-1], samples[i], i)
	}
	for _, hr := range r.Hosts {
		hr.finish()
		hr.view = newRateView(&hr.RateSeries, hr.At, n)
	}
	for _, lr := range r.Lanes {
		lr.finish()
		at := r.Hosts[lr.Host].At
		lr.view = newRateView(&lr.RateSeries, at, n)
		lr.lagView = newLagView(lr, at)
	}
	return r
}

// addSteps adds the step from prev to cur, the read at i, to every lane
// and host. A host's step is the sum of the steps of its lanes that have
// one, in prev and cur both (also lanes gone by the last read); it has no
// rate when none of its lanes has.
func (r *Rates) addSteps(prev, cur *sample, i int) {
	type acc struct {
		delta int64
		dt    time.Duration
	}
	hosts := map[string]*acc{}
	for _, k := range cur.order {
		delta, dt, ok := laneStep(prev, cur, k)
		if !ok {
			continue
		}
		a := hosts[k.host]
		if a == nil {
			a = &acc{dt: dt}
			hosts[k.host] = a
		}
		a.delta = saturate.Add(a.delta, delta)
		if lr := r.byLane[k]; lr != nil {
			lr.addStep(i, delta, dt)
		}
	}
	for host, a := range hosts {
		if hr := r.Hosts[host]; hr != nil {
			hr.addStep(i, a.delta, a.dt)
		}
	}
}

// encode encodes the rates once, when the read is made.
func (r *Rates) encode() ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encoding the rates: %w", err)
	}
	return b, nil
}

// lane returns the rate of a lane of the last read, or nil.
func (r *Rates) lane(host string, g api.FleetGroup, l api.FleetLane) *LaneRate {
	if r == nil {
		return nil
	}
	return r.byLane[laneKey{host: host, groupID: g.ID, group: g.Name, lane: l.Lane}]
}

// host returns the rate of a host of the last read, or nil.
func (r *Rates) host(name string) *HostRate {
	if r == nil {
		return nil
	}
	return r.Hosts[name]
}
