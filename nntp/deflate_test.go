package nntp_test

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/nntp"
	"github.com/edgeindex/edgeindex/nntp/nntptest"
)

// TestDeflateSameChunksAsPlain: by default a Source turns COMPRESS DEFLATE
// on when the server lists it, after AUTHINFO, and its chunks are the
// bytes a plain connection makes; every command it sends after the 206 is
// read by the server through an inflater.
func TestDeflateSameChunksAsPlain(t *testing.T) {
	t.Parallel()
	lines := nntptest.Lines(testGroup, 1, 3000)
	cfg := nntptest.Config{User: "reader", Pass: "s3cret", AuthFirst: true, Groups: oneGroup(lines)}
	plainSrv := serve(t, cfg)
	cfg.Deflate = true
	srv := serve(t, cfg)
	plain := open(t, plainSrv, nil)
	src := open(t, srv, nil)
	for _, sp := range []lease.Span{span(1, 1000), span(1001, 3000), span(2990, 4000), span(5000, 6000)} {
		want, err := plain.Fetch(ctxT(t), testGroup, sp)
		require.NoError(t, err)
		got, err := src.Fetch(ctxT(t), testGroup, sp)
		require.NoError(t, err)
		require.Equal(t, want, got, "span %v", sp)
	}
	require.Equal(t, linesText(lines[:1000]...), func() string {
		c, err := src.Fetch(ctxT(t), testGroup, span(1, 1000))
		require.NoError(t, err)
		return chunkText(t, c)
	}())
	st := src.Stats()
	require.Equal(t, int64(1), st.Deflate, "the one connection is deflated")
	require.Zero(t, st.Gzip)
	require.Zero(t, plain.Stats().Deflate)

	ss := srv.Stats()
	require.Equal(t, 1, ss.Commands["COMPRESS"])
	require.Zero(t, ss.Commands["XFEATURE"], "deflate is asked for, not gzip")
	// Every command after the 206 (GROUP and OVER) came deflated, or the
	// server could not have read it.
	require.Equal(t, 5, ss.Commands["OVER"])
	require.Equal(t, ss.Commands["GROUP"]+ss.Commands["OVER"], ss.Deflated)
	require.Equal(t, 1, ss.Commands["AUTHINFO"]/2, "one login, before COMPRESS")
}

// TestDeflateCommandsDeflatedUntilQuit: QUIT on close goes deflated too.
func TestDeflateCommandsDeflatedUntilQuit(t *testing.T) {
	t.Parallel()
	srv := serve(t, nntptest.Config{Deflate: true, Groups: oneGroup(nntptest.Lines(testGroup, 1, 10))})
	src := open(t, srv, nil)
	require.NoError(t, src.Check(ctxT(t)))
	require.Zero(t, srv.Stats().Deflated, "nothing sent after the 206 yet")
	src.Close()
	require.Eventually(t, func() bool { return srv.Stats().Commands["QUIT"] == 1 }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, 1, srv.Stats().Deflated, "QUIT was read through the inflater")
}

// TestDeflateRefused: a refused COMPRESS leaves the connection plain under
// compress=auto, and fails it with ErrCompressUnavailable under
// compress=deflate, as does a server that does not list it.
func TestDeflateRefused(t *testing.T) {
	t.Parallel()
	for _, code := range []int{403, 502} {
		srv := serve(t, nntptest.Config{Deflate: true, DeflateReply: code, Groups: oneGroup(nntptest.Lines(testGroup, 1, 100))})
		src := open(t, srv, nil)
		chunk, err := src.Fetch(ctxT(t), testGroup, span(1, 100))
		require.NoError(t, err, "auto goes on plain after %d", code)
		require.Equal(t, linesText(nntptest.Lines(testGroup, 1, 100)...), chunkText(t, chunk))
		require.Zero(t, src.Stats().Deflate)
		require.Equal(t, 1, srv.Stats().Commands["COMPRESS"])
		require.Zero(t, srv.Stats().Deflated)

		strict := open(t, srv, func(c *nntp.Config) { c.Compress = nntp.CompressDeflate })
		err = strict.Check(ctxT(t))
		require.ErrorIs(t, err, nntp.ErrCompressUnavailable, "code %d", code)
		var pe *nntp.ProtocolError
		require.ErrorAs(t, err, &pe)
		require.Equal(t, code, pe.Code)
	}

	srv := serve(t, nntptest.Config{Groups: oneGroup(nntptest.Lines(testGroup, 1, 100))})
	err := open(t, srv, func(c *nntp.Config) { c.Compress = nntp.CompressDeflate }).Check(ctxT(t))
	require.ErrorIs(t, err, nntp.ErrCompressUnavailable)
	require.Contains(t, err.Error(), "does not list it")
	require.Zero(t, srv.Stats().Commands["COMPRESS"], "never sent unlisted")
	require.NoError(t, open(t, srv, nil).Check(ctxT(t)), "auto without it is plain")
	require.Zero(t, srv.Stats().Commands["COMPRESS"]+srv.Stats().Commands["XFEATURE"])
}

// TestDeflateModes: which compression each mode asks for of a server that
// offers both, or only XFEATURE COMPRESS GZIP.
func TestDeflateModes(t *testing.T) {
	t.Parallel()
	lines := nntptest.Lines(testGroup, 1, 100)
	cases := []struct {
		mode               nntp.CompressMode
		deflate            bool // the server lists COMPRESS DEFLATE
		compress, xfeature int  // COMPRESS and XFEATURE sent
		deflated, gzipped  int64
	}{
		{nntp.CompressAuto, true, 1, 0, 1, 0},
		{nntp.CompressAuto, false, 0, 1, 0, 1},
		{nntp.CompressGzip, true, 0, 1, 0, 1},
		{nntp.CompressDeflate, true, 1, 0, 1, 0},
		{nntp.CompressNone, true, 0, 0, 0, 0},
	}
	for _, c := range cases {
		srv := serve(t, nntptest.Config{Deflate: c.deflate, Compress: true, Groups: oneGroup(lines)})
		src := open(t, srv, func(cfg *nntp.Config) { cfg.Compress = c.mode })
		chunk, err := src.Fetch(ctxT(t), testGroup, span(1, 100))
		require.NoError(t, err, "%s", c.mode)
		require.Equal(t, linesText(lines...), chunkText(t, chunk), "%s", c.mode)
		ss, st := srv.Stats(), src.Stats()
		require.Equal(t, [2]int{c.compress, c.xfeature}, [2]int{ss.Commands["COMPRESS"], ss.Commands["XFEATURE"]}, "%s, deflate listed %t", c.mode, c.deflate)
		require.Equal(t, [2]int64{c.deflated, c.gzipped}, [2]int64{st.Deflate, st.Gzip}, "%s, deflate listed %t", c.mode, c.deflate)
	}
}

// TestDeflateStreamCutMidBlock: a deflate stream that stops inside a block
// fails the fetch, and the connection is dropped: the next fetch dials a
// fresh one and gets every line.
func TestDeflateStreamCutMidBlock(t *testing.T) {
	t.Parallel()
	for _, corrupt := range []bool{false, true} {
		lines := nntptest.Lines(testGroup, 1, 100)
		srv := serve(t, nntptest.Config{Deflate: true, DeflateBreak: 50, DeflateCorrupt: corrupt, Groups: oneGroup(lines)})
		src := open(t, srv, func(c *nntp.Config) { c.MaxConns = 1 })
		_, err := src.Fetch(ctxT(t), testGroup, span(1, 100))
		if corrupt {
			require.ErrorIs(t, err, nntp.ErrProtocol)
			require.Contains(t, err.Error(), "corrupt deflate stream")
		} else {
			require.ErrorIs(t, err, io.ErrUnexpectedEOF)
			require.Contains(t, err.Error(), "deflate stream was cut")
		}
		srv.Update(func(c *nntptest.Config) { c.DeflateBreak = 0 })
		chunk, err := src.Fetch(ctxT(t), testGroup, span(1, 100))
		require.NoError(t, err, "corrupt %t: the next fetch gets a fresh connection", corrupt)
		require.Equal(t, linesText(lines...), chunkText(t, chunk))
		st := src.Stats()
		require.Equal(t, int64(2), st.Dials, "corrupt %t: the broken connection was not reused", corrupt)
		require.Equal(t, int64(2), st.Deflate)
	}
}

// TestDeflateBombCut: a stream of a few MiB that inflates to 8 GiB is cut
// at MaxFetchBytes of inflated text, with the heap flat: no inflated
// reply is held whole.
func TestDeflateBombCut(t *testing.T) {
	srv := serve(t, nntptest.Config{Deflate: true, DeflateBomb: 8 << 30, Groups: oneGroup(nntptest.Lines(testGroup, 1, 10))})
	src := open(t, srv, func(c *nntp.Config) { c.MaxFetchBytes = 64 << 20 })
	var err error
	peak := heapPeak(t, func() { _, err = src.Fetch(ctxT(t), testGroup, span(1, 10)) })
	require.ErrorIs(t, err, nntp.ErrChunkTooLarge)
	require.ErrorIs(t, err, nntp.ErrTooLarge)
	require.Less(t, peak, uint64(16<<20), "heap peak %d", peak)
	t.Logf("%v; heap peak %d KiB", err, peak>>10)
	st := src.Stats()
	require.Equal(t, int64(1), st.CutTooLarge)
	require.Equal(t, int64(1), st.Deflate)

	srv.Update(func(c *nntptest.Config) { c.DeflateBomb = 0 })
	_, err = src.Fetch(ctxT(t), testGroup, span(1, 10))
	require.NoError(t, err, "the bombed connection was dropped")
}

// TestDeflateTrickleCutByDeadline: the socket's deadlines hold under the
// inflater: a deflated reply that trickles a byte at a time (each in a
// sync-flushed block of its own) is cut by the fetch's deadline.
func TestDeflateTrickleCutByDeadline(t *testing.T) {
	t.Parallel()
	srv := serve(t, nntptest.Config{Deflate: true, Trickle: 20 * time.Millisecond, Groups: oneGroup(nntptest.Lines(testGroup, 1, 100))})
	src := open(t, srv, func(c *nntp.Config) { c.Timeout, c.MinRate = 300*time.Millisecond, 1<<20 })
	_, err := src.Fetch(ctxT(t), testGroup, span(1, 100))
	require.ErrorIs(t, err, nntp.ErrDeadline)
	st := src.Stats()
	require.Equal(t, int64(1), st.CutDeadline)
	require.Equal(t, int64(1), st.Deflate)
}

// TestDeflateListedOnlyAfterAuth: RFC 4643 has the client discard the
// capabilities it read before AUTHINFO; a server that lists COMPRESS
// DEFLATE only once logged in gets it asked for, under compress=auto and
// compress=deflate, because the list is read again after the login.
func TestDeflateListedOnlyAfterAuth(t *testing.T) {
	t.Parallel()
	lines := nntptest.Lines(testGroup, 1, 100)
	srv := serve(t, nntptest.Config{Deflate: true, DeflateAfterAuth: true, User: "reader", Pass: "s3cret", Groups: oneGroup(lines)})
	for _, mode := range []nntp.CompressMode{nntp.CompressAuto, nntp.CompressDeflate} {
		src := open(t, srv, func(c *nntp.Config) { c.Compress = mode })
		chunk, err := src.Fetch(ctxT(t), testGroup, span(1, 100))
		require.NoError(t, err, "mode %v", mode)
		require.Equal(t, linesText(lines...), chunkText(t, chunk))
		require.Equal(t, int64(1), src.Stats().Deflate, "mode %v", mode)
	}
	require.Equal(t, 4, srv.Stats().Commands["CAPABILITIES"], "once before and once after each login")
	require.Equal(t, 2, srv.Stats().Commands["COMPRESS"])
}
