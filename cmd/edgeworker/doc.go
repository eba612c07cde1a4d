// Command edgeworker is an edge worker that indexes Usenet binaries: it
// leases ranges of a coordinator's groups, collates the overview lines of
// each chunk into binaries with package collate, and posts them as items.
//
//	EDGEINDEX_NODE_TOKEN=... edgeworker --coordinator http://127.0.0.1:7070 [--lanes history,tail]
//	    [--flush-incomplete] [--max-binaries 100000]
//
// The node token comes from EDGEINDEX_NODE_TOKEN (`coordinator node add
// NAME` prints one). --lanes names the lanes of ordered groups to work after
// each try for a range of an unordered group; "none" works unordered groups
// only. SIGINT or SIGTERM stops it: the range in hand is finished if only
// its finish is left, or else given back.
//
// One worker serves both kinds of group with one collator. At the end of a
// range of an unordered group the parts of binaries still incomplete are
// posted as incomplete items, so nothing read is lost; a consumer joins the
// items of a key with usenet.Merge. On an ordered lane the window is
// carried from range to range, through the lane's snapshots, and binaries
// that straddle ranges come out complete; --flush-incomplete flushes lanes
// at every range end too.
package main
