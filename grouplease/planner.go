package grouplease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/internal/backoff"
	"github.com/edgeindex/edgeindex/lease"
)

// Watermarker reports a group's lowest and highest article numbers, as NNTP
// GROUP does. Every sources.ChunkSource is one.
type Watermarker interface {
	Watermarks(ctx context.Context, group string) (low, high int64, err error)
}

// PlannerConfig configures a Planner. Store and Source are required; the
// zero value of every other field means its default.
type PlannerConfig struct {
	Store  PlanStore
	Source Watermarker
	// Dates finds the article of a plan's HistorySince before the group's
	// first split. Optional: without it a plan with HistorySince plans its
	// tail but never its history, and every pass reports the group.
	Dates DateFinder
	// Interval is how often Run polls the provider. Default 1m.
	Interval time.Duration
	// Planned is called after a pass that added ranges, such as a
	// prefetcher's Kick. Optional.
	Planned func()
	Logger  *slog.Logger
	// Clock times the wait before a failed date search is tried again.
	// Nil means clock.Real.
	Clock clock.Clock
}

// Planner polls the provider for the watermarks of every group that has a
// plan, plans their ranges, and turns missing articles that are due into
// repair ranges.
type Planner struct {
	cfg PlannerConfig

	mu     sync.Mutex
	failed map[int64]searchFailure // by group id
}

// searchFailure is a group's run of failed date searches: the next is
// not tried before next.
type searchFailure struct {
	fails int
	next  time.Time
}

// maxSearchBackoff is how many Intervals at most a group whose date
// searches keep failing waits before the next: 64 (an hour by default).
const maxSearchBackoff = 64

// withDefaults returns c with every zero field that has a default set to it.
func (c PlannerConfig) withDefaults() PlannerConfig {
	if c.Interval == 0 {
		c.Interval = time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = clock.Real
	}
	return c
}

// validate checks a PlannerConfig that has its defaults.
func (c PlannerConfig) validate() error {
	if c.Store == nil || c.Source == nil {
		return edgeindex.Invalidf("planner: Store and Source are required")
	}
	if c.Interval < 0 {
		return edgeindex.Invalidf("planner: Interval %s must not be negative", c.Interval)
	}
	return nil
}

// NewPlanner checks cfg and returns a Planner; Run starts it.
func NewPlanner(cfg PlannerConfig) (*Planner, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Planner{cfg: cfg, failed: map[int64]searchFailure{}}, nil
}

// Run makes a pass at once and then every Interval until ctx ends. A failed
// pass is logged; Run returns ctx's error.
func (p *Planner) Run(ctx context.Context) error {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if _, err := p.Pass(ctx); err != nil && ctx.Err() == nil {
			p.cfg.Logger.Warn("planner pass", "err", err)
		}
		t.Reset(p.cfg.Interval)
	}
}

// Pass polls every planned group once, plans its ranges, then plans the
// repairs that are due. It returns the ranges added. A group the provider
// fails to answer for is skipped, and its error joined to the result.
//
// The date searches (see PlannerConfig.Dates) run after every group's
// ranges are planned, because one may take minutes on a slow provider
// (nntp's takes up to four times its Timeout) and must not hold up the
// other groups' tails. A group whose search succeeded plans its history
// right after it, in the same pass, when the pass's reply was trusted
// whole; otherwise at the next pass. A group whose search failed is not
// searched again for Interval, doubling with each failure up to 64
// Intervals, on the Clock.
//
// Each group's failure is recorded (PlanStore.SetPlanError, at the Clock's
// now) for status and the fleet to show, and cleared by the next pass
// that polls, plans and searches the group without one.
func (p *Planner) Pass(ctx context.Context) ([]lease.Range, error) {
	plans, err := p.cfg.Store.Plans(ctx)
	if err != nil {
		return nil, fmt.Errorf("planner: %w", err)
	}
	ps := &pass{failed: map[int64]error{}, kept: map[int64]bool{}}
	searches := p.poll(ctx, plans, ps)
	p.searchDates(ctx, searches, ps)
	rs, err := p.cfg.Store.PlanRepairs(ctx)
	if err != nil {
		ps.errs = append(ps.errs, fmt.Errorf("planner: %w", err))
	}
	if len(rs) > 0 {
		p.cfg.Logger.Info("planned repairs", "ranges", len(rs))
	}
	ps.added = append(ps.added, rs...)
	p.record(ctx, plans, ps)
	if len(ps.added) > 0 && p.cfg.Planned != nil {
		p.cfg.Planned()
	}
	return ps.added, errors.Join(ps.errs...)
}

// pass is what one Pass has done so far: the ranges added, the errors to
// return, and each group's own failure, by group id, to record
// (PlanStore.SetPlanError). A group in kept learned nothing new this pass
// (its date search waits out a failure): its recorded failure stays.
type pass struct {
	added  []lease.Range
	errs   []error
	failed map[int64]error
	kept   map[int64]bool
}

// fail counts a group's failure in the pass.
func (ps *pass) fail(pl PlanStatus, err error) {
	ps.errs = append(ps.errs, fmt.Errorf("planner: group %q: %w", pl.Group, err))
	if _, ok := ps.failed[pl.GroupID]; !ok {
		ps.failed[pl.GroupID] = err
	}
}

// search is a group whose history waits for a date search after the polls.
type search struct {
	pl        PlanStatus
	low, high int64
	replan    bool // the pass's reply was trusted whole: plan again with it
}

// poll polls every group and plans its ranges, and returns the groups
// whose history waits for a date search. A group whose poll failed is
// searched all the same, with no reply to plan again with.
func (p *Planner) poll(ctx context.Context, plans []PlanStatus, ps *pass) []search {
	var searches []search
	for _, pl := range plans {
		s := search{pl: pl}
		low, high, err := p.cfg.Source.Watermarks(ctx, pl.Group)
		if err == nil {
			var res Planned
			if res, err = p.plan(ctx, pl, low, high); err == nil {
				ps.added = append(ps.added, res.Ranges...)
				s = search{pl: pl, low: low, high: high, replan: res.Held == nil}
			}
		}
		if err != nil {
			ps.fail(pl, err)
		}
		if needsDate(pl) {
			searches = append(searches, s)
		}
	}
	return searches
}

// searchDates runs the date searches, and plans again, with the same
// reply, a group whose search succeeded: trusted whole once, it moves
// nothing the first call did not, and history now has its start.
func (p *Planner) searchDates(ctx context.Context, searches []search, ps *pass) {
	for _, s := range searches {
		found, err := p.historyStart(ctx, s.pl)
		if err != nil {
			// The tail went on: history waits for a later pass.
			ps.fail(s.pl, err)
			continue
		}
		if !found {
			ps.kept[s.pl.GroupID] = true
		}
		if !found || !s.replan {
			continue
		}
		res, err := p.plan(ctx, s.pl, s.low, s.high)
		if err != nil {
			ps.fail(s.pl, err)
			continue
		}
		ps.added = append(ps.added, res.Ranges...)
	}
}

// record stores each group's failure in the pass, and clears the recorded
// failure of a group that the pass polled, planned and searched without
// one. A failure to record is one of the pass's errors.
func (p *Planner) record(ctx context.Context, plans []PlanStatus, ps *pass) {
	recorded, err := p.cfg.Store.PlanErrors(ctx)
	if err != nil {
		ps.errs = append(ps.errs, fmt.Errorf("planner: %w", err))
		return
	}
	now := p.cfg.Clock.Now()
	for _, pl := range plans {
		msg := ""
		if err, ok := ps.failed[pl.GroupID]; ok {
			msg = PlanErrorText(err)
		} else if _, ok := recorded[pl.GroupID]; !ok || ps.kept[pl.GroupID] {
			continue
		}
		if err := p.cfg.Store.SetPlanError(ctx, pl.GroupID, msg, now); err != nil {
			ps.errs = append(ps.errs, fmt.Errorf("planner: group %q: %w", pl.Group, err))
		}
	}
}

// OneLine returns s with every rune that could move a terminal's cursor,
// change its colours or turn text around (a control, a format character
// such as a bidi override, a line or paragraph separator, invalid UTF-8) a
// space: a peer's text, fit to print on one line.
func OneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp) || r == utf8.RuneError {
			return ' '
		}
		return r
	}, s)
}

// PeerText is s, a peer's text, as it may be shown: on one line
// (OneLine), and cut to at most limit bytes, at a rune's start, with "…"
// where it was cut. limit must leave room for the "…".
func PeerText(s string, limit int) string {
	s = OneLine(s)
	if len(s) <= limit {
		return s
	}
	cut := limit - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// PlanErrorText is err's text as a PlanError holds it: PeerText of it,
// cut to MaxPlanError bytes.
func PlanErrorText(err error) string { return PeerText(err.Error(), MaxPlanError) }

// plan plans a group's ranges for one reply, and logs what it did.
func (p *Planner) plan(ctx context.Context, pl PlanStatus, low, high int64) (Planned, error) {
	res, err := p.cfg.Store.PlanRanges(ctx, pl.GroupID, low, high)
	if err != nil {
		return res, err // pass.fail names the group
	}
	if res.Held != nil {
		p.cfg.Logger.Warn(fmt.Sprintf("planner: group %q: watermarks %d..%d not trusted until a later poll confirms them", pl.Group, low, high),
			"group", pl.Group, "low", low, "high", high, "trustedLow", res.Trusted.Low, "trustedHigh", res.Trusted.High)
	}
	if len(res.Ranges) > 0 {
		p.cfg.Logger.Info("planned", "group", pl.Group, "ranges", len(res.Ranges), "low", res.Trusted.Low, "high", res.Trusted.High)
	}
	return res, nil
}

// needsDate reports whether the plan's history waits for the article of
// its HistorySince.
func needsDate(pl PlanStatus) bool {
	return pl.History && !pl.HistorySince.IsZero() && pl.HistoryFrom == 0 && pl.HistoryNext == 0
}

// ErrNoDateFinder is the error for a plan with a HistorySince when the
// Planner has no PlannerConfig.Dates: its history is never planned.
var ErrNoDateFinder = errors.New("the plan's history goes back to a date, and the planner has no date finder (PlannerConfig.Dates)")

// historyStart finds and records the article of the plan's HistorySince,
// which needsDate says it waits for, unless the group's last search failed
// too recently. It reports whether it recorded one.
//
// A ResetPlan while the search runs is not seen: the article found before
// it is recorded after it (SetHistoryStart checks only that the plan still
// has this HistorySince and no history planned). It is the article of the
// same date on the same provider, so history starts where a search after
// the reset would have started it, give or take what arrived meanwhile.
func (p *Planner) historyStart(ctx context.Context, pl PlanStatus) (bool, error) {
	if p.cfg.Dates == nil {
		return false, ErrNoDateFinder
	}
	now := p.cfg.Clock.Now()
	p.mu.Lock()
	f, failed := p.failed[pl.GroupID]
	p.mu.Unlock()
	if failed && now.Before(f.next) {
		return false, nil
	}
	pt, err := p.cfg.Dates.FindDate(ctx, pl.Group, pl.HistorySince)
	if err != nil {
		f.fails++
		// r = 1: the whole wait, unjittered.
		f.next = p.cfg.Clock.Now().Add(backoff.Wait(f.fails, p.cfg.Interval, maxSearchBackoff*p.cfg.Interval, 1))
		p.mu.Lock()
		p.failed[pl.GroupID] = f
		p.mu.Unlock()
		return false, fmt.Errorf("history since %s (tried again after %s): %w", pl.HistorySince.UTC().Format(time.RFC3339),
			f.next.UTC().Format(time.RFC3339), err)
	}
	p.mu.Lock()
	delete(p.failed, pl.GroupID)
	p.mu.Unlock()
	if err := p.cfg.Store.SetHistoryStart(ctx, pl.GroupID, pl.HistorySince, pt); err != nil {
		return false, err
	}
	p.cfg.Logger.Info("history start found", "group", pl.Group, "since", pl.HistorySince.UTC().Format(time.RFC3339),
		"article", pt.Article, "date", pt.Date.UTC().Format(time.RFC3339), "calls", pt.Calls)
	return true, nil
}
