// Package release builds releases from the results feed: it groups the
// binaries a collating worker stored (usenet.Binary items) into the sets
// their posters posted, the way NNTmux makes releases of collections.
//
// A Builder reads the feed (batch.Store.Results) page by page from its
// cursor, merges the items of one key (usenet.Merge: a binary split by a
// range boundary, or repaired later, comes as several items), and hands
// each page to Store.PutReleases, which places the page's files into
// releases (Assign) and moves the cursor in the same transaction. So each
// item is consumed exactly once, by one of any number of builders sharing
// a consumer name, whenever they crash.
//
// A file joins a release when it has the same poster and the same set name
// as the release's files, and was posted within the window of its dates
// (Config.Window, 6 hours by default; dates from the binaries' Date
// headers). ParseSet takes the set name out of a subject: without file
// counters, sizes, "yEnc" and file extensions, so that these all clean to
// one key:
//
//	[01/15] - "name.part01.rar" yEnc
//	[14/15] - "name.vol07+08.par2" yEnc
//	(03/40) "name.r01" yEnc
//	name.nfo
//
// A release knows its files with their parts, its parts seen and expected,
// its files seen and expected (from the file counters), whether it is
// complete, its size, its groups and its posting date.
//
// A Builder runs inside `coordinator serve` (on by default; --releases=false
// turns it off), or in any program that embeds it:
//
//	b, err := release.NewBuilder(release.Config{Store: store})
//	go b.Run(ctx)
//
// Store.Releases pages through releases by an opaque cursor and
// Store.ReleaseByID returns one with its files: package nzb writes it as an
// NZB file. sqlstore implements Store on SQLite and PostgreSQL.
//
// A release's Name is the name people search by: a readable title in
// the subject wins over an obfuscated file name (ParseSet). Assign gives
// each release a Newznab category (Categorize, a table of rules over the
// name's words and the groups) and its TV episode (ParseEpisode) whenever
// it changes. Searcher is the search a store answers: every word of
// SearchWords must match, newest first.
package release
