package grouplease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/edgeindex/edgeindex/lease"
)

// Watermarker reports a group's lowest and highest article numbers, as NNTP
// GROUP does. Every spool.ChunkSource is one.
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
}

// Planner polls the provider for the watermarks of every group that has a
// plan, plans their ranges, and turns missing articles that are due into
// repair ranges.
type Planner struct {
	cfg PlannerConfig
}

// withDefaults returns c with every zero field that has a default set to it.
func (c PlannerConfig) withDefaults() PlannerConfig {
	if c.Interval == 0 {
		c.Interval = time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// validate checks a PlannerConfig that has its defaults.
func (c PlannerConfig) validate() error {
	if c.Store == nil || c.Source == nil {
		return lease.Invalidf("planner: Store and Source are required")
	}
	if c.Interval < 0 {
		return lease.Invalidf("planner: Interval %s must not be negative", c.Interval)
	}
	return nil
}

// NewPlanner checks cfg and returns a Planner; Run starts it.
func NewPlanner(cfg PlannerConfig) (*Planner, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Planner{cfg: cfg}, nil
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
func (p *Planner) Pass(ctx context.Context) ([]lease.Range, error) {
	plans, err := p.cfg.Store.Plans(ctx)
	if err != nil {
		return nil, fmt.Errorf("planner: %w", err)
	}
	var added []lease.Range
	var errs []error
	for _, pl := range plans {
		if err := p.historyStart(ctx, pl); err != nil {
			// The tail goes on: history waits for a later pass.
			errs = append(errs, fmt.Errorf("planner: group %q: %w", pl.Group, err))
		}
		low, high, err := p.cfg.Source.Watermarks(ctx, pl.Group)
		if err != nil {
			errs = append(errs, fmt.Errorf("planner: group %q: %w", pl.Group, err))
			continue
		}
		res, err := p.cfg.Store.PlanRanges(ctx, pl.GroupID, low, high)
		if err != nil {
			errs = append(errs, fmt.Errorf("planner: group %q: %w", pl.Group, err))
			continue
		}
		if res.Held != nil {
			p.cfg.Logger.Warn(fmt.Sprintf("planner: group %q: watermarks %d..%d not trusted until a later poll confirms them", pl.Group, low, high),
				"group", pl.Group, "low", low, "high", high, "trustedLow", res.Trusted.Low, "trustedHigh", res.Trusted.High)
		}
		if len(res.Ranges) > 0 {
			p.cfg.Logger.Info("planned", "group", pl.Group, "ranges", len(res.Ranges), "low", res.Trusted.Low, "high", res.Trusted.High)
		}
		added = append(added, res.Ranges...)
	}
	rs, err := p.cfg.Store.PlanRepairs(ctx)
	if err != nil {
		errs = append(errs, fmt.Errorf("planner: %w", err))
	}
	if len(rs) > 0 {
		p.cfg.Logger.Info("planned repairs", "ranges", len(rs))
	}
	added = append(added, rs...)
	if len(added) > 0 && p.cfg.Planned != nil {
		p.cfg.Planned()
	}
	return added, errors.Join(errs...)
}

// ErrNoDateFinder is the error for a plan with a HistorySince when the
// Planner has no PlannerConfig.Dates: its history is never planned.
var ErrNoDateFinder = errors.New("the plan's history goes back to a date, and the planner has no date finder (PlannerConfig.Dates)")

// historyStart finds and records the article of the plan's HistorySince
// while history is not planned yet and it was not found.
func (p *Planner) historyStart(ctx context.Context, pl PlanStatus) error {
	if !pl.History || pl.HistorySince.IsZero() || pl.HistoryFrom > 0 || pl.HistoryNext > 0 {
		return nil
	}
	if p.cfg.Dates == nil {
		return ErrNoDateFinder
	}
	pt, err := p.cfg.Dates.FindDate(ctx, pl.Group, pl.HistorySince)
	if err != nil {
		return fmt.Errorf("history since %s: %w", pl.HistorySince.UTC().Format(time.RFC3339), err)
	}
	if err := p.cfg.Store.SetHistoryStart(ctx, pl.GroupID, pl.HistorySince, pt); err != nil {
		return err
	}
	p.cfg.Logger.Info("history start found", "group", pl.Group, "since", pl.HistorySince.UTC().Format(time.RFC3339),
		"article", pt.Article, "date", pt.Date.UTC().Format(time.RFC3339), "calls", pt.Calls)
	return nil
}
