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
package grouplease
