// Package inflate is compress/flate's decompressor (Go 1.26), copied with
// one change: Read hands on a block's data as soon as the block ends.
//
// compress/flate keeps a finished block's data until a stored block, a
// full 32 KiB window or the end of the stream. A sync flush ends in an
// empty stored block, so a Go writer's flushes reach a Go reader; zlib's
// Z_PARTIAL_FLUSH, which INN's nnrpd uses after each reply of a
// connection under COMPRESS DEFLATE (RFC 8054), ends in an empty
// fixed-code block instead, so compress/flate would wait for more of the
// stream, which the server sends only after the next command. The change
// is the one proposed for compress/flate in golang/go pull request 68130.
// The decoder reads no byte past the symbol it decodes, so nothing waits
// for the bits of the empty block that zlib keeps back.
//
// The code is under the Go license (LICENSE in this directory).
package inflate
