// Package spool holds where header chunks wait, once fetched, before a
// worker streams them.
//
// A chunk is the gzip of the NNTP overview lines of one span of a range: one
// line per article present, each ending in "\n", with the fields
// tab-separated as OVER sends them (number, Subject, From, Date, Message-ID,
// References, bytes, lines, any further fields); package overview parses,
// writes and reads them. A range's chunks are its spans of chunkSize aligned
// to the range start, see lease.Spans. Where chunks come from is package
// sources; package prefetch fetches them into a spool.
//
// The package has these parts:
//
//   - Store, what every spool does, and InCorpus, which says whether a
//     range's chunks wait in the corpus instead;
//   - Disk, the disk spool: one file per (range, span), written whole
//     (temporary file, rename; no fsync: a chunk can be fetched again),
//     bounded in total size (WaitRoom), with a broadcast when a chunk
//     arrives (Notify, WaitChunk). It survives a restart: Open recounts the
//     files, removes writes that a crash left behind, and after an unclean
//     stop (its marker left unlocked) deletes every chunk that is not whole
//     gzip, so it is fetched again;
//   - Bucket, the same spool in a blobstore.Store that coordinators on
//     several machines share (an S3 bucket): a chunk per blob, written with
//     one atomic Put, streamed from one GET; the size bound holds across
//     the coordinators within one Refresh, since each lists the store
//     every Refresh (see Bucket);
//   - Claims (and CorruptClaims), the claim per chunk in the database
//     that coordinators share, so that two of them do not fetch the same
//     chunk at once;
//   - Stream, which writes a range's chunks as edgeframe frames from its
//     next, corpus first, waiting for chunks still being fetched with
//     keepalives, checking the lease, and giving up after a wait limit.
//
// Errors wrap the sentinels of this package and of package lease
// (edgeindex.ErrInvalid for malformed arguments); test them with errors.Is.
// The conformance suite for any Store is spool/spooltest (RunStore for a
// store that keeps no files, RunShared for one that coordinators share).
package spool
