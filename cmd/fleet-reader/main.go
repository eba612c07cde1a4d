// Command fleet-reader serves a read-only view of one or more coordinators'
// fleets to any number of dashboards.
//
//	fleet-reader --coordinator URL [--coordinator URL ...] [flags]
//
// fleet-reader -h lists the flags, from the flag set it parses.
//
// It reads each coordinator's GET /v1/fleet with the admin token from
// EDGEINDEX_ADMIN_TOKEN. A host is named by its URL's host:port (the scheme's
// port when the URL has none).
//
// It is a thin main over package fleet, which reads the coordinators, keeps
// the reads, computes the rates and serves the routes: GET /v1/fleet,
// GET /v1/seat, GET /readyz and GET /, the dashboard. docs/api.md's "Fleet
// reader" section is their wire contract.
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
