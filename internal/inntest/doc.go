// Package inntest starts a throwaway INN (Debian's inn2) news server for
// end-to-end tests of the NNTP code.
//
// Start builds a private INN installation in a temporary directory: a copy of
// /etc/news whose inn.conf moves every path* setting into that directory and
// is handed to every INN program through the INNCONF environment variable; an
// active file with only the groups innd insists on; an empty history database
// made with makedbz; tradspool storage; tradindexed overview; a readers.conf
// that lets 127.0.0.1 read without authentication; an incoming.conf that makes
// localhost a peer, so IHAVE is accepted. innd runs in the foreground (-d -f)
// as a child of the test and is shut down with "ctlinnd shutdown" when the
// test ends. It listens on a loopback port the test process bound before
// starting it (handed over with systemd socket activation), so instances in
// parallel tests never race for a port, a directory or a control socket.
//
// As root, innd drops its privileges to the news user, so the directory is
// made under os.TempDir (not t.TempDir, whose parents are root's and 0700)
// and handed to news; it is removed when the test ends. innd runs only as root
// or as the news user (it checks for news before it reads runasuser from
// inn.conf): as any other user Start skips, like without INN.
//
// Reader connections are in transit mode first, because localhost is a peer:
// send MODE READER to be handed to nnrpd (DialReader does). The connections
// DialPeer and DialReader make set TCP_QUICKACK before every read: nnrpd
// writes a status line and the text after it separately, without
// TCP_NODELAY, so a client that delays its ACKs waits about 40 ms for every
// ARTICLE (Nagle holds the text back until the ACK comes).
//
// When the INN binaries (/usr/lib/news/bin/innd) are missing, Start skips the
// test, or fails it when EDGEINDEX_REQUIRE_INN=1 (CI sets it).
//
// Generate makes articles that look like a binaries group: multi-part yEnc
// posts from several posters, interleaved with text posts, some with body
// lines that start with a dot.
package inntest
