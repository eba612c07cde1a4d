package coordinator

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics counts what a coordinator does, in Prometheus form. A nil
// *Metrics counts nothing.
type Metrics struct {
	reg        *prometheus.Registry
	leases     prometheus.Counter
	batches    *prometheus.CounterVec
	items      prometheus.Counter
	bytes      prometheus.Counter
	keepalives prometheus.Counter
	latency    *prometheus.HistogramVec
}

// NewMetrics returns metrics on their own registry, with the Go and process
// collectors. state, when not nil, is asked for ranges by state at each scrape.
func NewMetrics(state func() map[string]float64) *Metrics {
	m := &Metrics{
		reg:        prometheus.NewRegistry(),
		leases:     prometheus.NewCounter(prometheus.CounterOpts{Name: "edgeindex_leases_granted_total", Help: "Range and lane leases granted."}),
		batches:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "edgeindex_batches_total", Help: "Batches by outcome: stored, duplicate, refused, or busy (no room in the batch budget)."}, []string{"outcome"}),
		items:      prometheus.NewCounter(prometheus.CounterOpts{Name: "edgeindex_items_stored_total", Help: "Items stored."}),
		bytes:      prometheus.NewCounter(prometheus.CounterOpts{Name: "edgeindex_stream_bytes_total", Help: "Bytes streamed to workers."}),
		keepalives: prometheus.NewCounter(prometheus.CounterOpts{Name: "edgeindex_stream_keepalives_total", Help: "Keepalive frames sent."}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "edgeindex_request_seconds", Help: "Request latency by route.",
			Buckets: prometheus.DefBuckets}, []string{"route", "code"}),
	}
	m.reg.MustRegister(m.leases, m.batches, m.items, m.bytes, m.keepalives, m.latency,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, o := range []string{"stored", "duplicate", "refused", "busy"} {
		m.batches.WithLabelValues(o)
	}
	if state != nil {
		m.reg.MustRegister(rangesCollector{desc: prometheus.NewDesc("edgeindex_ranges", "Ranges by state.", []string{"state"}, nil), state: state})
	}
	return m
}

// FetchStats is what a chunk source reports of its fetches: those in flight
// and the oldest one's age, and those cut by their deadline or by a byte
// bound (nntp.Source.Stats has them all).
type FetchStats struct {
	InFlight                 int
	Oldest                   time.Duration
	CutDeadline, CutTooLarge int64
}

// WatchFetches exports stats, asked at each scrape, as
// edgeindex_fetches_in_flight, edgeindex_fetch_oldest_seconds and
// edgeindex_fetches_cut_total{reason="deadline"|"too_large"}: a stuck
// fetch shows as an old oldest fetch, then as a cut one. Call it once,
// before serving.
func (m *Metrics) WatchFetches(stats func() FetchStats) {
	if m == nil || stats == nil {
		return
	}
	m.reg.MustRegister(fetchCollector{stats: stats,
		inFlight: prometheus.NewDesc("edgeindex_fetches_in_flight", "Fetches from the chunk source holding a connection now.", nil, nil),
		oldest:   prometheus.NewDesc("edgeindex_fetch_oldest_seconds", "How long the oldest fetch in flight has run; 0 when none runs.", nil, nil),
		cut:      prometheus.NewDesc("edgeindex_fetches_cut_total", "Fetches cut by their deadline (deadline) or a byte bound (too_large).", []string{"reason"}, nil),
	})
}

// PostProcStats is what post-processing reports: releases waiting and
// given up on (in the store), and since start those done, the tries
// that failed and the article bodies read (postproc.Processor.Stats).
type PostProcStats struct {
	Pending, GivenUp     int64
	Done, Failed, Bodies int64
	Busy                 time.Duration
}

// WatchPostProc exports stats, asked at each scrape, as
// edgeindex_postproc_releases{state="pending"|"failed"} and
// edgeindex_postproc_total{outcome="done"|"failed"},
// edgeindex_postproc_bodies_total and edgeindex_postproc_seconds_total
// (the time its passes worked). Call it once, before serving.
func (m *Metrics) WatchPostProc(stats func() PostProcStats) {
	if m == nil || stats == nil {
		return
	}
	m.reg.MustRegister(postProcCollector{stats: stats,
		releases: prometheus.NewDesc("edgeindex_postproc_releases", "Releases waiting for post-processing (pending) and given up on (failed).", []string{"state"}, nil),
		tries:    prometheus.NewDesc("edgeindex_postproc_total", "Post-processing tries since start, by outcome.", []string{"outcome"}, nil),
		bodies:   prometheus.NewDesc("edgeindex_postproc_bodies_total", "Article bodies post-processing read since start.", nil, nil),
		busy:     prometheus.NewDesc("edgeindex_postproc_seconds_total", "Time post-processing's passes spent on releases since start.", nil, nil),
	})
}

type postProcCollector struct {
	stats                         func() PostProcStats
	releases, tries, bodies, busy *prometheus.Desc
}

func (c postProcCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.releases
	ch <- c.tries
	ch <- c.bodies
	ch <- c.busy
}
func (c postProcCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.stats()
	ch <- prometheus.MustNewConstMetric(c.releases, prometheus.GaugeValue, float64(st.Pending), "pending")
	ch <- prometheus.MustNewConstMetric(c.releases, prometheus.GaugeValue, float64(st.GivenUp), "failed")
	ch <- prometheus.MustNewConstMetric(c.tries, prometheus.CounterValue, float64(st.Done), "done")
	ch <- prometheus.MustNewConstMetric(c.tries, prometheus.CounterValue, float64(st.Failed), "failed")
	ch <- prometheus.MustNewConstMetric(c.bodies, prometheus.CounterValue, float64(st.Bodies))
	ch <- prometheus.MustNewConstMetric(c.busy, prometheus.CounterValue, st.Busy.Seconds())
}

type fetchCollector struct {
	stats                 func() FetchStats
	inFlight, oldest, cut *prometheus.Desc
}

func (c fetchCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.inFlight
	ch <- c.oldest
	ch <- c.cut
}
func (c fetchCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.stats()
	ch <- prometheus.MustNewConstMetric(c.inFlight, prometheus.GaugeValue, float64(st.InFlight))
	ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, st.Oldest.Seconds())
	ch <- prometheus.MustNewConstMetric(c.cut, prometheus.CounterValue, float64(st.CutDeadline), "deadline")
	ch <- prometheus.MustNewConstMetric(c.cut, prometheus.CounterValue, float64(st.CutTooLarge), "too_large")
}

type rangesCollector struct {
	desc  *prometheus.Desc
	state func() map[string]float64
}

func (c rangesCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }
func (c rangesCollector) Collect(ch chan<- prometheus.Metric) {
	for state, n := range c.state() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, n, state)
	}
}

// Handler serves the metrics as Prometheus text.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

func (m *Metrics) leased() {
	if m != nil {
		m.leases.Inc()
	}
}

func (m *Metrics) batch(outcome string, items int) {
	if m != nil {
		m.batches.WithLabelValues(outcome).Inc()
		m.items.Add(float64(items))
	}
}

func (m *Metrics) streamed(n int64) {
	if m != nil {
		m.bytes.Add(float64(n))
	}
}

func (m *Metrics) keepalive() {
	if m != nil {
		m.keepalives.Inc()
	}
}
