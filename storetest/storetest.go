// Package storetest is the conformance suite of edgeindex's storage
// interfaces. Every backend runs the same cases, River-style:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T, c clock.Clock) storetest.Backend {
//			return openMyBackend(t, c)
//		})
//	}
//
// The cases live in files by area, as River's driver suite does: groups.go
// (groups, ranges and their listing), grant.go (grants, expiry, fencing,
// finish, release, corrupt), grantretry.go (a range reported corrupt
// waits out a retry delay), batch.go (the batch rules and the results feed),
// final.go (final batches), lanes.go and fence.go (lanes and their
// fences), snapshots.go, nodes.go, claims.go (chunk claims), fleet.go (fleet
// reads), plan.go (planning and repairs), plan_date.go (history back to a date), plan_hostile.go (a provider's
// odd watermarks), releases.go (building releases), search.go (searching
// them), users.go (the Newznab API's users, keys and limits) and
// connslots.go (the providers' connection slots);
// helpers.go holds what they share. RunConcurrent and
// RunFencingRace (concurrent.go) and RunLinearizable (linearize*.go) are
// suites of their own.
package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/connlease"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/node"
	"github.com/edgeindex/edgeindex/spool"
)

// Backend is what the suite tests, the store interfaces alone: every
// store a coordinator's Service uses (coordinator.Store is their union),
// the planning its daemon adds (grouplease.PlanStore) and the providers'
// connection budgets (connlease.Store).
type Backend interface {
	lease.Store
	batch.Store
	grouplease.Catalog
	grouplease.Store
	grouplease.SnapshotStore
	grouplease.PlanStore
	node.Store
	spool.Claims
	connlease.Store
	Ping(ctx context.Context) error
}

// Open returns a new, empty backend whose one clock is c. The backend is
// closed by a t.Cleanup it registers.
type Open func(t *testing.T, c clock.Clock) Backend

// NewClock returns a clock.Manual at the fixed instant the cases start at:
// expiry is decided by it, not by sleeping.
func NewClock() *clock.Manual {
	return clock.NewManual(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
}

// env is one case's backend and clock.
type env struct {
	Backend
	clock *clock.Manual
	ctx   context.Context
}

func newEnv(t *testing.T, open Open) *env {
	t.Helper()
	c := NewClock()
	return &env{Backend: open(t, c), clock: c, ctx: t.Context()}
}

// Run runs every conformance case against backends made by open.
func Run(t *testing.T, open Open) {
	t.Helper()
	cases := []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		{"GroupAdd", testGroupAdd},
		{"RangeAdd", testRangeAdd},
		{"RangeAddBadInput", testRangeAddBadInput},
		{"GrantOrder", testGrantOrder},
		{"GrantSkipsOrderedAndDone", testGrantSkipsOrdered},
		{"ExpiryAndRegrant", testExpiryAndRegrant},
		{"Fencing", testFencing},
		{"Finish", testFinish},
		{"Release", testRelease},
		{"Corrupt", testCorrupt},
		{"GrantCorruptWaits", testGrantCorruptWaits},
		{"GrantCorruptWaitsTogether", testGrantCorruptWaitsTogether},
		{"GrantCorruptWaitsHandOver", testGrantCorruptWaitsHandOver},
		{"BatchRules", testBatchRules},
		{"FinalBatch", testFinalBatch},
		{"FinalBatchFences", testFinalBatchFences},
		{"PutMany", testPutMany},
		{"BatchRecords", testBatchRecords},
		{"GrantMany", testGrantMany},
		{"FinishMany", testFinishMany},
		{"ResultsFeed", testResultsFeed},
		{"ItemValues", testItemValues},
		{"LaneGrant", testLaneGrant},
		{"LaneNextInOrder", testLaneNext},
		{"LaneChangesHands", testLaneChangesHands},
		{"LaneFailedHeadBlocks", testLaneFailedHead},
		{"LaneGrantFencesRanges", testLaneGrantFencesRanges},
		{"LaneExpiredNotRegranted", testLaneExpiredNotRegranted},
		{"LaneFenceRace", testLaneFenceRace},
		{"Snapshots", testSnapshots},
		{"Nodes", testNodes},
		{"RangesList", testRangesList},
		{"ChunkClaims", testChunkClaims},
		{"ChunkClaimOfAnotherOwner", testChunkClaimOfAnotherOwner},
		{"ChunkClaimForgetOwn", testChunkClaimForgetOwn},
		{"FleetReads", testFleetReads},
		{"PlanTailAndHistory", testPlanTailAndHistory},
		{"PlanHistoryBack", testPlanHistoryBack},
		{"PlanAroundRanges", testPlanAroundRanges},
		{"PlanAhead", testPlanAhead},
		{"PlanBillion", testPlanBillion},
		{"PlanBadInput", testPlanBadInput},
		{"PlanConcurrent", testPlanConcurrent},
		{"PlanEmptyReply", testPlanEmptyReply},
		{"PlanEmptyFirstReply", testPlanEmptyFirstReply},
		{"PlanLowConfirmed", testPlanLowConfirmed},
		{"PlanHighJump", testPlanHighJump},
		{"PlanHighConfirmed", testPlanHighConfirmed},
		{"PlanReset", testPlanReset},
		{"BackfillHistoryDate", testBackfillHistoryDate}, {"BackfillHistoryDateReplan", testBackfillHistoryDateReplan},
		{"BackfillHistoryDateBadInput", testBackfillHistoryDateBadInput},
		{"Repair", testRepair},
		{"RepairOrderedAndExpired", testRepairOrderedAndExpired},
		{"MissingBadInput", testMissingBadInput},
		{"ReleasesBuild", testReleasesBuild}, {"ReleasesExactlyOnce", testReleasesExactlyOnce}, {"ReleasesPaging", testReleasesPaging}, {"ReleasesBadInput", testReleasesBadInput},
		{"ProvidersReleasesByNewsgroup", testProvidersReleasesByNewsgroup},
		{"SearchWords", testSearchWords}, {"SearchFilters", testSearchFilters}, {"SearchPaging", testSearchPaging},
		{"SearchIndexedOnce", testSearchIndexedOnce}, {"SearchHostileNames", testSearchHostileNames}, {"SearchBadQueries", testSearchBadQueries},
		{"UsersManage", testUsersManage}, {"UsersRequestLimit", testUsersRequestLimit}, {"UsersGrab", testUsersGrab},
		{"UsersConcurrentLimit", testUsersConcurrentLimit},
		{"ConnSlotsTake", testConnSlotsTake}, {"ConnSlotsExpiry", testConnSlotsExpiry}, {"ConnSlotsRace", testConnSlotsRace}, {"ConnSlotsSize", testConnSlotsSize},
		{"ConnSlotsDemand", testConnSlotsDemand},
		{"PlanErrors", testPlanErrors},
		{"GroupRemove", testGroupRemove}, {"GroupRemoveBusy", testGroupRemoveBusy}, {"GroupRemoveTypo", testGroupRemoveTypo}, {"GroupRemovePlan", testGroupRemovePlan},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, newEnv(t, open))
		})
	}
}
