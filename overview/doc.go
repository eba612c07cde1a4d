// Package overview is the overview line format that both sides of edgeindex
// share: the chunk sources and the spool on the coordinator's side, the edge
// worker and its handlers on the other.
//
// A chunk is the gzip of the NNTP overview lines of one span of a range: one
// line per article present, each ending in "\n", with the fields
// tab-separated as OVER sends them (number, Subject, From, Date, Message-ID,
// References, bytes, lines, any further fields such as Xref).
//
// Parse reads one line into an Overview and Append writes one back;
// ReadChunk (or ReadChunkFrom, on a stream) inflates a chunk and hands its
// lines to a func, in order. Lines longer than MaxLineBytes are refused
// before they are held whole. Every malformed chunk or line is an error
// wrapping ErrBadChunk: a worker's handler returns it, and the worker
// reports the chunk corrupt so it is fetched again.
//
// The package imports only the standard library, so a worker can read
// chunks without pulling in any of the server.
package overview
