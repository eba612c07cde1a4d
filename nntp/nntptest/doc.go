// Package nntptest is a real NNTP server on 127.0.0.1 for tests: it speaks
// the greeting, CAPABILITIES, MODE READER, STARTTLS (with a generated
// self-signed certificate), AUTHINFO USER/PASS, GROUP, OVER, XOVER,
// XFEATURE COMPRESS GZIP, COMPRESS DEFLATE and QUIT over groups and overview lines the test
// supplies, bytes as given (invalid UTF-8 and lines starting with "." are
// fine; the server dot-stuffs them).
//
// Its Config has knobs for what a real server such as INN cannot be made to
// do on demand: every error reply (a 400 or 502 greeting, 481, 482 or 502 to
// AUTHINFO, 480 until authenticated, 483 without TLS, 411, 423 or 420 or an
// empty block for an empty range, 500 to OVER), article numbers above 2^31,
// a delay per line, a connection closed after K lines, a response that
// never ends (lines past the range, or lines too long to keep), a response
// that trickles a byte at a time, in-span lines of any size, a
// CAPABILITIES list of any size, data after a compressed response's
// terminator, a refused COMPRESS, a deflate stream cut inside a block or
// corrupt, a deflate bomb, a QUIT never answered, and a connection limit; the OVER
// misbehaviours may be limited to some groups (Config.Only). Stats counts connections (the most
// served at once, so a test can assert a client's pool never exceeded its
// maximum) and commands.
//
//	srv, err := nntptest.New(nntptest.Config{Groups: []nntptest.Group{
//		{Name: "alt.test", Lines: nntptest.Lines("alt.test", 1, 100)},
//	}})
//	...
//	defer srv.Close()
//
// Close ends every goroutine the server started.
package nntptest
