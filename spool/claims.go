package spool

import (
	"context"
	"time"

	"github.com/edgeindex/edgeindex/lease"
)

// Claims keeps a claim per range and chunk in the database that
// coordinators share, so two of them never fetch the same chunk. A claim
// expires after its ttl unless the chunk was fetched, so a coordinator that
// died mid-fetch does not hold a chunk forever.
type Claims interface {
	// ClaimChunk claims the chunk for owner; false when another owner holds
	// an unexpired claim, or fetched the chunk. An owner may claim again a
	// chunk it fetched (its copy was lost).
	ClaimChunk(ctx context.Context, rangeID int64, span lease.Span, owner string, ttl time.Duration) (bool, error)
	// ChunkFetched marks owner's claimed chunk as fetched.
	ChunkFetched(ctx context.Context, rangeID int64, span lease.Span, owner string) error
	// ForgetChunk drops the chunk's claim, so it is fetched again.
	ForgetChunk(ctx context.Context, rangeID int64, span lease.Span) error
}
