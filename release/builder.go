package release

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/usenet"
)

// Defaults of Config.
const (
	// DefaultInterval is how long Run waits after it has read the whole
	// feed before it reads again.
	DefaultInterval = 5 * time.Second
	// DefaultWindow: a file joins a release of its set and poster posted
	// within 6 hours of it. A release takes hours to post; a repost of the
	// same name a day later is another release.
	DefaultWindow = 6 * time.Hour
	// DefaultPageSize is how many items of the feed one transaction
	// consumes.
	DefaultPageSize = 1000
	// DefaultShare is the most of its time a builder that is behind the
	// feed spends applying pages: half. It then waits as long as each page
	// took, so the workers' calls, which share the database, keep the rest.
	DefaultShare = 0.5
	// MinShare is the smallest Share: a wait is at most 99 times its page,
	// and a tiny Share cannot overflow the wait's Duration.
	MinShare = 0.01
)

// Config configures a Builder. Store is required; the zero value of every
// other field means its default.
type Config struct {
	Store Store
	// Feed is the results feed; nil means Store, which must then be one
	// (sqlstore's Store is both).
	Feed Feed
	// Consumer names the cursor in the store. Builders with one name share
	// the work of one feed, each page consumed by exactly one of them.
	// Default DefaultConsumer, or "releases/GROUP" with Group.
	Consumer string
	// Group, when set, consumes only that group's items, with a cursor of
	// its own (a group's feed pages differ from the whole feed's).
	Group string
	// Interval is how long Run waits once it has caught up. Default
	// DefaultInterval.
	Interval time.Duration
	// Window is how far apart in posting date a release's files may be.
	// Default DefaultWindow.
	Window time.Duration
	// PageSize is how many items one transaction consumes, at most
	// 10000. Default DefaultPageSize.
	PageSize int
	// Share bounds the builder's use of the database while it is behind
	// the feed: after a page that took d to apply, it waits
	// d×(1/Share−1), at most the Interval, before the next, so it spends
	// at most Share of its time applying pages. 1 means no wait; at least
	// MinShare. Default DefaultShare.
	Share float64
	// Clock tells the time of files whose Date header does not parse,
	// times pages and waits the Interval and Share's waits. Nil means
	// clock.Real.
	Clock  clock.Clock
	Logger *slog.Logger
}

func (c *Config) validate() error {
	if c.Store == nil {
		return edgeindex.Invalidf("release builder: Store is required")
	}
	if c.Feed == nil {
		f, ok := c.Store.(Feed)
		if !ok {
			return edgeindex.Invalidf("release builder: Feed is required when Store is no results feed")
		}
		c.Feed = f
	}
	if c.Interval < 0 || c.Window < 0 || c.PageSize < 0 || c.PageSize > 10000 || !(c.Share == 0 || c.Share >= MinShare && c.Share <= 1) {
		return edgeindex.Invalidf("release builder: Interval %s and Window %s must not be negative, PageSize %d must be 0 to 10000, Share %g 0 or %g to 1",
			c.Interval, c.Window, c.PageSize, c.Share, MinShare)
	}
	if c.Consumer == "" {
		c.Consumer = DefaultConsumer
		if c.Group != "" {
			c.Consumer += "/" + c.Group
		}
	}
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.PageSize == 0 {
		c.PageSize = DefaultPageSize
	}
	if c.Share == 0 {
		c.Share = DefaultShare
	}
	if c.Clock == nil {
		c.Clock = clock.Real
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Stats counts what a Builder did.
type Stats struct {
	Pages    int64 `json:"pages"`    // pages applied
	Items    int64 `json:"items"`    // items consumed
	Skipped  int64 `json:"skipped"`  // of them, items that are no binary with parts
	Files    int64 `json:"files"`    // files added or merged
	Created  int64 `json:"created"`  // releases created
	Changed  int64 `json:"changed"`  // release changes by later pages
	Conflict int64 `json:"conflict"` // pages another builder consumed first
}

// Builder consumes the results feed by its cursor and builds releases of
// the binaries in it. Each page is applied in one transaction with the
// cursor, so each item is consumed exactly once, however many builders
// share the consumer and however often they crash.
type Builder struct {
	cfg Config

	mu    sync.Mutex
	stats Stats
}

// NewBuilder checks cfg and returns a Builder; Run starts it.
func NewBuilder(cfg Config) (*Builder, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Builder{cfg: cfg}, nil
}

// Stats returns what the builder did so far.
func (b *Builder) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stats
}

// Run makes passes until ctx ends: a pass at once, then one every
// Interval. A failed pass is logged; Run returns ctx's error.
func (b *Builder) Run(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := b.Pass(ctx); err != nil && ctx.Err() == nil {
			b.cfg.Logger.Warn("release builder pass", "err", err)
		}
		if err := clock.Sleep(ctx, b.cfg.Clock, b.cfg.Interval); err != nil {
			return err
		}
	}
}

// Pass consumes pages until the feed has nothing new, and returns how many
// items it consumed. It reads and decodes the next page while the store
// applies the current one (two goroutines at most), so reading, decoding
// and writing overlap. Before each page but the first it waits as
// Config.Share says, so a pass that has caught up ends at once. A
// page another builder consumed first is skipped (the cursor is read
// again), not an error.
func (b *Builder) Pass(ctx context.Context) (int64, error) {
	var total int64
	cur, err := b.cfg.Store.ReleaseCursor(ctx, b.cfg.Consumer)
	if err != nil {
		return 0, fmt.Errorf("release builder: %w", err)
	}
	next := b.prefetch(ctx, cur.After)
	var took time.Duration // what the last page took to apply
	for {
		p := next.wait()
		if p.err != nil || p.items == 0 {
			return total, p.err
		}
		// The last page's share is waited for only once there is another
		// page to apply: a pass that has caught up ends at once.
		if err := b.yield(ctx, took); err != nil {
			return total, err
		}
		next = b.prefetch(ctx, p.u.Next) // read on while this page is written
		start := b.cfg.Clock.Now()
		n, moved, err := b.apply(ctx, p)
		took = b.cfg.Clock.Now().Sub(start)
		total += int64(n)
		if err != nil {
			next.wait()
			return total, err
		}
		if moved {
			next.wait()
			if cur, err = b.cfg.Store.ReleaseCursor(ctx, b.cfg.Consumer); err != nil {
				return total, fmt.Errorf("release builder: %w", err)
			}
			next = b.prefetch(ctx, cur.After)
		}
	}
}

// yield waits after a page that took took to apply, so that the builder
// spends at most Share of its time applying pages (Config.Share), but no
// longer than the Interval it waits once caught up: a page that stalled
// on a lock for a minute did not use the database for a minute.
func (b *Builder) yield(ctx context.Context, took time.Duration) error {
	wait := min(time.Duration(float64(took)*(1/b.cfg.Share-1)), b.cfg.Interval)
	if wait <= 0 {
		return nil
	}
	return clock.Sleep(ctx, b.cfg.Clock, wait)
}

// Step consumes one page of the feed and returns how many items it held:
// 0 when there is nothing new, or when another builder consumed the page
// first (then the next Step reads on from where that one left off).
func (b *Builder) Step(ctx context.Context) (int, error) {
	cur, err := b.cfg.Store.ReleaseCursor(ctx, b.cfg.Consumer)
	if err != nil {
		return 0, fmt.Errorf("release builder: %w", err)
	}
	p := b.read(ctx, cur.After)
	if p.err != nil || p.items == 0 {
		return 0, p.err
	}
	n, _, err := b.apply(ctx, p)
	return n, err
}

// page is a page of the feed made an Update.
type page struct {
	u       Update
	items   int // 0: nothing new
	skipped int
	err     error
}

// pending is a page being read.
type pending struct {
	done chan struct{}
	p    page
}

func (q *pending) wait() page {
	<-q.done
	return q.p
}

// prefetch reads the page after the cursor after in a goroutine.
func (b *Builder) prefetch(ctx context.Context, after string) *pending {
	q := &pending{done: make(chan struct{})}
	go func() {
		defer close(q.done)
		q.p = b.read(ctx, after)
	}()
	return q
}

// read reads the page after the cursor after and makes it an Update.
func (b *Builder) read(ctx context.Context, after string) page {
	res, err := b.cfg.Feed.Results(ctx, batch.Query{Group: b.cfg.Group, After: after, Limit: b.cfg.PageSize})
	if err != nil {
		return page{err: fmt.Errorf("release builder: feed: %w", err)}
	}
	if len(res.Results) == 0 {
		return page{}
	}
	u, skipped := b.update(after, res)
	return page{u: u, items: len(res.Results), skipped: skipped}
}

// apply has the store apply a page; moved reports a page another builder
// consumed first.
func (b *Builder) apply(ctx context.Context, p page) (n int, moved bool, err error) {
	applied, err := b.cfg.Store.PutReleases(ctx, p.u)
	if errors.Is(err, ErrCursorMoved) {
		b.mu.Lock()
		b.stats.Conflict++
		b.mu.Unlock()
		return 0, true, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("release builder: %w", err)
	}
	b.mu.Lock()
	b.stats.Pages++
	b.stats.Items += int64(p.u.Items)
	b.stats.Skipped += int64(p.skipped)
	b.stats.Files += int64(applied.Files)
	b.stats.Created += int64(applied.Created)
	b.stats.Changed += int64(applied.Changed)
	b.mu.Unlock()
	if applied.Created > 0 {
		b.cfg.Logger.Debug("releases", "created", applied.Created, "changed", applied.Changed, "files", applied.Files)
	}
	return p.u.Items, false, nil
}

// update turns a page of the feed into an Update: items decoded as
// binaries and merged by key, in the order of their first item. Items that
// are not a binary with parts, or claim more parts than a subject can
// (usenet.MaxTotal), are skipped.
func (b *Builder) update(after string, page batch.Page) (Update, int) {
	u := Update{Consumer: b.cfg.Consumer, After: after, Next: page.Next, Items: len(page.Results), Window: b.cfg.Window}
	at := make(map[string]int, len(page.Results))
	skipped := 0
	var now time.Time
	for _, it := range page.Results {
		var bin usenet.Binary
		if err := DecodeBinary(it.Value, &bin); err != nil || len(bin.Parts) == 0 || bin.Total < 1 || bin.Total > usenet.MaxTotal {
			skipped++
			continue
		}
		f := FromBinary(it.Key, bin)
		f.Items = []int64{it.ID}
		if f.Date.IsZero() {
			if now.IsZero() {
				now = b.cfg.Clock.Now().UTC()
			}
			f.Date = now
		}
		if i, ok := at[f.Key]; ok {
			u.Files[i] = u.Files[i].Merge(f)
			continue
		}
		at[f.Key] = len(u.Files)
		u.Files = append(u.Files, f)
	}
	u.Sets = make([]Set, len(u.Files))
	for i := range u.Files {
		u.Sets[i] = ParseSet(u.Files[i].Subject)
	}
	return u, skipped
}
