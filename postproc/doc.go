// Package postproc is the stage after the release builder: it reads a
// few article bodies of each release to tell its users what the headers
// cannot. From the NFO it keeps the text and the IMDb and TheTVDB ids;
// from the PAR2 index the names the poster's files really had, which
// rename an obfuscated release (8020 Other > Hashed) and so re-categorize
// it; from the first segment of the first archive volume (and for 7z the
// segments of its header, at its end) whether the archive is
// password-protected, the Newznab password attr.
//
// A Processor takes due releases from its Store (leased, so processes
// sharing a database never take the same one), reads what each needs
// through Bodies (for nntp.Source, BODY on a share of the provider's
// connections: nntp.Config.BodyConns), at most Config.MaxBodies bodies a
// release, and stores what it found under the same release id. A try
// whose body could not be read is retried with backoff, up to
// Config.Attempts tries; a corrupt piece (a bad yEnc CRC, a PAR2 packet
// or an archive header that does not hold together, an NFO past its
// bound) is left out and said in the release's reason. A release is
// searchable all along, and gains its name and attrs when it is done.
package postproc
