package grouplease

import (
	"context"
	"time"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/lease"
)

// MaxArticle is the highest article number planning accepts from a
// provider: 2^62, far above any real group, and far enough below int64's
// end that no sum over article numbers overflows.
const MaxArticle int64 = 1 << 62

// GroupPlan says how the coordinator plans a group's ranges by itself, the way
// NNTmux's update (tail) and backfill (history) runs do.
//
// On the first poll of the provider the group is split at
// start = max(low, high − Margin + 1): the tail plans from start onwards as
// new articles arrive, always leaving the newest Margin articles unplanned
// because they may still be propagating; history plans from its target up
// to start − 1, ascending. The target is the low watermark, or
// start − HistoryBack when HistoryBack is set and that is above low, or
// the first article posted on or after HistorySince when that is set (a
// DateFinder finds it; see PlannerConfig.Dates) and above low.
//
// The target is fixed at the split: a plan set again on a group already
// split keeps its cursors, so a new HistoryBack or HistorySince takes
// effect after ResetPlan (`group plan NAME --reset`).
type GroupPlan struct {
	Tail    bool `json:"tail"`
	History bool `json:"history"`
	// HistoryBack is how many articles before the tail's start history
	// reaches; 0 means down to the low watermark.
	HistoryBack int64 `json:"historyBack"`
	// HistorySince, when set, makes history reach back to the first
	// article posted on or after it, instead of an article count. It is
	// absolute: "30 days" is turned into a date when the plan is set.
	HistorySince time.Time `json:"historySince,omitzero"`
	// Margin is how many of the newest articles the tail leaves unplanned.
	Margin int64 `json:"margin"`
}

// Check refuses a plan with no lane, a negative count, both an article
// count and a date for history, or a date in the future or before 1970.
func (p GroupPlan) Check() error {
	if !p.Tail && !p.History {
		return edgeindex.Invalidf("plan: name tail, history or both")
	}
	if p.HistoryBack < 0 || p.Margin < 0 {
		return edgeindex.Invalidf("plan: history %d and margin %d must not be negative", p.HistoryBack, p.Margin)
	}
	if p.HistorySince.IsZero() {
		return nil
	}
	if p.HistoryBack > 0 {
		return edgeindex.Invalidf("plan: history goes back an article count (%d) or to a date (%s), not both",
			p.HistoryBack, p.HistorySince.UTC().Format(time.RFC3339))
	}
	if p.HistorySince.After(time.Now()) {
		return edgeindex.Invalidf("plan: history since %s is in the future", p.HistorySince.UTC().Format(time.RFC3339))
	}
	if p.HistorySince.Before(time.Unix(0, 0)) {
		return edgeindex.Invalidf("plan: history since %s is before 1970", p.HistorySince.UTC().Format(time.RFC3339))
	}
	return nil
}

// Missing counts a group's articles that a worker found absent from their
// chunk, by what became of them.
type Missing struct {
	Waiting   int64 `json:"waiting"`   // to be fetched again when due
	Repairing int64 `json:"repairing"` // in a repair range now
	Repaired  int64 `json:"repaired"`  // arrived on a later try
	Lost      int64 `json:"lost"`      // never arrived within the tries, or expired below low
}

// PlanStatus is a group's plan, its cursors and the provider's watermarks
// as trusted at the last poll.
type PlanStatus struct {
	GroupID int64  `json:"groupId"`
	Group   string `json:"group"`
	GroupPlan
	// Polled is false until a poll's reply was trusted: the first that
	// reports articles (an empty group's is only Held). The fields below
	// but PolledAt are zero until then. PolledAt is when the provider was
	// last polled, zero before the first poll.
	Polled   bool      `json:"polled"`
	PolledAt time.Time `json:"polledAt"`
	// Low and High are the watermarks trusted so far: the ones planning
	// and expiry use.
	Low  int64 `json:"low"`
	High int64 `json:"high"`
	// TailNext is the first article the tail has not planned yet.
	TailNext int64 `json:"tailNext"`
	// HistoryNext is the first article history has not planned yet;
	// history is planned in full once it passes HistoryEnd.
	HistoryNext int64 `json:"historyNext"`
	HistoryEnd  int64 `json:"historyEnd"`
	// HistoryFrom is the article a DateFinder found for HistorySince, and
	// HistoryFromDate its Date: 0 and zero until it was found (or when
	// the plan has no HistorySince). HistoryFrom is the provider's high + 1,
	// and HistoryFromDate zero, when every article was older: history
	// then plans nothing. The first split starts history there (at the
	// low watermark at least).
	HistoryFrom     int64     `json:"historyFrom,omitempty"`
	HistoryFromDate time.Time `json:"historyFromDate,omitzero"`
	// Lag is how many articles up to High the tail has not stored yet:
	// High − (the first tail article not stored) + 1, never below 0.
	Lag     int64   `json:"lag"`
	Missing Missing `json:"missing"`
	// Held is the last poll's reply when planning held it back, in part
	// or whole, until a later poll confirms it (see PlanStore.PlanRanges);
	// nil when the last reply was trusted whole. Low and High above are
	// the watermarks trusted so far.
	Held *Watermarks `json:"held,omitempty"`
}

// Watermarks are a group's low and high article numbers as one GROUP
// reply gave them.
type Watermarks struct {
	Low  int64 `json:"low"`
	High int64 `json:"high"`
}

// Empty reports whether the reply says the group has no articles: a high
// below the low, or no high above 0 (article numbers start at 1). RFC 3977
// gives an empty group either form ("0 500000 499999", "0 0 0").
func (w Watermarks) Empty() bool { return w.High < max(w.Low, 1) }

// Planned is what PlanRanges did with one poll's watermarks.
type Planned struct {
	// Ranges are the ranges added.
	Ranges []lease.Range
	// Trusted are the watermarks planning used: the reply, or as much of
	// it as earlier polls confirm. Zero when nothing is trusted yet (an
	// empty group's reply on the first poll).
	Trusted Watermarks
	// Held is the reply when it was held back, in part or whole; nil
	// when it was trusted whole.
	Held *Watermarks
}

// PlanStore keeps groups' plans and plans their ranges. Each planning call
// runs in one transaction that locks the group, so coordinators sharing a
// database never plan a range twice.
type PlanStore interface {
	// SetPlan sets a group's plan; cursors already set are kept. A new
	// HistorySince forgets the article found for the old one.
	SetPlan(ctx context.Context, group string, p GroupPlan) error
	// SetHistoryStart records where a DateFinder found the plan's
	// HistorySince, since: history starts there at the group's first
	// split (or, when the tail was split before it was found, at once).
	// It records nothing, and returns nil, when the plan's HistorySince is
	// no longer since or history is planned already: the search was for
	// a plan that has changed since. A point with no article above 0 is
	// invalid.
	SetHistoryStart(ctx context.Context, groupID int64, since time.Time, p DatePoint) error
	// Plans lists every group that has a plan, by group id.
	Plans(ctx context.Context) ([]PlanStatus, error)
	// PlanRanges records the provider's watermarks for the group and adds
	// the ranges its plan calls for: the tail up to high − margin, history
	// from its cursor, never overlapping a range the group has, and never
	// more than the store's limit of unfinished ranges per lane.
	//
	// One reply is not trusted where it would move a cursor for good or
	// expire articles: a low above the trusted low counts only as far as
	// the next poll confirms it (the lesser of the two replies); a high
	// more than the store's bound above the highest high planning relied
	// on (the trusted one, or the tail's reach) counts only when the next
	// reply is within the bound of it, and then as far as both go; an
	// empty group's reply (Watermarks.Empty) never moves the high or
	// lowers the low. A low or high that falls in a reply with articles is
	// trusted at once: it moves no cursor back and expires nothing. A new
	// group's first poll, with nothing to compare against, is trusted,
	// unless it is an empty group's: then nothing is planned or set until
	// a poll reports articles. Planning never keeps more than the store's
	// limit of unfinished ranges per lane ahead, however high a confirmed
	// high is.
	PlanRanges(ctx context.Context, groupID int64, low, high int64) (Planned, error)
	// ResetPlan clears a group's cursors and watermarks, and the article
	// found for its HistorySince, as before its first poll: the next poll splits the group again from the provider's
	// watermarks and plans every article that no range of the group
	// covers. The watermarks trusted until then wait as the previous
	// reply (Held), so that a first reply far from their high waits for
	// the next poll to agree with it. The missing articles counted lost by expiry (before their
	// last try) wait for a repair again. It returns how many did.
	ResetPlan(ctx context.Context, group string) (revived int64, err error)
	// PlanRepairs turns the missing articles that are due into repair
	// ranges: runs of consecutive missing numbers, at most a chunk each,
	// granted like unordered ranges. It counts as lost the articles below
	// the group's trusted low watermark and those whose repair range
	// failed for the last time. It returns the ranges added.
	PlanRepairs(ctx context.Context) ([]lease.Range, error)
	// SetPlanError records the planner's last failure for a group that has
	// a plan, at; an empty message clears it. A message over MaxPlanError
	// bytes is invalid.
	SetPlanError(ctx context.Context, groupID int64, message string, at time.Time) error
	// PlanErrors lists the failures recorded, by group id.
	PlanErrors(ctx context.Context) (map[int64]PlanError, error)
}

// PlanError is the planner's last failure for a group: what the provider or
// the store answered, and when.
type PlanError struct {
	Message string    `json:"message"`
	At      time.Time `json:"at"`
}

// MaxPlanError bounds a PlanError's message in bytes: the provider's text in
// it is a peer's, and a status line shows it.
const MaxPlanError = 300
