// Package collate is the collation logic of a Usenet header indexer: it
// turns a group's overview lines into binaries, one per file posted in
// yEnc parts, for an edge worker to post as batch items. It is the Handler
// a real worker runs: cmd/edgeworker wraps it in a command, and the
// coordinator's demo runs it in process. Like package edge it imports no
// server package.
//
// usenet.ParseSubject reads a subject such as
//
//	[01/40] - "name.part01.rar" yEnc (1/50)
//
// into the binary's normalized subject (Base: without "Re:" and the part
// counter), its file name, the part counter (1/50) and the file counter
// [01/40]. A subject without a part counter is not a binary part and is
// skipped (counted in Headers all the same).
//
// A Collator is an edge.Handler and an edge.Windowed. It keys each binary by
// usenet.Key(poster, base, total), a truncated SHA-256, and keeps the incomplete
// ones in a window. The item of a binary is emitted in the batch of the
// chunk that completes it, with every part (part number, article number,
// message-id, bytes); its value is a usenet.Binary in JSON:
//
//	{"subject": "[01/40] - \"name.part01.rar\" yEnc", "name": "name.part01.rar",
//	 "poster": "...", "group": "...", "date": "...", "total": 50, "complete": true,
//	 "parts": [{"n": 1, "article": 1001, "messageId": "<...>", "bytes": 716800}, ...]}
//
// On an ordered lane the window is saved as the lane's snapshot after each
// range (SaveWindow) and loaded by the lane's next holder (LoadWindow), so a
// binary that straddles two ranges completes in the second. On an unordered
// group, where ranges are handled in any order by any worker,
// Config.FlushIncomplete emits the parts of the binaries still incomplete
// at the end of each range as incomplete items ("complete": false), so no
// part read is lost; and a full window (Config.MaxBinaries) emits its oldest
// binaries the same way. A consumer of the results feed joins all items of
// one key with usenet.Merge: the union of their parts, complete when they cover
// 1..total. Merging is idempotent, so a binary that was emitted twice (a
// chunk handled again after a lost lease) merges to the same value.
//
// What the window cannot recover: when a lane changes hands in the middle
// of a range, the new holder loads the window saved at the end of the
// previous range and resumes from the range's next, so the parts the old
// holder read between the range's start and next are in no window; the
// binaries they belong to never complete there, and come out only as
// incomplete items when the window evicts them. Likewise LoadWindow
// replaces the whole window: a worker that serves unordered ranges and
// lanes with one Collator (as edge.Worker does) needs FlushIncomplete, or
// the parts left at the end of an unordered range are dropped when the
// next lane's window is loaded.
package collate
