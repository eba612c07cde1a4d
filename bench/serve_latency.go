package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// opRoutes are the coordinator's routes of the load's calls, as its
// edgeindex_request_seconds histogram names them.
var opRoutes = [nOps]string{"POST /v1/lease", "POST /v1/ranges/{id}/heartbeat", "POST /v1/ranges/{id}/batch", "POST /v1/ranges/{id}/finish"}

// routeHist is one route's edgeindex_request_seconds, its answer codes
// summed: the cumulative count at each bucket bound, the sum and count.
type routeHist struct {
	le    []float64 // bucket bounds, ascending, +Inf last
	cum   []float64 // requests at or under each bound
	sum   float64
	count float64
}

// quantileBound is the smallest bucket bound that at least q of the
// requests are at or under: the histogram's p50 or p99 up to its buckets.
func (h *routeHist) quantileBound(q float64) float64 {
	for i, c := range h.cum {
		if c >= q*h.count {
			return h.le[i]
		}
	}
	return math.Inf(1)
}

// share is the part of the requests at or under bound (one of the
// buckets' bounds).
func (h *routeHist) share(bound float64) float64 {
	if i := slices.Index(h.le, bound); i >= 0 && h.count > 0 {
		return h.cum[i] / h.count
	}
	return math.NaN()
}

// parseRequestSeconds reads edgeindex_request_seconds from a Prometheus
// text exposition (expfmt's parser), by route, summing its codes.
func parseRequestSeconds(r io.Reader) (map[string]*routeHist, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	hists := map[string]*routeHist{}
	for _, m := range families["edgeindex_request_seconds"].GetMetric() {
		var route string
		for _, l := range m.GetLabel() {
			if l.GetName() == "route" {
				route = l.GetValue()
			}
		}
		h := hists[route]
		if h == nil {
			h = &routeHist{}
			hists[route] = h
		}
		ph := m.GetHistogram()
		h.sum += ph.GetSampleSum()
		h.count += float64(ph.GetSampleCount())
		for _, b := range ph.GetBucket() { // +Inf's among them, as the text has it
			add(h, b.GetUpperBound(), float64(b.GetCumulativeCount()))
		}
	}
	return hists, nil
}

// add adds n requests at or under bound to h's buckets, which stay sorted.
func add(h *routeHist, bound, n float64) {
	i, found := slices.BinarySearch(h.le, bound)
	if !found {
		h.le, h.cum = slices.Insert(h.le, i, bound), slices.Insert(h.cum, i, 0)
	}
	h.cum[i] += n
}

// serveLatency prints, beside the load's own quantiles, the coordinator's
// view of each call: its handler's time (edgeindex_request_seconds), which
// leaves out what a request waited before serve's handler ran and after it
// answered (the network, the kernel, and the load generator's own
// goroutines waiting for a core). Its quantiles are bucket bounds.
func (l *loadRun) serveLatency(ctx context.Context) {
	b, err := adminGet(ctx, l.p.URL, l.p.AdminToken, "/metrics")
	if err != nil {
		fmt.Fprintf(l.out, "LOAD serve's latency: %v\n", err)
		return
	}
	hists, err := parseRequestSeconds(bytes.NewReader(b))
	if err != nil {
		fmt.Fprintf(l.out, "LOAD serve's latency: %v\n", err)
		return
	}
	for o := range nOps {
		h := hists[opRoutes[o]]
		if h == nil || h.count == 0 {
			continue
		}
		fmt.Fprintf(l.out, "LOAD serve %-9s n=%-7.0f mean=%-9s p50<=%-6s p99<=%-6s within 100ms=%.1f%%\n", opNames[o], h.count,
			round(seconds(h.sum/h.count)), seconds(h.quantileBound(0.50)), seconds(h.quantileBound(0.99)), 100*h.share(0.1))
	}
}

// seconds is s seconds as a Duration.
func seconds(s float64) time.Duration {
	if math.IsInf(s, 1) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(s * float64(time.Second))
}
