package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
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
// text exposition, by route, summing its codes.
func parseRequestSeconds(r io.Reader) (map[string]*routeHist, error) {
	const name = "edgeindex_request_seconds"
	hists := map[string]*routeHist{}
	get := func(route string) *routeHist {
		if hists[route] == nil {
			hists[route] = &routeHist{}
		}
		return hists[route]
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		open, end := strings.IndexByte(line, '{'), strings.LastIndexByte(line, '}')
		if open < 0 || end < open {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(line[end+1:]), 64)
		if err != nil {
			return nil, fmt.Errorf("metrics: %q: %w", line, err)
		}
		labels := parseLabels(line[open+1 : end])
		h := get(labels["route"])
		switch line[len(name):open] {
		case "_bucket":
			le, err := strconv.ParseFloat(labels["le"], 64)
			if err != nil {
				return nil, fmt.Errorf("metrics: %q: %w", line, err)
			}
			if i := slices.Index(h.le, le); i >= 0 {
				h.cum[i] += v
			} else {
				i, _ := slices.BinarySearch(h.le, le)
				h.le, h.cum = slices.Insert(h.le, i, le), slices.Insert(h.cum, i, v)
			}
		case "_sum":
			h.sum += v
		case "_count":
			h.count += v
		}
	}
	return hists, sc.Err()
}

// parseLabels reads `a="x",b="y"`; values hold no quote or comma here.
func parseLabels(s string) map[string]string {
	m := map[string]string{}
	for kv := range strings.SplitSeq(s, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = strings.Trim(v, `"`)
		}
	}
	return m
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
