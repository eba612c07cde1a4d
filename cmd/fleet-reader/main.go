// Command fleet-reader serves a read-only view of one or more coordinators'
// fleets to any number of dashboards.
//
//	fleet-reader --coordinator URL [--coordinator URL ...] [--addr 127.0.0.1:7071] [--keep 15s]
//	             [--timeout 5s] [--drain-delay 1s] [--rate-reads 60]
//
// It reads each coordinator's GET /v1/fleet with the admin token from
// EDGEINDEX_ADMIN_TOKEN. A host is named by its URL's host:port (the scheme's
// port when the URL has none).
//
// Routes (GET and HEAD only: any other method gets 405 with
// "Allow: GET, HEAD", an unknown path 404, errors {"error": "..."}):
//
//   - GET /v1/fleet: {"polledAt", "hosts": [{"host", "status", "detail"?,
//     "fleet"?}], "rates", "served": {"servedAt", "polledAt",
//     "cacheAgeSeconds", "keptForSeconds", "fromCache", "stale",
//     "refreshing"}}. A host's status is "ok", "unreachable" (a network error
//     or no answer within --timeout), "unauthorized" (the coordinator answered
//     401 or 403) or "error" (any other status, or an answer that is not a
//     fleet).
//   - "rates": {"window", "reads", "hosts": {HOST: {"at": [...],
//     "articlesPerSecond", "average", "series": [...]}}, "lanes": [{"host",
//     "groupId", "group", "lane", "headers", "articlesPerSecond", "average",
//     "series": [...], "lag", "lagSeries": [...]}]}: articles/s per
//     coordinator and per lane over the last --rate-reads kept reads. Every
//     series has one entry per kept read, aligned with its host's "at" (the
//     coordinator's own `at` of each read); a rate entry is the lane's
//     headers gained since the read before over the time between the two
//     `at`s, null for the first read and for a step whose counter went back
//     (a reset), whose time did not move forward, or whose lane is new. A
//     host's rate is the sum of its lanes' that have one. "articlesPerSecond"
//     is the last step's; "average" is over the steps with a rate. "lag" is a
//     tail lane's FleetGroup.Plan.Lag, null when its group has no polled plan.
//   - GET /v1/seat?key=HOST/NODE[&cursor=C]: {"host", "node", "served"}, where
//     node is the node's detail from that host's GET /v1/nodes/{name}. 400 when
//     key is missing or malformed, 404 when the host is not one of the
//     --coordinator hosts or the coordinator does not know the node, 502 when
//     the coordinator fails, 504 when it does not answer in time.
//   - GET /readyz: {"schema": "edgeindex.fleet-reader.ready/v1", "ready",
//     "meaning", "startedAt", "servedAt", "lastFleetRead"}. It calls no
//     coordinator, and answers 503 while the process drains.
//   - GET /: an HTML dashboard of the same read: the hosts and their status,
//     each node with its leases and a progress bar per range, each group with
//     its lanes, the articles/s of each coordinator and lane and each tail's
//     lag, with inline SVG sparklines drawn on the server (no script). It
//     reloads itself every --keep (at least 2 s, at most 60 s).
//
// One fleet read reads every coordinator at once, within --timeout. The first
// request waits for it; later requests are answered at once from the last
// good read, current within --keep and labelled stale after it, when exactly
// one background read starts. Nothing polls on a timer. A read in which any
// host failed is never kept: it is answered to the request that waited for
// it (200, with Cache-Control: no-store), and the next request reads again;
// once a good read exists, a failed refresh leaves it served, still stale.
// Seat reads are kept 10 s, at most 64 of them, each only for the fleet read
// it was made under.
//
// Rates need no timer either: a read that is kept adds its sample to the last
// --rate-reads (0 means 60, at least 2), and the rates are computed and
// encoded then, once; a read that is not kept adds nothing, so the next kept
// read's step spans it. A rate appears once two reads are kept.
//
// On SIGTERM or SIGINT, /readyz turns 503 for --drain-delay, then the server
// shuts down gracefully, and the process exits 0 within 2 s.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	m := NewMain()
	if err := m.ParseFlags(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "fleet-reader:", err)
		os.Exit(2)
	}
	err := m.Run(ctx)
	if cerr := m.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet-reader:", err)
		os.Exit(1)
	}
}
