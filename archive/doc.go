// Package archive tells, from the first bytes of an archive, whether it
// is password-protected: RAR 4 and RAR 5 (encrypted headers, or an
// encrypted file entry), 7z (an AES coder in its header, which with
// encrypted headers is the only thing the header holds) and ZIP (the
// encryption bit, or AES).
//
// Post-processing reads them from the first segment of a release's first
// archive volume and sets the release's Newznab password attr: 0 none, 1
// passworded, 2 potentially (an archive inside the archive). No archive
// tool is run: the readers are pure Go and read only headers, each block
// bounded by the data it is given and its CRC checked where the format
// has one, with a bounded number of blocks, so a header that points at
// itself ends the walk instead of looping. A 7z archive's header sits at
// its end, and 7-Zip packs it with LZMA: Inspect reads the archive
// through an io.ReaderAt (post-processing's fetches the segments a read
// needs), and unpacks the header, bounded by Max7zHeader, with
// github.com/ulikunitz/xz's LZMA reader. Errors wrap ErrNotArchive or
// ErrCorrupt; test them with errors.Is.
package archive
