// Package grouplease holds groups, their range planning, and the lanes of
// ordered groups.
//
// A group's ranges live in one of two lanes: history (backfill) or tail (new
// posts). An ordered group's ranges are handed out only through its lanes:
// Store.GrantLane leases a whole group×lane to one node, fenced by a token
// that increases with every grant, and Store.Next hands that node the lane's
// ranges one at a time, in ascending article order. A failed range blocks its
// lane until it is retried, so the order is never broken.
//
// When a lane changes hands (a release, an expiry), its range in progress
// goes to the new holder from its resume point, with a new range token, and
// the old holder is fenced. SnapshotStore keeps the metadata of the worker's
// window state per lane; its next never goes back.
//
// A group with a GroupPlan has its ranges planned by the coordinator, the
// way NNTmux's update and backfill runs do: a Planner polls the provider's
// watermarks (GROUP) every interval, and PlanStore.PlanRanges adds tail
// ranges up to high − margin and history ranges from a target up to where
// the tail started, in one transaction per group, so coordinators sharing
// a database never plan a range twice. One GROUP reply never moves a
// cursor for good or expires articles: a low that rises, a high that jumps
// far and an empty group's reply are held back until a later poll confirms
// them (PlanStore.PlanRanges), and PlanStore.ResetPlan starts a group's
// planning over from the provider's watermarks. Articles a worker found
// absent from their chunk (batch.Batch.Missing) are fetched again later as
// repair ranges (PlanStore.PlanRepairs), a few times, then counted lost.
//
// History may go back to a date instead of an article count
// (GroupPlan.HistorySince): before the group's first split the Planner
// asks its DateFinder (PlannerConfig.Dates; nntp.Source is one) for the
// first article posted on or after it, and records it
// (PlanStore.SetHistoryStart); history then starts there.
package grouplease
