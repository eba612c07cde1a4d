// Package corpus is the durable archive of header chunks, per group and
// span, for ranges that are captured: a range stored here is streamed from
// here rather than fetched again.
//
// Disk keeps one file per chunk, dir/<escaped group>/<from>-<to>.gz. Writes
// go to a temporary file in the same directory, which is synced, renamed
// into place, and the directory synced, so a crash leaves the old chunk or
// the new one, never half of one; Open removes the temporary files a crash
// left behind. Group names never become paths unescaped: EscapeGroup maps
// every name to one path element that is not "." or "..", holds no
// separator, and differs for names that differ even on a case-insensitive
// file system; so a group named "../x" stays inside the directory.
//
// Bucket keeps the same chunks in a blobstore.Store that coordinators on
// several machines share (an S3 bucket): a blob per chunk,
// <escaped group>/<from>-<to>.gz, written with one atomic Put, so it is
// never seen half-written; like Disk it keeps no index in memory.
//
// Errors wrap the sentinels of this package and of package lease
// (edgeindex.ErrInvalid for malformed arguments); test them with errors.Is.
// The conformance suite for any Store is corpus/corpustest (RunStore for
// a store that keeps no files).
package corpus
