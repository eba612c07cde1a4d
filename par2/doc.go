// Package par2 reads the packets of a PAR2 file (PAR 2.0) that name a
// recovery set's files: the main packet (the set's file IDs, in order)
// and the file description packets (each file's name, length, MD5 and
// the MD5 of its first 16 KiB).
//
// Post-processing reads them from the first segment of a release's PAR2
// index (the .par2 without .volNN+MM): an obfuscated release's random
// file names then give way to the names the poster's files really had,
// which name the release. The data comes from a provider nobody trusts:
// each packet's MD5 is checked before its body is read, a packet may not
// claim more than MaxPacket bytes, names are bounded, and a packet cut by
// the end of the data (a first segment cuts the file) is left out.
// Errors wrap ErrNotPAR2, ErrCorrupt or ErrTooLarge; test them with
// errors.Is.
package par2
