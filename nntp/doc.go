// Package nntp is a sources.ChunkSource on an NNTP provider, built on
// net/textproto and the standard library, with compress/flate's
// decompressor adapted for INN (internal/inflate).
//
// A Source keeps a pool of up to Config.MaxConns connections (providers
// limit them). Each connection is dialled plain or with TLS (nntps://),
// reads the greeting (200 or 201; 400 and 502 are ErrRefused), asks
// CAPABILITIES (a server that refuses it is fine), sends MODE READER only
// when the server needs it (it lists MODE-READER, or no READER, or no
// capabilities at all), upgrades with STARTTLS when offered (or required,
// Config.StartTLS), logs in with AUTHINFO USER/PASS, and then asks for
// compression (Config.Compress). A connection remembers the
// group it selected and its high watermark then, so a run of chunks of one
// group costs one GROUP; a span past that high selects the group again,
// since a server may fix a group's articles at GROUP (INN's nnrpd does).
// Reads ask for quick ACKs on Linux: nnrpd writes a reply's status line and
// text apart with Nagle on, and a delayed ACK costs each short reply 40 ms.
//
// Fetch sends OVER for the span, falling back to XOVER for good (per
// Source) when the server answers OVER with 500, and writes the lines into
// a gzip stream as they arrive: each dot-unstuffed, its CRLF made LF, its
// bytes kept as sent (no UTF-8 is assumed). 423, 420 and an empty block are
// an empty chunk.
//
// Compression. By default (CompressAuto) a connection sends COMPRESS
// DEFLATE (RFC 8054) when CAPABILITIES lists it, after AUTHINFO (the list
// is read again after a login, as RFC 4643 says); on 206 the connection is
// raw deflate both ways: every command goes as stored deflate blocks
// ending on a byte boundary, as a sync flush does (no compressor state
// for a few dozen bytes), and everything the server sends is inflated, replies
// flushed with zlib's Z_PARTIAL_FLUSH (INN's nnrpd) included. A refused
// COMPRESS leaves the connection plain. Otherwise, when CAPABILITIES lists
// XFEATURE-COMPRESS GZIP, it sends XFEATURE COMPRESS GZIP, and a response
// that comes compressed is inflated on the way: gzip when it starts with
// 0x1f 0x8b, zlib otherwise, with the terminating line inside the
// compressed data or after it, as servers differ. CompressDeflate
// requires COMPRESS DEFLATE (ErrCompressUnavailable); CompressGzip sends
// XFEATURE COMPRESS GZIP unlisted, as many servers that accept it do not
// list it; CompressNone asks for neither. Stats counts the connections of
// each kind. The bounds below hold for the inflated text: MaxFetchBytes
// counts inflated bytes and the line bounds inflated lines, read through
// a fixed buffer, so a reply that inflates a thousandfold (a deflate bomb)
// is cut at the bound and never held; the socket's deadlines hold under
// the inflater, as does a bound on the bytes each call reads off the wire
// (empty deflate blocks inflate to nothing, so the text bounds alone would
// not end them), and a deflate stream that is corrupt (ErrProtocol) or cut
// short drops the connection.
//
// Every read and write has a deadline (Config.Timeout), and so does every
// whole exchange, so a server that trickles bytes cannot hold one: the
// handshake, GROUP and QUIT end within Timeout, a fetch of n articles
// within Timeout + n KiB at Config.MinRate (ErrDeadline). Every reply is
// read with a byte bound, and refused as soon as it passes: a status line
// or a CAPABILITIES line at 4096 bytes, the CAPABILITIES list at 256 KiB or
// 1000 lines, a fetch at Config.MaxFetchBytes inflated and its chunk at
// Config.MaxChunkBytes compressed (ErrTooLarge; ErrChunkTooLarge for a
// fetch, which is also overview.ErrBadChunk); lines too long to keep
// count against the drop limit as they are skipped. Fetches hold at most
// MaxConns-1 connections, so GROUP always finds one. A context's end
// closes the connection in use. A connection that saw an I/O error, a
// timeout or anything out of step is closed, never reused; dialling again
// after failures waits with exponential backoff and jitter. Article
// numbers are int64 throughout.
//
// Config.Budget shares a provider's connections with other coordinators:
// every connection holds a Slot of it while open (budget.go, package
// connlease). Source.FindDate finds the first article of a date by
// bisection over OVER windows, at most MaxDateCalls commands (date.go).
//
// Errors: ErrNoSuchGroup (411, which is also sources.ErrNoSuchGroup),
// ErrAuthRequired (480), ErrEncryptionRequired (483), ErrAuthFailed,
// ErrRefused, ErrTLSUnavailable, ErrCompressUnavailable, ErrProtocol,
// ErrDeadline, ErrTooLarge, ErrChunkTooLarge, ErrSlotLost, ErrDateSearch
// and ErrBadURL are sentinels for
// errors.Is; other unexpected replies are a *ProtocolError with the code and
// the server's text. The password is never in an error or in Config's
// String.
//
// The package nntptest is a real NNTP server for tests, with knobs for
// every failure above.
package nntp
