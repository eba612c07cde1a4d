package main

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseRequestSeconds(t *testing.T) {
	text := `# HELP edgeindex_request_seconds Request latency by route.
# TYPE edgeindex_request_seconds histogram
edgeindex_request_seconds_bucket{code="OK",route="POST /v1/lease",le="0.05"} 50
edgeindex_request_seconds_bucket{code="OK",route="POST /v1/lease",le="0.1"} 90
edgeindex_request_seconds_bucket{code="OK",route="POST /v1/lease",le="+Inf"} 99
edgeindex_request_seconds_sum{code="OK",route="POST /v1/lease"} 9.9
edgeindex_request_seconds_count{code="OK",route="POST /v1/lease"} 99
edgeindex_request_seconds_bucket{code="Conflict",route="POST /v1/lease",le="0.05"} 1
edgeindex_request_seconds_bucket{code="Conflict",route="POST /v1/lease",le="0.1"} 1
edgeindex_request_seconds_bucket{code="Conflict",route="POST /v1/lease",le="+Inf"} 1
edgeindex_request_seconds_sum{code="Conflict",route="POST /v1/lease"} 0.1
edgeindex_request_seconds_count{code="Conflict",route="POST /v1/lease"} 1
edgeindex_batches_total{outcome="stored"} 7
`
	hists, err := parseRequestSeconds(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	h := hists["POST /v1/lease"]
	if len(hists) != 1 || h == nil {
		t.Fatalf("want one route, POST /v1/lease: %v", hists)
	}
	if !slices.Equal(h.le, []float64{0.05, 0.1, math.Inf(1)}) || !slices.Equal(h.cum, []float64{51, 91, 100}) {
		t.Fatalf("buckets %v %v: want the codes summed", h.le, h.cum)
	}
	if h.count != 100 || math.Abs(h.sum-10) > 1e-9 {
		t.Fatalf("count %v, sum %v", h.count, h.sum)
	}
	if got := seconds(h.quantileBound(0.50)); got != 50*time.Millisecond {
		t.Fatalf("p50 bound %v", got)
	}
	if got := h.quantileBound(0.99); !math.IsInf(got, 1) {
		t.Fatalf("p99 bound %v: want +Inf, past the last finite bucket", got)
	}
	if got := h.share(0.1); got != 0.91 {
		t.Fatalf("share within 0.1 s %v", got)
	}
}
