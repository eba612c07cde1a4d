// Package nzb writes releases as NZB 1.1 files, the XML a downloader
// (NZBGet, SABnzbd) reads to fetch a release's articles by message-id and
// rebuild its files.
//
// Write renders a release.Release (as release.Store.ReleaseByID returns
// it) straight to a writer, escaping as it goes: no DOM, no reflection,
// no allocation per segment, so a release of tens of thousands of
// segments costs a few milliseconds. Whatever the subjects, names and
// posters hold (XML-special characters, bytes that are not UTF-8, control
// characters), the output is well-formed and valid against the NZB 1.1
// DTD (testdata/nzb-1.1.dtd): Text says what a reader reads back.
//
// An HTTP handler serving an NZB is a few lines:
//
//	r, err := store.ReleaseByID(ctx, id) // release.ErrNotFound: 404
//	...
//	if err := nzb.Check(r); err != nil { ... } // ErrEmpty: 404
//	w.Header().Set("Content-Type", nzb.ContentType)
//	w.Header().Set("Content-Disposition", nzb.ContentDisposition(r.Name))
//	err = nzb.Write(w, r)
//
// An Encoder writes the same document one file at a time, for a release
// too large to hold with all its parts: the Newznab front door streams
// each NZB so, from newznab.Store.ReleaseFiles.
//
// SafeFileName makes a release's name safe as a file name in that header
// and on any file system.
package nzb
