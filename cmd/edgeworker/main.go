package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/collate"
	"github.com/edgeindex/edgeindex/edge"
	"github.com/edgeindex/edgeindex/lease"
)

// TokenEnv is the environment variable that holds the node token.
const TokenEnv = "EDGEINDEX_NODE_TOKEN"

// CoordinatorEnv is the environment variable that lists the coordinators,
// comma-separated, when no --coordinator is given.
const CoordinatorEnv = "EDGEINDEX_COORDINATOR"

// usage is the head of -h's text; the flags' defaults follow it.
const usage = `usage: edgeworker --coordinator URL [--coordinator URL ...] [--lanes history,tail] [--flush-incomplete] [--max-binaries N]

Leases ranges of a coordinator's groups, collates their overview lines into
binaries (package collate) and posts them as items, until SIGINT or SIGTERM.
With several coordinators of one database it talks to the first and moves
to the next when one fails (a network error, a 5xx).

Environment:
  ` + TokenEnv + `   the node token (required); coordinator node add NAME prints one
  ` + CoordinatorEnv + `  the coordinators' URLs, comma-separated, when --coordinator is not given

Example:
  ` + TokenEnv + `=3f9c... edgeworker --coordinator http://127.0.0.1:7070 --lanes history,tail
  ` + CoordinatorEnv + `=http://10.0.0.1:7070,http://10.0.0.2:7070 ` + TokenEnv + `=3f9c... edgeworker

Flags:
`

// errUsage marks an error in the command line; it exits with status 2.
var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o, err := parseFlags(os.Args[1:], os.Getenv, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err == nil {
		err = run(ctx, o, os.Stderr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "edgeworker:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// options is the parsed command line.
type options struct {
	coordinator string   // the first coordinator
	failover    []string // the others, in order
	token       string
	lanes       []lease.Lane
	ranges      int // ranges of unordered groups held at once (edge.WorkerConfig.Ranges)
	collate     collate.Config
}

// urls is a flag that may be repeated, each value a URL or a
// comma-separated list of them.
type urls []string

func (u *urls) String() string { return strings.Join(*u, ",") }

func (u *urls) Set(v string) error {
	for s := range strings.SplitSeq(v, ",") {
		if s = strings.TrimSpace(s); s == "" {
			return errors.New("an empty URL")
		}
		*u = append(*u, s)
	}
	return nil
}

func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("edgeworker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	var coords urls
	fs.Var(&coords, "coordinator", "the `URL` of a coordinator, such as http://127.0.0.1:7070 (required; repeated or comma-separated\n"+
		"for several coordinators of one database, tried in order when one fails; default $"+CoordinatorEnv+")")
	lanes := fs.String("lanes", "history,tail", `lanes of ordered groups to work, comma-separated, or "none"`)
	fs.IntVar(&o.ranges, "ranges", 1, fmt.Sprintf("ranges of unordered groups held and worked at once, leased in one call and their final batches\n"+
		"posted in one (1 to %d; more than 1 only pays where ranges are a chunk or so)", api.MaxLeases))
	fs.BoolVar(&o.collate.FlushIncomplete, "flush-incomplete", false,
		"post the incomplete binaries of each range at its end (see the package docs)")
	fs.IntVar(&o.collate.MaxBinaries, "max-binaries", collate.DefaultMaxBinaries,
		"the most incomplete binaries held; the oldest beyond it are posted as incomplete items")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if len(coords) == 0 && getenv(CoordinatorEnv) != "" {
		if err := coords.Set(getenv(CoordinatorEnv)); err != nil {
			return o, fmt.Errorf("%w: %s: %w", errUsage, CoordinatorEnv, err)
		}
	}
	if len(coords) == 0 {
		return o, fmt.Errorf("%w: --coordinator (or %s) is required", errUsage, CoordinatorEnv)
	}
	o.coordinator, o.failover = coords[0], coords[1:]
	if len(o.failover) == 0 {
		o.failover = nil
	}
	if o.token = getenv(TokenEnv); o.token == "" {
		return o, fmt.Errorf("%w: %s is not set", errUsage, TokenEnv)
	}
	if *lanes != "none" && *lanes != "" {
		for _, s := range strings.Split(*lanes, ",") {
			l, err := lease.ParseLane(strings.TrimSpace(s))
			if err != nil || s == "" {
				return o, fmt.Errorf("%w: --lanes: history or tail, not %q", errUsage, s)
			}
			o.lanes = append(o.lanes, l)
		}
	}
	if o.ranges < 1 || o.ranges > api.MaxLeases {
		return o, fmt.Errorf("%w: --ranges must be 1 to %d", errUsage, api.MaxLeases)
	}
	if o.collate.MaxBinaries < 1 {
		return o, fmt.Errorf("%w: --max-binaries must be at least 1", errUsage)
	}
	return o, nil
}

// run works until ctx is cancelled, logging to logw.
func run(ctx context.Context, o options, logw io.Writer) error {
	log := slog.New(slog.NewTextHandler(logw, nil))
	col, err := collate.New(o.collate)
	if err != nil {
		return err
	}
	client, err := edge.NewClient(edge.Config{BaseURL: o.coordinator, Failover: o.failover, Token: o.token, Logger: log})
	if err != nil {
		return err
	}
	w, err := edge.NewWorker(edge.WorkerConfig{Client: client, Handler: col, Lanes: o.lanes, Ranges: o.ranges, Logger: log})
	if err != nil {
		return err
	}
	log.Info("edgeworker: started", "coordinator", o.coordinator, "failover", o.failover, "lanes", o.lanes, "ranges", o.ranges,
		"flushIncomplete", o.collate.FlushIncomplete)
	err = w.Run(ctx)
	ws, cs := w.Stats(), col.Stats()
	log.Info("edgeworker: stopped", "ranges", ws.Ranges, "batches", ws.Batches, "headers", ws.Headers, "items", ws.Items,
		"complete", cs.Completed, "flushed", cs.Flushed, "evicted", cs.Evicted, "window", cs.Window, "err", err)
	return err
}
