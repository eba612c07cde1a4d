// Package prefetch fetches header chunks ahead of the workers that stream
// them: from a sources.ChunkSource into a spool.Store, or into the corpus
// for capture ranges (spool.InCorpus).
//
// A Prefetcher fetches the chunks of leased ranges first, in stream order
// from each range's next, then looks ahead into pending ranges, with
// bounded concurrency (Config.Concurrency), a claim per chunk in the
// database that coordinators share (spool.Claims), retries with jittered
// backoff, and capture ranges going to the corpus. Lookahead fills at most
// half the spool, so leased ranges always have room. What to fetch comes
// from Targets, which package sqlstore implements.
//
// A chunk the source cannot make (an error wrapping overview.ErrBadChunk)
// is not retried: when the claims are a spool.CorruptClaims, it counts as a
// corrupt attempt of its range. A group the source does not carry (an error
// wrapping sources.ErrNoSuchGroup) is not retried either.
//
// Errors wrap edgeindex.ErrInvalid for a Config that lacks what it needs;
// test them with errors.Is.
package prefetch
