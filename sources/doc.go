// Package sources holds where header chunks come from.
//
// A chunk is the gzip of the NNTP overview lines of one span of a range: one
// line per article present, each ending in "\n", with the fields
// tab-separated as OVER sends them (number, Subject, From, Date, Message-ID,
// References, bytes, lines, any further fields); package overview parses,
// writes and reads them. A range's chunks are its spans of chunkSize aligned
// to the range start, see lease.Spans.
//
// The package has three parts:
//
//   - ChunkSource, the small interface for where chunks come from (an NNTP
//     provider, package nntp's Source; the Synthetic generator; or any func
//     pair through Funcs), with ErrNoSuchGroup for a group a source does
//     not carry;
//   - Synthetic, a deterministic generator of Usenet-like binary posts that
//     needs no network;
//   - Router, which sends each group to its provider's source:
//     NEWSGROUP@PROVIDER to PROVIDER's, a plain NEWSGROUP to the default
//     one's.
//
// Where chunks wait once fetched is package spool; package prefetch fetches
// them from a ChunkSource into a spool. Errors wrap ErrNoSuchGroup, or
// edgeindex.ErrInvalid for malformed arguments; test them with errors.Is.
// The conformance suite for any ChunkSource is sources/sourcetest.
package sources
