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
