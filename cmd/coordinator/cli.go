package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"strings"
	"time"

	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// Main is the program: its flags, its state, and what it opened.
type Main struct {
	Stdout, Stderr io.Writer

	// Options shared by the commands.
	DB   string
	Data string
	// Sources are serve's --source flags: URL for the default provider,
	// NAME=URL for a named one; none is the synthetic source.
	Sources sourceFlags
	Addr    string
	TTL     time.Duration
	// NNTPConns is an NNTP account's connections in all, the budget the
	// coordinators sharing the database share, for each source URL
	// without a conns parameter (a URL's conns wins); 0 leaves those to
	// the nntp package's default.
	NNTPConns int
	// Poll is how often the provider's watermarks are read to plan ranges.
	Poll time.Duration
	// Store tunes the database: repair tries and delay, from serve's flags.
	Store sqlstore.Config
	// ID is this coordinator's identity as the owner of chunk claims
	// (serve --id). Empty: the one kept in <data>/coordinator.id, made on
	// the first start.
	ID string
	// Releases runs the release builder in serve (--releases, on by
	// default); Release holds its window and interval.
	Releases bool
	Release  release.Config
	// PostProc runs post-processing in serve (--postproc, on by default,
	// for NNTP sources); BodyConns is each NNTP source's share of its
	// connections for article bodies (--body-conns).
	PostProc  bool
	BodyConns int
	// ClaimTTL is how long a chunk claim holds while its fetch runs
	// (--claim-ttl; 0: the prefetcher's default, 2m): a coordinator that
	// dies leaves the chunks it was fetching to the others after it.
	ClaimTTL time.Duration
	// Storage is where serve keeps chunks and snapshots (--storage): ""
	// for the data directory, or s3://BUCKET/PREFIX for a bucket that
	// coordinators on several machines share.
	Storage string
	// Newznab is the address of the Newznab API and the search page
	// (--newznab; empty: off), NewznabURL the base URL its links carry,
	// and MinCompletion the percent of its parts a release needs to be
	// listed there.
	Newznab, NewznabURL string
	MinCompletion       int
	// Pprof is the address of Go's profiles, net/http/pprof's
	// /debug/pprof/ (serve --pprof; empty: off).
	Pprof string

	// Ready, when set, is told the address serve listens on; NewznabReady
	// the address of --newznab.
	Ready, NewznabReady func(addr string)

	store *sqlstore.Store
}

// NewMain returns a Main writing to stdout and stderr.
func NewMain(stdout, stderr io.Writer) *Main {
	return &Main{Stdout: stdout, Stderr: stderr}
}

// Run runs the command that args name. "help", -h alone, or -h with a
// command prints the usage, of every command or of that one.
func (m *Main) Run(ctx context.Context, args []string) error {
	defer m.Close()
	if len(args) > 0 && (args[0] == "help" || len(args) == 1 && isHelpFlag(args[0])) {
		return m.help(args[1:])
	}
	c, rest, err := findCommand(args)
	if errors.Is(err, flag.ErrHelp) {
		return m.printCommands(args[0])
	}
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	run := c.setup(m, fs)
	pos, err := parse(fs, rest)
	if errors.Is(err, flag.ErrHelp) {
		return m.printCommand(c)
	}
	if err != nil {
		return err
	}
	return run(ctx, pos)
}

// isHelpFlag reports whether arg asks for the usage.
func isHelpFlag(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help" || arg == "--h"
}

// parse parses flags wherever they stand among the positional arguments.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err // Run prints the usage
			}
			return nil, usagef("%s: %v", fs.Name(), err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// commonFlags adds the flags every command that opens the database takes.
func (m *Main) commonFlags(fs *flag.FlagSet) {
	fs.StringVar(&m.DB, "db", os.Getenv("EDGEINDEX_DB"), "the database, a `URL`: sqlite://PATH or postgres://... (default sqlite://<data>/edgeindex.db)")
	fs.StringVar(&m.Data, "data", envOr("EDGEINDEX_DATA", defaultData), "the `directory` of the database, spool, corpus, snapshots and admin.token")
}

// defaultData is the data directory when neither --data nor
// EDGEINDEX_DATA names one.
const defaultData = "./edgeindex-data"

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// printJSON prints v as indented JSON: what a command's --json prints.
func (m *Main) printJSON(v any) error {
	enc := json.NewEncoder(m.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Close closes what Run opened.
func (m *Main) Close() error {
	if m.store != nil {
		err := m.store.Close()
		m.store = nil
		return err
	}
	return nil
}

// noArgs refuses positional arguments for a command that takes none.
func noArgs(name string, pos []string) error {
	if len(pos) > 0 {
		return usagef("%s takes no arguments, not %q", name, pos)
	}
	return nil
}

// oneArg returns the one positional argument a command takes.
func oneArg(name, what string, pos []string) (string, error) {
	if len(pos) != 1 {
		return "", usagef("%s takes one argument, %s; see coordinator %s -h", name, what, name)
	}
	return pos[0], nil
}

// joinWords is words joined by ", ".
func joinWords(words []string) string { return strings.Join(words, ", ") }
