package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/lease"
)

func testChunkClaims(t *testing.T, e *env) {
	e.group(t, "g", false)
	e.ranges(t, "g", 1, 100, lease.LaneHistory)
	l := e.grant(t, "a")
	id := l.Range.ID
	c1, c2 := lease.Span{From: 1, To: 10}, lease.Span{From: 11, To: 20}
	claim := func(span lease.Span, owner string) bool {
		t.Helper()
		ok, err := e.ClaimChunk(e.ctx, id, span, owner, time.Minute)
		require.NoError(t, err)
		return ok
	}
	require.True(t, claim(c1, "coord-a"))
	require.True(t, claim(c1, "coord-a"), "the owner may claim again")
	require.False(t, claim(c1, "coord-b"), "two coordinators never fetch the same chunk")
	require.True(t, claim(c2, "coord-b"))

	e.clock.Advance(2 * time.Minute)
	require.True(t, claim(c1, "coord-b"), "an expired claim goes to the next asker")
	require.ErrorIs(t, e.ChunkFetched(e.ctx, id, c1, "coord-a"), edgeindex.ErrLeaseLost)
	require.NoError(t, e.ChunkFetched(e.ctx, id, c1, "coord-b"))
	e.clock.Advance(30 * time.Second)
	require.False(t, claim(c1, "coord-a"), "a fetched chunk is not fetched again while its claim holds")

	// A chunk reported corrupt is fetched again.
	_, err := e.Corrupt(e.ctx, id, fence(l), 1, "bad gzip")
	require.NoError(t, err)
	require.True(t, claim(c1, "coord-a"))
	require.NoError(t, e.ChunkFetched(e.ctx, id, c1, "coord-a"))
	require.NoError(t, e.ForgetChunk(e.ctx, id, c1, "coord-a"))
	require.True(t, claim(c1, "coord-b"))

	_, err = e.ClaimChunk(e.ctx, id, lease.Span{From: 5, To: 4}, "x", time.Minute)
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
	_, err = e.ClaimChunk(e.ctx, id, c1, "", time.Minute)
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
}

// A coordinator asks to claim only a chunk its spool lacks. A claim of
// another owner, fetched or not, holds until it expires: the chunk is in that
// coordinator's spool, or is being fetched, and is not fetched twice. Past
// its expiry, the claim goes to whoever asks, so a coordinator that lost its
// spool, or came back under another name, fetches the chunk again rather
// than waiting forever.
func testChunkClaimOfAnotherOwner(t *testing.T, e *env) {
	id, c1, claim := claimOneChunk(t, e)
	require.True(t, claim("coord-a"))
	require.NoError(t, e.ChunkFetched(e.ctx, id, c1, "coord-a"))
	e.clock.Advance(time.Minute - time.Second)
	require.False(t, claim("coord-b"), "a fetched chunk is not fetched again before its claim expires")
	e.clock.Advance(2 * time.Second)
	require.True(t, claim("coord-b"), "an expired claim goes to the next asker, fetched or not")
	require.ErrorIs(t, e.ChunkFetched(e.ctx, id, c1, "coord-a"), edgeindex.ErrLeaseLost, "the old owner holds no claim")
	require.False(t, claim("coord-a"), "the new claim holds")
	require.NoError(t, e.ChunkFetched(e.ctx, id, c1, "coord-b"))
	require.True(t, claim("coord-b"), "an owner may claim again a chunk it fetched: its copy was lost")
}

// A coordinator gives back only its own claim: one whose fetch failed after
// its claim expired and went to another does not drop the other's claim,
// which would let a third fetch the chunk too.
func testChunkClaimForgetOwn(t *testing.T, e *env) {
	id, c1, claim := claimOneChunk(t, e)
	require.True(t, claim("coord-a"))
	e.clock.Advance(2 * time.Minute)
	require.True(t, claim("coord-b"))
	require.NoError(t, e.ForgetChunk(e.ctx, id, c1, "coord-a"), "giving back a claim one does not hold is no error")
	require.False(t, claim("coord-c"), "coord-a's late give-back leaves coord-b's claim")
	require.NoError(t, e.ForgetChunk(e.ctx, id, c1, "coord-b"))
	require.True(t, claim("coord-c"), "the owner's give-back frees the chunk at once")
}

// claimOneChunk grants a range 1..100 of a new group and returns it, its
// first chunk of 10, and a function claiming that chunk for an owner for a
// minute.
func claimOneChunk(t *testing.T, e *env) (int64, lease.Span, func(owner string) bool) {
	t.Helper()
	e.group(t, "g", false)
	e.ranges(t, "g", 1, 100, lease.LaneHistory)
	id := e.grant(t, "w").Range.ID
	c1 := lease.Span{From: 1, To: 10}
	return id, c1, func(owner string) bool {
		t.Helper()
		ok, err := e.ClaimChunk(e.ctx, id, c1, owner, time.Minute)
		require.NoError(t, err)
		return ok
	}
}
