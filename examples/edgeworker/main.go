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

	"github.com/edgeindex/edgeindex/collate"
	"github.com/edgeindex/edgeindex/edge"
	"github.com/edgeindex/edgeindex/lease"
)

// TokenEnv is the environment variable that holds the node token.
const TokenEnv = "EDGEINDEX_NODE_TOKEN"

// usage is the head of -h's text; the flags' defaults follow it.
const usage = `usage: edgeworker --coordinator URL [--lanes history,tail] [--flush-incomplete] [--max-binaries N]

Leases ranges of a coordinator's groups, collates their overview lines into
binaries (package collate) and posts them as items, until SIGINT or SIGTERM.

Environment:
  ` + TokenEnv + `  the node token (required); coordinator node add NAME prints one

Example:
  ` + TokenEnv + `=3f9c... edgeworker --coordinator http://127.0.0.1:7070 --lanes history,tail

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
	coordinator string
	token       string
	lanes       []lease.Lane
	collate     collate.Config
}

func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("edgeworker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.coordinator, "coordinator", "", "the coordinator's URL, such as http://127.0.0.1:7070 (required)")
	lanes := fs.String("lanes", "history,tail", `lanes of ordered groups to work, comma-separated, or "none"`)
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
	if o.coordinator == "" {
		return o, fmt.Errorf("%w: --coordinator is required", errUsage)
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
	client, err := edge.NewClient(edge.Config{BaseURL: o.coordinator, Token: o.token, Logger: log})
	if err != nil {
		return err
	}
	w, err := edge.NewWorker(edge.WorkerConfig{Client: client, Handler: col, Lanes: o.lanes, Logger: log})
	if err != nil {
		return err
	}
	log.Info("edgeworker: started", "coordinator", o.coordinator, "lanes", o.lanes, "flushIncomplete", o.collate.FlushIncomplete)
	err = w.Run(ctx)
	ws, cs := w.Stats(), col.Stats()
	log.Info("edgeworker: stopped", "ranges", ws.Ranges, "batches", ws.Batches, "headers", ws.Headers, "items", ws.Items,
		"complete", cs.Completed, "flushed", cs.Flushed, "evicted", cs.Evicted, "window", cs.Window, "err", err)
	return err
}
