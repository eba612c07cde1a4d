// Command fleet-reader serves a read-only view of one or more coordinators'
// fleets to any number of dashboards.
//
//	fleet-reader --coordinator URL [--coordinator URL ...] [--addr 127.0.0.1:7071] [--keep 15s]
//	             [--timeout 5s] [--drain-delay 1s]
//
// It reads each coordinator's GET /v1/fleet with the admin token from
// EDGEINDEX_ADMIN_TOKEN. A host is named by its URL's host:port (the scheme's
// port when the URL has none).
//
// Routes (GET and HEAD only: any other method gets 405 with
// "Allow: GET, HEAD", an unknown path 404, errors {"error": "..."}):
//
//   - GET /v1/fleet: {"polledAt", "hosts": [{"host", "status", "detail"?,
//     "fleet"?}], "served": {"servedAt", "polledAt", "cacheAgeSeconds",
//     "keptForSeconds", "fromCache", "stale", "refreshing"}}. A host's status
//     is "ok", "unreachable" (a network error or no answer within --timeout),
//     "unauthorized" (the coordinator answered 401 or 403) or "error" (any
//     other status, or an answer that is not a fleet).
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
//     its lanes. It reloads itself every --keep (at least 2 s, at most 60 s).
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
