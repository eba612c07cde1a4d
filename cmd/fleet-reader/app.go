package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/fleetcache"
)

// Defaults of Main's options. The address is fleetcache.DefaultAddr.
const (
	DefaultKeep       = 15 * time.Second
	DefaultTimeout    = 5 * time.Second
	DefaultDrainDelay = 1 * time.Second

	// shutdownTimeout bounds the whole stop, from the signal to Run returning.
	shutdownTimeout = 2 * time.Second
	// Seat reads are kept seatTTL, at most seatEntries of them.
	seatTTL     = 10 * time.Second
	seatEntries = 64
	// maxAnswer caps what is read of one coordinator's answer.
	maxAnswer = 32 << 20
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

	hosts      []host
	byName     map[string]host
	rateWindow int // RateReads, or its default
	maxLanes   int // MaxLanes, or its default
	client     *http.Client
	fleet      *fleetcache.Cache[*fleetRead]
	seats      *fleetcache.Seats[seatKey, *seatRead]
	srv        *fleetcache.Server
	base       context.Context // cancelled by Close: reads in flight stop
	cancel     context.CancelFunc
	// lastProblem says which hosts failed in the last fleet read ("" when
	// none did). Reads run one at a time, so it goes with the cache's
	// LastRead.
	lastProblem atomic.Pointer[string]

	mu  sync.Mutex
	ran bool
}

// host is one coordinator.
type host struct {
	name  string // host:port
	base  string // scheme://host[:port][/path], without a trailing slash
	admin *api.AdminClient
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
		fmt.Fprintf(fs.Output(), "usage: fleet-reader --coordinator URL [--coordinator URL ...] [--addr %s] [--keep %s] [--rate-reads %d]\n\n"+
			"Environment:\n  %s  the coordinators' admin token (required)\n\n"+
			"Example:\n  %[4]s=... fleet-reader --coordinator http://10.0.0.1:7070 --coordinator http://10.0.0.2:7070 --addr 0.0.0.0:8080\n\n"+
			"Flags:\n", fleetcache.DefaultAddr, DefaultKeep, DefaultRateReads, TokenEnv)
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
	_, err := parseHosts(m.Coordinators)
	return err
}

// parseHosts checks the coordinators' URLs and names their hosts.
func parseHosts(raw []string) ([]host, error) {
	if len(raw) == 0 {
		return nil, usagef("at least one coordinator URL is required")
	}
	seen := make(map[string]string, len(raw))
	hosts := make([]host, 0, len(raw))
	for _, s := range raw {
		u, err := url.Parse(s)
		if err != nil {
			return nil, usagef("coordinator URL %q: %v", s, err)
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return nil, usagef("coordinator URL %q: the scheme must be http or https", s)
		}
		if u.Hostname() == "" {
			return nil, usagef("coordinator URL %q has no host", s)
		}
		if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return nil, usagef("coordinator URL %q: give only scheme://host[:port][/path]", s)
		}
		port := u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
		name := net.JoinHostPort(u.Hostname(), port)
		if prev, dup := seen[name]; dup {
			return nil, usagef("coordinators %q and %q are the same host %s", prev, s, name)
		}
		seen[name] = s
		hosts = append(hosts, host{name: name, base: u.Scheme + "://" + u.Host + strings.TrimRight(u.EscapedPath(), "/")})
	}
	return hosts, nil
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

// open checks the options and builds the caches and the server.
func (m *Main) open() error {
	if m.Keep <= 0 || m.Timeout <= 0 {
		return usagef("--keep and --timeout must be positive")
	}
	if m.DrainDelay < 0 || m.DrainDelay >= shutdownTimeout {
		return usagef("--drain-delay must be from 0 to less than %s, not %s", shutdownTimeout, m.DrainDelay)
	}
	if m.Token == "" {
		return usagef("the admin token is empty: set %s", TokenEnv)
	}
	m.rateWindow = m.RateReads
	if m.rateWindow == 0 {
		m.rateWindow = DefaultRateReads
	}
	if m.rateWindow < 2 {
		return usagef("--rate-reads must be at least 2 (a rate needs two reads), not %d", m.RateReads)
	}
	m.maxLanes = m.MaxLanes
	if m.maxLanes == 0 {
		m.maxLanes = DefaultMaxLanes
	}
	if m.maxLanes < 0 {
		return usagef("--max-lanes must not be negative, not %d", m.MaxLanes)
	}
	hosts, err := parseHosts(m.Coordinators)
	if err != nil {
		return err
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 4
	m.client = &http.Client{
		Transport: transport,
		// A redirect is answered as it is: the token goes to no other place.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	m.hosts = hosts
	m.byName = make(map[string]host, len(hosts))
	for i := range hosts {
		hosts[i].admin, err = api.NewAdminClient(api.AdminConfig{BaseURL: hosts[i].base, Token: m.Token, HTTP: m.client, MaxAnswer: maxAnswer})
		if err != nil {
			return usagef("coordinator %s: %v", hosts[i].name, err)
		}
		m.byName[hosts[i].name] = hosts[i]
	}

	m.fleet, err = fleetcache.New(m.readFleet, (*fleetRead).allOK, fleetcache.Config{Keep: m.Keep, Timeout: m.Timeout, Clock: m.Clock})
	if err != nil {
		return err
	}
	m.seats, err = fleetcache.NewSeats(m.readSeat, nil, fleetcache.SeatConfig{
		TTL: seatTTL, MaxEntries: seatEntries, Timeout: m.Timeout, Clock: m.Clock,
	})
	if err != nil {
		return err
	}
	m.srv, err = fleetcache.NewServer(fleetcache.ServerConfig{
		Addr: m.Addr,
		Routes: []fleetcache.Route{
			{Path: "/v1/fleet", Handle: m.handleFleet},
			{Path: "/v1/seat", Handle: m.handleSeat},
			{Path: "/", Handle: m.handleDashboard},
		},
		Ready:           m.ready,
		DrainDelay:      m.DrainDelay,
		ShutdownTimeout: shutdownTimeout,
		Clock:           m.Clock,
		ErrorLog:        log.New(m.stderr(), "fleet-reader: http: ", log.LstdFlags),
	})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err) // the only thing it can refuse here is Addr
	}
	m.base, m.cancel = context.WithCancel(context.Background())
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
	names := make([]string, len(m.hosts))
	for i, h := range m.hosts {
		names[i] = h.name
	}
	fmt.Fprintf(m.stderr(), "fleet-reader: serving http://%s, reading %s\n", addr, strings.Join(names, ", "))
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
	if m.cancel == nil {
		return nil
	}
	m.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	err := errors.Join(m.fleet.Wait(ctx), m.seats.Wait(ctx))
	m.client.CloseIdleConnections()
	return err
}
