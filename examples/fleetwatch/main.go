// Command fleetwatch embeds the fleet reader (package fleet) in a small
// tool: it watches one or more coordinators' fleets and prints a line per
// coordinator per look, with its articles/s once two reads are kept. Many
// copies of it, or many goroutines of one, cost each coordinator one read
// per --keep at most: every look is answered from the reader's cache, and
// a stale one starts exactly one refresh in the background.
//
//	EDGEINDEX_ADMIN_TOKEN=... fleetwatch --coordinator URL [--coordinator URL ...] [--every 2s] [--keep 5s] [--once]
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

	"github.com/edgeindex/edgeindex/fleet"
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
	cfg, every, once, err := parseFlags(args, out)
	if err != nil || cfg == nil {
		return err
	}
	cfg.Token = token
	r, err := fleet.New(*cfg)
	if err != nil {
		return err
	}
	defer r.Close()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if err := look(ctx, r, out); err != nil {
			return nil // ctx is done
		}
		if once {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// parseFlags reads the command line; a nil Config and no error mean -h,
// whose usage went to out.
func parseFlags(args []string, out io.Writer) (cfg *fleet.Config, every time.Duration, once bool, err error) {
	fs := flag.NewFlagSet("fleetwatch", flag.ContinueOnError)
	var coords []string
	fs.Func("coordinator", "a coordinator's URL (required; repeat for more)", func(s string) error {
		coords = append(coords, s)
		return nil
	})
	fs.DurationVar(&every, "every", 2*time.Second, "how often to look")
	keep := fs.Duration("keep", 5*time.Second, "how long a read is current")
	fs.BoolVar(&once, "once", false, "look once and exit")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: fleetwatch --coordinator URL [--coordinator URL ...] [--every 2s] [--keep 5s] [--once]\n\n"+
			"Environment:\n  EDGEINDEX_ADMIN_TOKEN  the coordinators' admin token (required)\n\n"+
			"Example:\n  EDGEINDEX_ADMIN_TOKEN=... fleetwatch --coordinator http://127.0.0.1:7070 --every 5s\n\nFlags:\n")
		fs.PrintDefaults()
	}
	fs.SetOutput(io.Discard) // errors are returned; only -h prints the usage
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(out)
			fs.Usage()
			return nil, 0, false, nil
		}
		return nil, 0, false, err
	}
	if len(coords) == 0 {
		return nil, 0, false, errors.New("--coordinator and EDGEINDEX_ADMIN_TOKEN are required")
	}
	return &fleet.Config{Coordinators: coords, Keep: *keep}, every, once, nil
}

// look reads the fleet and prints a line per coordinator. It fails only
// when ctx is done.
func look(ctx context.Context, r fleet.Reader, out io.Writer) error {
	a, err := r.Fleet(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		fmt.Fprintf(out, "%s  error: %v\n", time.Now().UTC().Format(time.TimeOnly), err)
		return nil
	}
	for _, h := range a.Read.Hosts() {
		fmt.Fprintln(out, line(h, a.Read.Rates(), a.Meta))
	}
	return nil
}

// line sums a coordinator's part of a read up: nodes, leases, ranges by
// state, its articles/s, and the read's age.
func line(h fleet.Host, rates *fleet.Rates, meta fleetcache.Meta) string {
	if h.Fleet == nil {
		return fmt.Sprintf("%s  %s: %s", h.Host, h.Status, h.Detail)
	}
	f := h.Fleet
	leases := 0
	for _, n := range f.Nodes {
		leases += len(n.Leases)
	}
	var states []string
	for st, n := range f.Ranges {
		states = append(states, fmt.Sprintf("%s %d", st, n))
	}
	sort.Strings(states)
	rate := "–"
	if hr := rates.Hosts[h.Host]; hr != nil && hr.ArticlesPerSecond != nil {
		rate = fmt.Sprintf("%.1f", *hr.ArticlesPerSecond)
	}
	fresh := "current"
	if meta.Stale {
		fresh = "stale"
	}
	return fmt.Sprintf("%s  %s  nodes %d  leases %d  ranges: %s  spool %d B  %s articles/s  (%s, %.0fs old)",
		h.Host, f.At.Format(time.TimeOnly), len(f.Nodes), leases, strings.Join(states, ", "), f.SpoolBytes, rate, fresh, meta.CacheAgeSeconds)
}
