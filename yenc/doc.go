// Package yenc decodes one yEnc article body (yEnc 1.3): the segment of a
// file that a Usenet post carries, as post-processing reads it to look
// inside a release (its NFO, its PAR2 index, its first archive volume).
//
// Decode reads the body's =ybegin, optional =ypart, data lines and =yend,
// and checks what they claim against each other: the part's size, its
// place in the file, and its CRC32 (pcrc32, or crc32 for a file of one
// part). The body comes from a provider nobody trusts, so every number is
// bounded before it sizes anything: the decoded data may not pass the
// caller's limit, and an article that claims more is refused before it is
// decoded. Errors wrap ErrCorrupt (a bad CRC, a size that does not match,
// a missing =yend), ErrTooLarge or ErrNotYEnc; test them with errors.Is.
package yenc
