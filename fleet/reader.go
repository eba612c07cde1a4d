package fleet

import (
	"cmp"
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/fleetcache"
)

// Reader reads a fleet of coordinators: every coordinator's fleet at once,
// and one node's detail (a seat) from its coordinator. Coordinators is the
// Reader of this package.
type Reader interface {
	// Fleet returns a read of every coordinator and how it was served.
	Fleet(ctx context.Context) (Answer, error)
	// Seat returns a node's detail, read under the fleet read that Fleet
	// serves now.
	Seat(ctx context.Context, key SeatKey) (SeatAnswer, error)
}

// Defaults of Config, used when a field is zero.
const (
	DefaultKeep    = 15 * time.Second
	DefaultTimeout = 5 * time.Second
	// DefaultRateReads is how many kept fleet reads the rates cover.
	DefaultRateReads = 60
	// DefaultMaxLanes is the most lanes the rates follow, and the dashboard
	// shows. The history holds at most the window's reads of that many
	// lanes, whatever the coordinators answer: a fleet whose group names
	// changed on every read once grew the reader by a gigabyte over a
	// window. Lanes past the bound are counted, not kept.
	DefaultMaxLanes = 2000
)

const (
	// Seat reads are kept seatTTL, at most seatEntries of them.
	seatTTL     = 10 * time.Second
	seatEntries = 64
	// maxAnswer caps what is read of one coordinator's answer.
	maxAnswer = 32 << 20
	// closeTimeout bounds Close's wait for the reads in flight.
	closeTimeout = 2 * time.Second
)

// Config configures a Coordinators. Its zero value means the defaults, but
// for Coordinators and Token, which are required.
type Config struct {
	// Coordinators are the coordinators' base URLs,
	// scheme://host[:port][/path]; at least one. Each is named by its
	// host:port (see HostNames).
	Coordinators []string
	// Token is the coordinators' admin token.
	Token string
	// Keep is how long a fleet read is served as current; 0 means
	// DefaultKeep.
	Keep time.Duration
	// Timeout bounds one fleet read, and one seat read; 0 means
	// DefaultTimeout.
	Timeout time.Duration
	// RateReads is how many kept fleet reads the rates are computed over
	// (at least 2); 0 means DefaultRateReads.
	RateReads int
	// MaxLanes is the most lanes the rates follow and the dashboard shows
	// (the dashboard also shows at most that many nodes a coordinator);
	// 0 means DefaultMaxLanes. Fleet answers every lane.
	MaxLanes int
	// Clock is the clock; nil means clock.Real.
	Clock clock.Clock
}

// withDefaults returns c with its defaults set, or an error wrapping
// edgeindex.ErrInvalid.
func (c Config) withDefaults() (Config, error) {
	if c.Keep < 0 || c.Timeout < 0 {
		return c, edgeindex.Invalidf("Keep and Timeout cannot be negative")
	}
	if c.Token == "" {
		return c, edgeindex.Invalidf("the admin token is empty")
	}
	if c.RateReads < 0 || c.RateReads == 1 {
		return c, edgeindex.Invalidf("RateReads must be at least 2 (a rate needs two reads), not %d", c.RateReads)
	}
	if c.MaxLanes < 0 {
		return c, edgeindex.Invalidf("MaxLanes must not be negative, not %d", c.MaxLanes)
	}
	c.Keep = cmp.Or(c.Keep, DefaultKeep)
	c.Timeout = cmp.Or(c.Timeout, DefaultTimeout)
	c.RateReads = cmp.Or(c.RateReads, DefaultRateReads)
	c.MaxLanes = cmp.Or(c.MaxLanes, DefaultMaxLanes)
	if c.Clock == nil {
		c.Clock = clock.Real
	}
	return c, nil
}

// Coordinators reads the fleets of one or more coordinators through a
// stale-while-revalidate cache (fleetcache), with their rates, and serves
// them over HTTP (Handler, Server). Build it with New; Close it when done.
type Coordinators struct {
	cfg     Config
	hosts   []host
	byName  map[string]host
	client  *http.Client
	fleet   *fleetcache.Cache[*Read]
	seats   *fleetcache.Seats[SeatKey, *Seat]
	handler *fleetcache.Server
	base    context.Context // cancelled by Close: reads in flight stop
	cancel  context.CancelFunc
	// lastProblem says which hosts failed in the last fleet read ("" when
	// none did). Reads run one at a time, so it goes with the cache's
	// LastRead.
	lastProblem atomic.Pointer[string]
}

var _ Reader = (*Coordinators)(nil)

// host is one coordinator.
type host struct {
	name  string // host:port
	base  string // scheme://host[:port][/path], without a trailing slash
	admin *api.AdminClient
}

// New returns the reader of cfg's coordinators. It reads nothing yet: the
// first call of Fleet does. Its errors wrap edgeindex.ErrInvalid.
func New(cfg Config) (*Coordinators, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	hosts, err := parseHosts(cfg.Coordinators)
	if err != nil {
		return nil, err
	}
	c := &Coordinators{cfg: cfg, byName: make(map[string]host, len(hosts)), client: newClient()}
	for i := range hosts {
		hosts[i].admin, err = api.NewAdminClient(api.AdminConfig{BaseURL: hosts[i].base, Token: cfg.Token, HTTP: c.client, MaxAnswer: maxAnswer})
		if err != nil {
			return nil, edgeindex.Invalidf("coordinator %s: %v", hosts[i].name, err)
		}
		c.byName[hosts[i].name] = hosts[i]
	}
	c.hosts = hosts
	if err := c.openCaches(); err != nil {
		return nil, err
	}
	c.base, c.cancel = context.WithCancel(context.Background())
	return c, nil
}

// newClient is the client of the coordinators' reads.
func newClient() *http.Client {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 4
	return &http.Client{
		Transport: transport,
		// A redirect is answered as it is: the token goes to no other place.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// cacheClock is the caches' clock: nil, fleetcache's own wall clock, for
// the wall clock, which keeps a cache hit on its fast path (one
// monotonic read), else Config.Clock.
func (c *Coordinators) cacheClock() fleetcache.Clock {
	if c.cfg.Clock == clock.Real {
		return nil
	}
	return c.cfg.Clock
}

// openCaches builds the fleet and seat caches and the handler.
func (c *Coordinators) openCaches() error {
	var err error
	c.fleet, err = fleetcache.New(c.readFleet, (*Read).allOK, fleetcache.Config{Keep: c.cfg.Keep, Timeout: c.cfg.Timeout, Clock: c.cacheClock()})
	if err != nil {
		return err
	}
	c.seats, err = fleetcache.NewSeats(c.readSeat, nil, fleetcache.SeatConfig{
		TTL: seatTTL, MaxEntries: seatEntries, Timeout: c.cfg.Timeout, Clock: c.cacheClock(),
	})
	if err != nil {
		return err
	}
	c.handler, err = c.Server(fleetcache.ServerConfig{})
	return err
}

// HostNames checks coordinators' base URLs and returns the names of their
// hosts: host:port, the scheme's port when the URL has none. Its errors wrap
// edgeindex.ErrInvalid.
func HostNames(coordinators []string) ([]string, error) {
	hosts, err := parseHosts(coordinators)
	if err != nil {
		return nil, err
	}
	return names(hosts), nil
}

func names(hosts []host) []string {
	out := make([]string, len(hosts))
	for i, h := range hosts {
		out[i] = h.name
	}
	return out
}

// parseHosts checks the coordinators' URLs and names their hosts.
func parseHosts(raw []string) ([]host, error) {
	if len(raw) == 0 {
		return nil, edgeindex.Invalidf("at least one coordinator URL is required")
	}
	seen := make(map[string]string, len(raw))
	hosts := make([]host, 0, len(raw))
	for _, s := range raw {
		h, err := parseHost(s)
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[h.name]; dup {
			return nil, edgeindex.Invalidf("coordinators %q and %q are the same host %s", prev, s, h.name)
		}
		seen[h.name] = s
		hosts = append(hosts, h)
	}
	return hosts, nil
}

// parseHost checks one coordinator's URL and names its host.
func parseHost(s string) (host, error) {
	u, err := url.Parse(s)
	if err != nil {
		return host{}, edgeindex.Invalidf("coordinator URL %q: %v", s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return host{}, edgeindex.Invalidf("coordinator URL %q: the scheme must be http or https", s)
	}
	if u.Hostname() == "" {
		return host{}, edgeindex.Invalidf("coordinator URL %q has no host", s)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return host{}, edgeindex.Invalidf("coordinator URL %q: give only scheme://host[:port][/path]", s)
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	name := net.JoinHostPort(u.Hostname(), port)
	return host{name: name, base: u.Scheme + "://" + u.Host + strings.TrimRight(u.EscapedPath(), "/")}, nil
}

// Hosts returns the names of the coordinators' hosts, in Config's order.
func (c *Coordinators) Hosts() []string { return names(c.hosts) }

// Close stops the reads still in flight and waits for them (at most 2 s),
// then closes the idle connections to the coordinators. It is safe to call
// more than once.
func (c *Coordinators) Close() error {
	c.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	err := errors.Join(c.fleet.Wait(ctx), c.seats.Wait(ctx))
	c.client.CloseIdleConnections()
	return err
}
