package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/nntp"
	"github.com/edgeindex/edgeindex/spool"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// historyAbout tells what --history takes.
const historyAbout = `--history is how far back a plan's history goes: an article count (1000000), days before now (30d, or a Go
duration such as 36h) or a date (2026-01-01, UTC midnight, or RFC 3339); a date is found by bisection over OVER.
--provider P reads a group from provider P: it is stored, and shown by status, as NAME@P, which the commands that take
a group accept too. One newsgroup may be added once per provider; the release builder merges what they hold.
With --plan and an NNTP --source for the group's provider (the same flags serve takes), the group is looked up there
first (GROUP): one the provider does not carry is refused, and nothing is written. Without --source that check is
skipped.`

var (
	groupAddCommand = command{name: "group add", args: "NAME", summary: "add a group, and with --plan have serve plan its ranges from the provider",
		about: historyAbout, setup: (*Main).groupAddFlags}
	groupPlanCommand = command{name: "group plan", args: "NAME",
		summary: "set a group's plan (--plan tail,history), stop planning it (--plan none), or --reset its cursors",
		about:   historyAbout, setup: (*Main).groupPlanFlags}
	groupRmCommand = command{name: "group rm", args: "NAME", summary: "remove a group with its ranges, plan, lanes and snapshots' state",
		about: `While a range or lane of the group is leased, a chunk of it is being fetched, or it has results, group rm refuses;
--force removes it anyway, its results with it (releases already built from them stay). Stop the edge workers of a
group, or wait for their leases to expire, before removing it.`,
		setup: (*Main).groupRmFlags}
)

// planFlags are the flags that make a group's plan.
type planFlags struct {
	lanes, history *string
	margin         *int64
}

func addPlanFlags(fs *flag.FlagSet) planFlags {
	return planFlags{
		lanes: fs.String("plan", "", "plan the group's ranges from the provider: tail, history or tail,history (group plan: none stops planning it)"),
		history: fs.String("history", "", "with --plan history: how far back history goes: N articles, Nd days (or a duration such as 36h), "+
			"or a date YYYY-MM-DD or RFC 3339 (default: to the low watermark)"),
		margin: fs.Int64("margin", 0, "with --plan tail: how many of the newest articles to leave unplanned"),
	}
}

// plan parses the flags into a plan; nil when --plan is not given.
func (f planFlags) plan(now time.Time) (*grouplease.GroupPlan, error) {
	if *f.lanes == "" {
		return nil, nil
	}
	back, since, err := parseHistory(*f.history, now)
	if err != nil {
		return nil, usagef("%v", err)
	}
	p := grouplease.GroupPlan{HistoryBack: back, HistorySince: since, Margin: *f.margin}
	for _, lane := range strings.Split(*f.lanes, ",") {
		switch lane {
		case "tail":
			p.Tail = true
		case "history":
			p.History = true
		default:
			return nil, usagef("--plan %q: tail, history or tail,history", *f.lanes)
		}
	}
	if err := p.Check(); err != nil {
		return nil, usagef("%v", err)
	}
	return &p, nil
}

func (m *Main) groupAddFlags(fs *flag.FlagSet) func(context.Context, []string) error {
	m.commonFlags(fs)
	ordered := fs.Bool("ordered", false, "hand the group's ranges out in article order, per lane")
	rangeSize := fs.Int64("range-size", grouplease.DefaultRangeSize, "articles per range")
	chunkSize := fs.Int64("chunk-size", grouplease.DefaultChunkSize, "articles per chunk")
	pf := addPlanFlags(fs)
	provider := providerFlag(fs)
	m.addSourceFlags(fs)
	return func(ctx context.Context, pos []string) error {
		name, err := groupArg("group add", "NAME", pos, *provider)
		if err != nil {
			return err
		}
		g := grouplease.Group{Name: name, Ordered: *ordered, RangeSize: *rangeSize, ChunkSize: *chunkSize}
		plan, err := pf.plan(time.Now())
		if err != nil {
			return err
		}
		return m.groupAdd(ctx, g, plan)
	}
}

// groupAdd adds g, and plans it when plan is not nil.
func (m *Main) groupAdd(ctx context.Context, g grouplease.Group, plan *grouplease.GroupPlan) error {
	store, err := m.open(ctx)
	if err != nil {
		return err
	}
	if plan != nil {
		if err := m.checkOnProvider(ctx, g.Name); err != nil {
			return err
		}
	}
	g, err = store.AddGroup(ctx, g)
	if err != nil {
		return err
	}
	fmt.Fprintf(m.Stdout, "group %d %s: ranges of %d, chunks of %d, ordered %t\n", g.ID, g.Name, g.RangeSize, g.ChunkSize, g.Ordered)
	if plan == nil {
		return nil
	}
	return m.setPlan(ctx, store, g.Name, *plan)
}

func (m *Main) groupPlanFlags(fs *flag.FlagSet) func(context.Context, []string) error {
	m.commonFlags(fs)
	pf := addPlanFlags(fs)
	reset := fs.Bool("reset", false, "clear the group's cursors and watermarks, so that the next poll splits it again "+
		"from the provider's watermarks and plans every article no range covers; articles counted lost by expiry wait again")
	fs.IntVar(&m.Store.RepairTries, "repair-tries", sqlstore.DefaultRepairTries,
		"with --reset: serve's --repair-tries; an article lost with fewer tries was lost by expiry")
	provider := providerFlag(fs)
	m.addSourceFlags(fs)
	return func(ctx context.Context, pos []string) error {
		name, err := groupArg("group plan", "NAME", pos, *provider)
		if err != nil {
			return err
		}
		switch {
		case *pf.lanes == "none" && *reset:
			return usagef("group plan: --plan none or --reset, not both")
		case *pf.lanes == "none":
			return m.removePlan(ctx, name)
		case *pf.lanes == "" && !*reset:
			return usagef("group plan NAME: --plan tail,history, --plan none or --reset; see coordinator group plan -h")
		}
		return m.groupPlan(ctx, name, pf, *reset)
	}
}

// groupPlan sets the group's plan, when --plan names one, then resets its
// cursors, with --reset.
func (m *Main) groupPlan(ctx context.Context, name string, pf planFlags, reset bool) error {
	plan, err := pf.plan(time.Now())
	if err != nil {
		return err
	}
	store, err := m.open(ctx)
	if err != nil {
		return err
	}
	if plan != nil {
		if _, err := store.Group(ctx, name); err != nil {
			return err
		}
		if err := m.checkOnProvider(ctx, name); err != nil {
			return err
		}
		if err := m.setPlan(ctx, store, name, *plan); err != nil {
			return err
		}
	}
	if !reset {
		return nil
	}
	revived, err := store.ResetPlan(ctx, name)
	if err != nil {
		return err
	}
	fmt.Fprintf(m.Stdout, "group %s: cursors reset; the next poll plans it from the provider's watermarks; %d articles counted lost by expiry wait again\n",
		name, revived)
	return nil
}

// setPlan stores the group's plan and says what it is.
func (m *Main) setPlan(ctx context.Context, store *sqlstore.Store, name string, plan grouplease.GroupPlan) error {
	if err := store.SetPlan(ctx, name, plan); err != nil {
		return err
	}
	fmt.Fprintf(m.Stdout, "group %s planned: tail %t, history %t (%s), margin %d\n", name, plan.Tail, plan.History, historyReach(plan), plan.Margin)
	if plan.HistorySince.IsZero() {
		return nil
	}
	return m.printHistoryTarget(ctx, store, name)
}

// removePlan stops planning the group: --plan none.
func (m *Main) removePlan(ctx context.Context, name string) error {
	store, err := m.open(ctx)
	if err != nil {
		return err
	}
	if err := store.RemovePlan(ctx, name); err != nil {
		return err
	}
	fmt.Fprintf(m.Stdout, "group %s: plan removed; serve plans it no more, and its ranges stay\n", name)
	return nil
}

func (m *Main) groupRmFlags(fs *flag.FlagSet) func(context.Context, []string) error {
	m.commonFlags(fs)
	m.storageFlag(fs)
	provider := providerFlag(fs)
	force := fs.Bool("force", false, "remove the group even while it is leased or has results (they go too; PostgreSQL only)")
	return func(ctx context.Context, pos []string) error {
		name, err := groupArg("group rm", "NAME", pos, *provider)
		if err != nil {
			return err
		}
		store, err := m.open(ctx)
		if err != nil {
			return err
		}
		ranges, results, err := store.RemoveGroup(ctx, name, *force)
		if errors.Is(err, edgeindex.ErrConflict) && !errors.Is(err, sqlstore.ErrRangesKept) {
			return fmt.Errorf("%w (group rm --force)", err)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(m.Stdout, "group %s removed, with its %d ranges and %d results\n", name, len(ranges), results)
		return m.dropChunks(ranges)
	}
}

// dropChunks drops the spooled chunks of removed ranges from the data
// directory's spool, if there is one, so that they take no room. A spool
// in --storage's bucket is left as it is: the bucket's lifecycle rule ages
// them out. (Only PostgreSQL removes ranges, and it never reuses an id.)
func (m *Main) dropChunks(ranges []int64) error {
	dir := filepath.Join(m.Data, "spool")
	if _, err := os.Stat(dir); m.Storage != "" || len(ranges) == 0 || err != nil {
		return nil
	}
	sp, err := spool.Open(dir, spool.Config{})
	if err != nil {
		return fmt.Errorf("drop the removed ranges' chunks: %w", err)
	}
	for _, id := range ranges {
		err = errors.Join(err, sp.Drop(id))
	}
	if err = errors.Join(err, sp.Close()); err != nil {
		return fmt.Errorf("drop the removed ranges' chunks: %w", err)
	}
	return nil
}

// checkOnProvider asks the group's provider, when --source names it as an
// NNTP server, whether it carries the group (GROUP), and fails with an
// error wrapping edgeindex.ErrNotFound, naming the group and the
// provider, when it does not (411). With no --source, or a synthetic
// one, there is nothing to ask.
func (m *Main) checkOnProvider(ctx context.Context, group string) error {
	if len(m.Sources) == 0 {
		return nil
	}
	provs, err := parseSources(m.Sources)
	if err != nil {
		return err
	}
	newsgroup, name := grouplease.SplitGroup(group)
	for _, p := range provs {
		if p.name != name {
			continue
		}
		src, ns, err := m.openSource(ctx, p, nil)
		if err != nil || ns == nil {
			return err
		}
		defer ns.Close()
		return checkGroup(ctx, src.(grouplease.Watermarker), newsgroup, p)
	}
	return usagef("group %q is read from provider %q, which no --source names", group, name)
}

// checkGroup reads the group's watermarks from the provider's source.
func checkGroup(ctx context.Context, src grouplease.Watermarker, newsgroup string, p provider) error {
	_, _, err := src.Watermarks(ctx, newsgroup)
	if errors.Is(err, nntp.ErrNoSuchGroup) {
		return fmt.Errorf("%w: %s has no group %q (411 no such group); check the name and --provider; nothing was written",
			edgeindex.ErrNotFound, providerName(p), newsgroup)
	}
	if err != nil {
		return fmt.Errorf("%s: GROUP %s: %w", p.label(), newsgroup, err)
	}
	return nil
}

// providerName names a provider in a sentence.
func providerName(p provider) string {
	if p.name == "" {
		return "the default provider (" + p.label() + ")"
	}
	return fmt.Sprintf("provider %q (%s)", p.name, p.label())
}

// parseHistory parses --history: digits are an article count; Nd is N
// days before now, and a Go duration (36h) that long before now; a date
// is YYYY-MM-DD (UTC midnight) or RFC 3339. "" is none: history goes down
// to the low watermark.
func parseHistory(s string, now time.Time) (back int64, since time.Time, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, time.Time{}, nil
	}
	if strings.Trim(s, "0123456789") == "" {
		back, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, time.Time{}, fmt.Errorf("--history %q: an article count too large", s)
		}
		return back, time.Time{}, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok && days != "" && strings.Trim(days, "0123456789") == "" {
		n, err := strconv.Atoi(days)
		if err != nil || n < 1 || n > 100*366 {
			return 0, time.Time{}, fmt.Errorf("--history %q: 1 to %d days", s, 100*366)
		}
		return 0, now.AddDate(0, 0, -n).UTC(), nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return 0, time.Time{}, fmt.Errorf("--history %q: a duration must be positive", s)
		}
		return 0, now.Add(-d).UTC(), nil
	}
	for _, layout := range []string{time.DateOnly, time.RFC3339} {
		if t, err := time.Parse(layout, s); err == nil {
			return 0, t.UTC(), nil
		}
	}
	return 0, time.Time{}, fmt.Errorf("--history %q: an article count (1000000), days (30d), a duration (36h) or a date (2026-01-01, RFC 3339)", s)
}

// historyReach says how far back a plan's history goes.
func historyReach(p grouplease.GroupPlan) string {
	switch {
	case !p.HistorySince.IsZero():
		return "since " + p.HistorySince.UTC().Format(time.RFC3339)
	case p.HistoryBack > 0:
		return fmt.Sprintf("back %d", p.HistoryBack)
	}
	return "to the low watermark"
}

// historyTarget says where a plan's history starts, as status shows it:
// the article found for its date (and that article's Date), or why none
// is yet.
func historyTarget(p grouplease.PlanStatus) string {
	switch {
	case !p.History:
		return "-"
	case p.HistorySince.IsZero():
		if p.HistoryNext == 0 {
			return "at the first poll"
		}
		return historyReach(p.GroupPlan)
	case p.HistoryFrom > 0 && p.HistoryFromDate.IsZero():
		return fmt.Sprintf("none: every article older than %s", p.HistorySince.UTC().Format(time.RFC3339))
	case p.HistoryFrom > 0:
		return fmt.Sprintf("%d (%s)", p.HistoryFrom, p.HistoryFromDate.UTC().Format(time.RFC3339))
	case p.HistoryNext > 0:
		return fmt.Sprintf("since %s after --reset", p.HistorySince.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("since %s: searching", p.HistorySince.UTC().Format(time.RFC3339))
}

// printHistoryTarget prints where the group's history starts.
func (m *Main) printHistoryTarget(ctx context.Context, store *sqlstore.Store, group string) error {
	plans, err := store.Plans(ctx)
	if err != nil {
		return err
	}
	for _, p := range plans {
		if p.Group == group {
			fmt.Fprintf(m.Stdout, "group %s history starts at: %s\n", group, historyTarget(p))
		}
	}
	return nil
}
