package spool

import (
	"context"
	"time"

	"github.com/edgeindex/edgeindex/lease"
)

// Claims keeps a claim per range and chunk in the database that
// coordinators share, so two of them do not fetch the same chunk at once. A
// claim expires after its ttl, fetched or not, so neither a coordinator that
// died mid-fetch nor one whose spool was lost holds a chunk forever. The
// prefetcher claims only chunks its spool lacks.
type Claims interface {
	// ClaimChunk claims the chunk for owner; false when another owner holds
	// an unexpired claim, fetched or not. An owner may claim again a chunk
	// it claimed at any time (its copy was lost); anyone may claim a chunk
	// whose claim expired.
	ClaimChunk(ctx context.Context, rangeID int64, span lease.Span, owner string, ttl time.Duration) (bool, error)
	// ChunkFetched marks owner's claimed chunk as fetched.
	ChunkFetched(ctx context.Context, rangeID int64, span lease.Span, owner string) error
	// ForgetChunk drops owner's claim of the chunk, so it is fetched again
	// (owner's fetch failed). A claim owner no longer holds is left alone.
	ForgetChunk(ctx context.Context, rangeID int64, span lease.Span, owner string) error
}

// CorruptClaims is Claims that can also count a chunk the source cannot
// make against its range. When prefetch.Config.Claims is one, a fetch that
// fails with an error wrapping overview.ErrBadChunk (a chunk past the frame
// limit, say: retrying makes the same chunk) is not retried; the range
// counts a corrupt attempt, as when a worker reports a chunk corrupt, and
// fails at the store's maximum instead of being fetched forever.
type CorruptClaims interface {
	Claims
	// ChunkCorrupt counts one attempt of the range for the chunk (failed
	// at the store's maximum attempts, keeping reason), and drops owner's
	// claim of the chunk. It returns the range as it is after.
	ChunkCorrupt(ctx context.Context, rangeID int64, span lease.Span, owner, reason string) (lease.Range, error)
}
