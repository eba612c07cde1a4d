// Command coordinator runs the edgeindex coordinator and manages its state.
//
//	coordinator serve  [--addr 127.0.0.1:7070] [--db URL] [--data DIR] [--source URL] [--lease-ttl 60s]
//	coordinator node add NAME | node rm NAME | node list
//	coordinator group add NAME [--ordered] [--range-size N] [--chunk-size N]
//	coordinator range add GROUP FROM TO [--lane history|tail] [--capture]
//	coordinator range retry GROUP [--failed | ID...]
//	coordinator status [--json]
//	coordinator demo [--articles N] [--workers N]
//
// With no arguments it serves. Flags may come before or after the
// positional arguments; --db, --data and the admin token may come from
// EDGEINDEX_DB, EDGEINDEX_DATA and EDGEINDEX_ADMIN_TOKEN.
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
