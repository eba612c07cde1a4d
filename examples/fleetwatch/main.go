// Command fleetwatch embeds fleetcache in a small tool: it watches one
// coordinator's fleet and prints a line per look. Many copies of it, or
// many goroutines of one, cost the coordinator one read per --keep at most:
// every look is answered from the cache, and a stale one starts exactly
// one refresh in the background.
//
//	EDGEINDEX_ADMIN_TOKEN=... fleetwatch --coordinator http://127.0.0.1:7070 [--every 2s] [--keep 5s] [--once]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/fleetcache"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv("EDGEINDEX_ADMIN_TOKEN"), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fleetwatch:", err)
		os.Exit(1)
	}
}

// run parses args and watches until ctx ends (or once, with --once). -h
// prints the usage to out and returns nil.
func run(ctx context.Context, args []string, token string, out io.Writer) error {
	fs := flag.NewFlagSet("fleetwatch", flag.ContinueOnError)
	base := fs.String("coordinator", "", "the coordinator's URL (required)")
	every := fs.Duration("every", 2*time.Second, "how often to look")
	keep := fs.Duration("keep", 5*time.Second, "how long a read is current")
	once := fs.Bool("once", false, "look once and exit")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: fleetwatch --coordinator URL [--every 2s] [--keep 5s] [--once]\n\n"+
			"Environment:\n  EDGEINDEX_ADMIN_TOKEN  the coordinator's admin token (required)\n\n"+
			"Example:\n  EDGEINDEX_ADMIN_TOKEN=... fleetwatch --coordinator http://127.0.0.1:7070 --every 5s\n\nFlags:\n")
		fs.PrintDefaults()
	}
	fs.SetOutput(io.Discard) // errors are returned; only -h prints the usage
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(out)
			fs.Usage()
			return nil
		}
		return err
	}
	if *base == "" || token == "" {
		return errors.New("--coordinator and EDGEINDEX_ADMIN_TOKEN are required")
	}
	admin, err := api.NewAdminClient(api.AdminConfig{BaseURL: *base, Token: token})
	if err != nil {
		return err
	}
	cache, err := fleetcache.New(reader(admin), nil, fleetcache.Config{Keep: *keep})
	if err != nil {
		return err
	}
	defer cache.Wait(context.Background())
	tick := time.NewTicker(*every)
	defer tick.Stop()
	for {
		a, err := cache.Get(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			fmt.Fprintf(out, "%s  error: %v\n", time.Now().UTC().Format(time.TimeOnly), err)
		} else {
			fmt.Fprintln(out, line(a))
		}
		if *once {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// reader reads GET /v1/fleet with the admin client.
func reader(admin *api.AdminClient) fleetcache.ReadFunc[api.Fleet] {
	return func(ctx context.Context, _ api.Fleet) (api.Fleet, error) {
		return admin.Fleet(ctx)
	}
}

// line sums a read up: nodes, leases, ranges by state, and its age.
func line(a fleetcache.Answer[api.Fleet]) string {
	f := a.Value
	leases := 0
	for _, n := range f.Nodes {
		leases += len(n.Leases)
	}
	var states []string
	for st, n := range f.Ranges {
		states = append(states, fmt.Sprintf("%s %d", st, n))
	}
	sort.Strings(states)
	fresh := "current"
	if a.Meta.Stale {
		fresh = "stale"
	}
	return fmt.Sprintf("%s  nodes %d  leases %d  ranges: %s  spool %d B  (%s, %.0fs old)",
		f.At.Format(time.TimeOnly), len(f.Nodes), leases, strings.Join(states, ", "), f.SpoolBytes, fresh, a.Meta.CacheAgeSeconds)
}
