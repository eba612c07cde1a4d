package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/fleet"
	"github.com/edgeindex/edgeindex/fleetcache"
)

// Defaults of Main's options. The address is fleetcache.DefaultAddr; the
// others are package fleet's defaults.
const (
	DefaultKeep       = fleet.DefaultKeep
	DefaultTimeout    = fleet.DefaultTimeout
	DefaultRateReads  = fleet.DefaultRateReads
	DefaultMaxLanes   = fleet.DefaultMaxLanes
	DefaultDrainDelay = 1 * time.Second

	// shutdownTimeout bounds the whole stop, from the signal to Run returning.
	shutdownTimeout = 2 * time.Second
	// TokenEnv names the environment variable that holds the admin token.
	TokenEnv = "EDGEINDEX_ADMIN_TOKEN"
)

// Sentinel errors of the command line.
var (
	// ErrUsage means the command line or the environment is wrong.
	ErrUsage = errors.New("usage")
	// ErrRunning means Run was called twice.
	ErrRunning = errors.New("fleet-reader: Run was already called")
)

func usagef(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUsage, fmt.Sprintf(format, args...))
}

// Main is the program: its options, and what it opened. Build it with
// NewMain, set it from the command line with ParseFlags (or set its fields),
// then Run it, then Close it.
type Main struct {
	// Coordinators are the coordinators' base URLs.
	Coordinators []string
	// Addr is where the reader listens.
	Addr string
	// Keep is how long a fleet read is served as current.
	Keep time.Duration
	// Timeout bounds one fleet read, and one seat read.
	Timeout time.Duration
	// DrainDelay is how long /readyz answers 503 before the server shuts
	// down; it must be less than 2 s.
	DrainDelay time.Duration
	// Token is the coordinators' admin token.
	Token string
	// RateReads is how many kept fleet reads the rates are computed over
	// (at least 2); 0 means DefaultRateReads.
	RateReads int
	// MaxLanes is the most lanes the rates follow and the dashboard shows
	// (the dashboard also shows at most that many nodes a coordinator);
	// 0 means DefaultMaxLanes. GET /v1/fleet answers every lane.
	MaxLanes int

	// Stdout receives the usage -h asks for.
	Stdout io.Writer
	// Stderr receives the log.
	Stderr io.Writer
	// Getenv reads the environment in ParseFlags; nil means os.Getenv.
	Getenv func(string) string
	// Clock is the clock; nil means clock.Real.
	Clock clock.Clock
	// OnListen, when set, is told the address once Run is listening.
	OnListen func(addr net.Addr)

	reader *fleet.Coordinators
	srv    *fleetcache.Server

	mu  sync.Mutex
	ran bool
}

// NewMain returns a Main with the default options, logging to stderr.
func NewMain() *Main {
	return &Main{
		Addr:       fleetcache.DefaultAddr,
		Keep:       DefaultKeep,
		Timeout:    DefaultTimeout,
		DrainDelay: DefaultDrainDelay,
		Stdout:     os.Stdout,
		Stderr:     os.Stderr,
	}
}

// ParseFlags sets the options from the command line and the token from
// EDGEINDEX_ADMIN_TOKEN. Errors wrap ErrUsage, or are flag.ErrHelp for -h,
// which prints the usage to Stdout (the command then exits 0).
func (m *Main) ParseFlags(args []string) error {
	fs := flag.NewFlagSet("fleet-reader", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned; only -h prints the usage
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: fleet-reader --coordinator URL [--coordinator URL ...] [flags]\n\n"+
			"Environment:\n  %s  the coordinators' admin token (required)\n\n"+
			"Example:\n  %[1]s=... fleet-reader --coordinator http://10.0.0.1:7070 --coordinator http://10.0.0.2:7070 --addr 0.0.0.0:8080\n\n"+
			"Flags:\n", TokenEnv)
		fs.PrintDefaults()
	}
	var coords []string
	fs.Func("coordinator", "a coordinator's base URL, such as http://127.0.0.1:7070 (repeat for more)", func(s string) error {
		coords = append(coords, s)
		return nil
	})
	fs.StringVar(&m.Addr, "addr", m.Addr, "the address to listen on")
	fs.DurationVar(&m.Keep, "keep", m.Keep, "how long a fleet read is served as current")
	fs.DurationVar(&m.Timeout, "timeout", m.Timeout, "how long one read of the coordinators may take")
	fs.IntVar(&m.RateReads, "rate-reads", m.RateReads, "how many kept reads the rates and their sparklines cover (0: 60)")
	fs.IntVar(&m.MaxLanes, "max-lanes", m.MaxLanes, "the most lanes the rates follow and the dashboard shows (0: 2000)")
	fs.DurationVar(&m.DrainDelay, "drain-delay", m.DrainDelay, "how long /readyz answers 503 before shutting down (less than 2s)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(m.stdout())
			fs.Usage()
			return err
		}
		return usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if len(coords) == 0 {
		return usagef("at least one --coordinator URL is required")
	}
	m.Coordinators = coords
	getenv := m.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	m.Token = getenv(TokenEnv)
	if m.Token == "" {
		return usagef("%s is not set: the coordinators' admin token is required", TokenEnv)
	}
	if _, err := fleet.HostNames(m.Coordinators); err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	return nil
}

func (m *Main) stdout() io.Writer {
	if m.Stdout == nil {
		return io.Discard
	}
	return m.Stdout
}

func (m *Main) stderr() io.Writer {
	if m.Stderr == nil {
		return io.Discard
	}
	return m.Stderr
}

// check checks the options set by hand, as the flags name them.
func (m *Main) check() error {
	if m.Keep <= 0 || m.Timeout <= 0 {
		return usagef("--keep and --timeout must be positive")
	}
	if m.DrainDelay < 0 || m.DrainDelay >= shutdownTimeout {
		return usagef("--drain-delay must be from 0 to less than %s, not %s", shutdownTimeout, m.DrainDelay)
	}
	if m.Token == "" {
		return usagef("the admin token is empty: set %s", TokenEnv)
	}
	if m.RateReads < 0 || m.RateReads == 1 {
		return usagef("--rate-reads must be at least 2 (a rate needs two reads), not %d", m.RateReads)
	}
	if m.MaxLanes < 0 {
		return usagef("--max-lanes must not be negative, not %d", m.MaxLanes)
	}
	return nil
}

// open checks the options and builds the reader and its server.
func (m *Main) open() error {
	if err := m.check(); err != nil {
		return err
	}
	var err error
	m.reader, err = fleet.New(fleet.Config{
		Coordinators: m.Coordinators,
		Token:        m.Token,
		Keep:         m.Keep,
		Timeout:      m.Timeout,
		RateReads:    m.RateReads,
		MaxLanes:     m.MaxLanes,
		Clock:        m.Clock,
	})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	m.srv, err = m.reader.Server(fleetcache.ServerConfig{
		Addr:            m.Addr,
		DrainDelay:      m.DrainDelay,
		ShutdownTimeout: shutdownTimeout,
		ErrorLog:        log.New(m.stderr(), "fleet-reader: http: ", log.LstdFlags),
	})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err) // the only thing it can refuse here is Addr
	}
	return nil
}

// Run listens on Addr, then serves until ctx is done: /readyz turns 503 for
// DrainDelay, then the server shuts down, and Run returns nil within 2 s of
// ctx being done. A busy port or bad options are returned at once, before
// anything is served. Wire ctx with signal.NotifyContext for SIGTERM and
// SIGINT; call Close after Run.
func (m *Main) Run(ctx context.Context) error {
	m.mu.Lock()
	if m.ran {
		m.mu.Unlock()
		return ErrRunning
	}
	m.ran = true
	m.mu.Unlock()

	if err := m.open(); err != nil {
		return err
	}
	addr, err := m.srv.Listen()
	if err != nil {
		return err
	}
	fmt.Fprintf(m.stderr(), "fleet-reader: serving http://%s, reading %s\n", addr, strings.Join(m.reader.Hosts(), ", "))
	if m.OnListen != nil {
		m.OnListen(addr)
	}
	err = m.srv.Serve(ctx)
	fmt.Fprintln(m.stderr(), "fleet-reader: stopped")
	return err
}

// Close stops the reads still in flight and waits for them (at most 2 s),
// then closes the idle connections to the coordinators. It is safe to call
// more than once, and without Run.
func (m *Main) Close() error {
	if m.reader == nil {
		return nil
	}
	return m.reader.Close()
}
