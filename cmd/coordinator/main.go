// Command coordinator runs the edgeindex coordinator and manages its state.
//
//	coordinator serve  [--addr 127.0.0.1:7070] [--db URL] [--data DIR] [--source [NAME=]URL]... [--nntp-conns N] [--poll 1m]
//	                   [--repair-tries 3] [--repair-delay 5m] [--retry-delay 10s] [--lease-ttl 60s] [--id NAME]
//	                   [--newznab 127.0.0.1:5076] [--newznab-url URL] [--min-completion 100]
//	coordinator node add NAME | node rm NAME | node list
//	coordinator group add NAME [--provider P] [--ordered] [--range-size N] [--chunk-size N] [--plan tail,history] [--history N] [--margin M]
//	coordinator group plan NAME [--provider P] --plan tail,history [--history N] [--margin M] | group plan NAME [--provider P] --reset [--repair-tries 3]
//	coordinator range add GROUP FROM TO [--provider P] [--lane history|tail] [--capture]
//	coordinator range retry GROUP [--provider P] [--failed | ID...]
//	coordinator snapshot reset GROUP [--provider P] [--lane history|tail]
//	coordinator releases [list | build --once]
//	coordinator nzb ID [-o FILE]
//	coordinator user add NAME [--requests N] [--grabs N] | user rm NAME | user suspend NAME | user resume NAME | user list [--json]
//	coordinator status [--json]
//	coordinator demo [--articles N] [--workers N] [--range-size N] [--keep] [--serve] [--newznab ADDR]
//	coordinator help
//
// --source is synthetic (the default) or nntp://[user:pass@]host[:port]
// (nntps:// for TLS); the NNTP user and password may also come from
// EDGEINDEX_NNTP_USER and EDGEINDEX_NNTP_PASS. Repeated as NAME=URL, it
// names several providers, each with its own connections; a group read
// from provider P (--provider P) is stored as NAME@P, and the release
// builder merges the parts the providers' groups hold.
//
// With no arguments it serves. Flags may come before or after the
// positional arguments; --db, --data and the admin token may come from
// EDGEINDEX_DB, EDGEINDEX_DATA and EDGEINDEX_ADMIN_TOKEN. "help", or -h
// with any command, prints the usage with these variables and an example.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	m := NewMain(os.Stdout, os.Stderr)
	if err := m.Run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "coordinator:", err)
		os.Exit(exitCode(err))
	}
}
