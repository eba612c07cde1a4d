package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/edgeindex/edgeindex/connlease"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/prefetch"
	"github.com/edgeindex/edgeindex/sqlstore"
)

var statusCommand = command{name: "status", summary: "show the lanes, the plans, the stuck fetches and the connection slots",
	setup: (*Main).statusFlags}

// statusReport is what status shows.
type statusReport struct {
	lanes []grouplease.LaneStatus
	plans []grouplease.PlanStatus
	// failed are the planner's last failures, a group's each.
	failed []planFailure
	stuck  []sqlstore.FetchingClaim
	// orphaned are the claims whose coordinator stopped renewing them:
	// it is gone, and another takes each once it runs out.
	orphaned []sqlstore.FetchingClaim
	slots    []connlease.Lease
	sizes    []connlease.BudgetSize
	postProc postProcCounts
}

// postProcCounts are the releases waiting for post-processing, and those
// it gave up on.
type postProcCounts struct {
	Pending int64 `json:"pending"`
	Failed  int64 `json:"failed"`
}

func (m *Main) statusFlags(fs *flag.FlagSet) func(context.Context, []string) error {
	m.commonFlags(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	claimTTL := fs.Duration("claim-ttl", prefetch.DefaultClaimTTL, "serve's --claim-ttl, to tell a claim its coordinator stopped renewing (and how long a fetch has run from a claim taken before the store kept that)")
	stuckAfter := fs.Duration("stuck", time.Minute, "list the fetches that have run at least this long")
	return func(ctx context.Context, pos []string) error {
		if err := noArgs("status", pos); err != nil {
			return err
		}
		store, err := m.open(ctx)
		if err != nil {
			return err
		}
		r, err := readStatus(ctx, store, *claimTTL, *stuckAfter)
		if err != nil {
			return err
		}
		if *asJSON {
			return m.printJSON(map[string]any{"lanes": r.lanes, "plans": r.plans, "planErrors": r.failed, "stuckFetches": r.stuck, "orphanedClaims": r.orphaned, "connSlots": r.slots, "connBudgets": r.sizes,
				"postProc": r.postProc})
		}
		return r.print(m.Stdout, *stuckAfter, *claimTTL)
	}
}

// planFailure is a group's last planner failure, as status shows it.
type planFailure struct {
	Group string `json:"group"`
	grouplease.PlanError
}

// planFailures lists the failures recorded for plans, in the plans' order.
func planFailures(ctx context.Context, store *sqlstore.Store, plans []grouplease.PlanStatus) ([]planFailure, error) {
	byID, err := store.PlanErrors(ctx)
	if err != nil {
		return nil, err
	}
	out := []planFailure{}
	for _, p := range plans {
		if e, ok := byID[p.GroupID]; ok {
			out = append(out, planFailure{Group: p.Group, PlanError: e})
		}
	}
	return out, nil
}

// readStatus reads what status shows. A fetch stuck on a provider holds
// its chunk claim, unfetched, for as long as its coordinator tries (every
// try is cut at its deadline, and the claim renewed every claimTTL/3
// meanwhile). A claim not renewed for claimTTL/3 and renewGrace more is
// orphaned: its coordinator is gone.
func readStatus(ctx context.Context, store *sqlstore.Store, claimTTL, stuckAfter time.Duration) (r statusReport, err error) {
	if r.lanes, err = store.Lanes(ctx, ""); err != nil {
		return r, err
	}
	if r.plans, err = store.Plans(ctx); err != nil {
		return r, err
	}
	if r.failed, err = planFailures(ctx, store, r.plans); err != nil {
		return r, err
	}
	claims, err := store.FetchingClaims(ctx, 1000)
	if err != nil {
		return r, err
	}
	r.stuck, r.orphaned = []sqlstore.FetchingClaim{}, []sqlstore.FetchingClaim{}
	for _, c := range claims {
		if c.RunningFor < 0 { // claimed before the store kept when
			c.RunningFor = claimTTL - c.ExpiresIn
		}
		switch {
		case silentFor(c, claimTTL) > claimTTL/3+renewGrace:
			r.orphaned = append(r.orphaned, c)
		case c.RunningFor >= stuckAfter:
			r.stuck = append(r.stuck, c)
		}
	}
	if r.slots, err = store.Slots(ctx); err != nil {
		return r, err
	}
	if r.sizes, err = store.BudgetSizes(ctx); err != nil {
		return r, err
	}
	r.postProc.Pending, r.postProc.Failed, err = store.PostProcCounts(ctx)
	return r, err
}

// silentFor is how long ago claim c was last renewed, when claims live
// claimTTL.
func silentFor(c sqlstore.FetchingClaim, claimTTL time.Duration) time.Duration {
	return claimTTL - c.ExpiresIn
}

// renewGrace is how late a renewal may be before status calls its claim
// orphaned: a database round trip, a pause of the collector.
const renewGrace = 2 * time.Second

// print prints the report's tables.
func (r statusReport) print(w io.Writer, stuckAfter, claimTTL time.Duration) error {
	defer printSlots(w, r.sizes, r.slots) // after the tables below
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tLANE\tHOLDER\tNEXT\tPENDING\tLEASED\tDONE\tFAILED\tHEADERS")
	for _, l := range r.lanes {
		holder := l.Holder
		if holder == "" {
			holder = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\n", l.Group, l.Lane, holder, l.Next,
			l.Ranges[lease.StatePending], l.Ranges[lease.StateLeased], l.Ranges[lease.StateDone], l.Ranges[lease.StateFailed], l.Headers)
	}
	if len(r.stuck) > 0 {
		fmt.Fprintln(tw, "")
		fmt.Fprintf(tw, "Fetches running for %s or more:\n", stuckAfter)
		fmt.Fprintln(tw, "GROUP\tRANGE\tSPAN\tCOORDINATOR\tRUNNING FOR")
		for _, f := range r.stuck {
			fmt.Fprintf(tw, "%s\t%d\t%d-%d\t%s\t%s\n", f.Group, f.RangeID, f.Span.From, f.Span.To, f.Owner, f.RunningFor.Round(time.Second))
		}
	}
	if len(r.orphaned) > 0 {
		fmt.Fprintln(tw, "")
		fmt.Fprintln(tw, "Claims whose coordinator stopped renewing them (another takes each once it runs out):")
		fmt.Fprintln(tw, "GROUP\tRANGE\tSPAN\tCOORDINATOR\tSILENT FOR\tTAKEN OVER IN")
		for _, c := range r.orphaned {
			in := "now"
			if c.ExpiresIn > 0 {
				in = c.ExpiresIn.Round(time.Second).String()
			}
			fmt.Fprintf(tw, "%s\t%d\t%d-%d\t%s\t%s\t%s\n", c.Group, c.RangeID, c.Span.From, c.Span.To, c.Owner, silentFor(c, claimTTL).Round(time.Second), in)
		}
	}
	if len(r.plans) > 0 {
		printPlans(tw, r.plans)
	}
	if len(r.failed) > 0 {
		fmt.Fprintln(tw, "")
		fmt.Fprintln(tw, "Planner errors (until a poll of the group succeeds):")
		fmt.Fprintln(tw, "GROUP\tAT\tERROR")
		for _, f := range r.failed {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Group, f.At.UTC().Format(time.RFC3339), f.Message)
		}
	}
	if r.postProc != (postProcCounts{}) {
		fmt.Fprintln(tw, "")
		fmt.Fprintf(tw, "Post-processing: %d releases pending, %d given up (GET /v1/releases/{id} says why)\n",
			r.postProc.Pending, r.postProc.Failed)
	}
	return tw.Flush()
}

// printPlans prints the plans' table.
func printPlans(tw *tabwriter.Writer, plans []grouplease.PlanStatus) {
	fmt.Fprintln(tw, "")
	fmt.Fprintln(tw, "GROUP\tLOW\tHIGH\tLAG\tTAIL PLANNED TO\tHISTORY FROM\tHISTORY PLANNED\tMISSING (WAITING/REPAIRING/REPAIRED/LOST)\tPOLLED")
	for _, p := range plans {
		if !p.Polled {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t%s\t-\t-\tnot yet\n", p.Group, historyTarget(p))
			continue
		}
		history := "-"
		if p.History && p.HistoryNext > 0 {
			history = fmt.Sprintf("to %d of %d", p.HistoryNext-1, p.HistoryEnd)
		}
		ms := p.Missing
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t%d/%d/%d/%d\t%s\n", p.Group, p.Low, p.High, p.Lag, p.TailNext-1, historyTarget(p), history,
			ms.Waiting, ms.Repairing, ms.Repaired, ms.Lost, p.PolledAt.Format(time.RFC3339))
	}
}
