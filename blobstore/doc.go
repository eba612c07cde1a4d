// Package blobstore keeps blobs, byte strings under '/'-separated keys, on
// a local disk (Dir) or in an S3-compatible bucket (S3). The spool, the
// corpus and the coordinator's lane snapshots each keep their bytes in a
// Store when coordinators on several machines share one bucket; Sub gives
// each its own part of it.
//
// Store is small (Put, Open, Stat, Delete, List) and every call is atomic
// per blob: a Put is seen whole or not at all, by any reader on any
// machine, and a Put that fails (the reader's error, a size that does not
// match, a crash) leaves the blob as it was. Dir writes a temporary file,
// fsyncs it and renames it into place; S3 sends one PUT with the length
// known, or a multipart upload that is completed only after the last byte
// was read and aborted on an error, so the object appears at once, whole.
// Checked lets a caller refuse bytes (a snapshot that is not gzip) after
// the last one is read and before the blob becomes visible.
//
// Open streams a blob with its size known before the first byte, holding
// no copy of it in memory: a file on disk, the body of one GET on S3.
//
// ParseURL reads the --storage URL of a coordinator,
// s3://BUCKET[/PREFIX]?endpoint=HOST:PORT&tls=false&path-style=true, with
// the endpoint, region and credentials from the standard AWS environment
// variables where the URL leaves them out. Credentials are never printed:
// S3Config.String and Redact leave them out.
//
// Keys are made of elements separated by '/': each element is not empty,
// does not begin with '.', and holds only ASCII letters, digits and
// "-_.~%+=,@"; a key is at most 900 bytes. So a key is the same path on
// every file system and never leaves Dir's directory, and S3 needs no
// escaping. Errors wrap ErrNotFound (which is edgeindex.ErrNotFound) and
// edgeindex.ErrInvalid for a malformed key; test them with errors.Is.
//
// The conformance suite for any Store is blobstore/blobtest.
package blobstore
