package nntp_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/nntp"
	"github.com/edgeindex/edgeindex/nntp/nntptest"
	"github.com/edgeindex/edgeindex/overview"
	"github.com/edgeindex/edgeindex/sources"
)

func TestParseURL(t *testing.T) {
	t.Setenv(nntp.EnvUser, "")
	t.Setenv(nntp.EnvPass, "")
	good := []struct {
		raw  string
		want nntp.Config
	}{
		{"nntp://news.example.com", nntp.Config{Addr: "news.example.com:119"}},
		{"nntps://news.example.com", nntp.Config{Addr: "news.example.com:563", TLS: true}},
		{"nntp://u:p%40ss@news.example.com:1119", nntp.Config{Addr: "news.example.com:1119", User: "u", Pass: "p@ss"}},
		{"NNTP://[::1]:120/", nntp.Config{Addr: "[::1]:120"}},
		{"nntp://h?starttls=1&compress=1&conns=8&timeout=5s", nntp.Config{Addr: "h:119", StartTLS: nntp.StartTLSRequire, Compress: nntp.CompressGzip, MaxConns: 8, Timeout: 5 * time.Second}},
		{"nntp://h?starttls=0", nntp.Config{Addr: "h:119", StartTLS: nntp.StartTLSOff}},
		{"nntp://h?compress=0", nntp.Config{Addr: "h:119", Compress: nntp.CompressNone}},
		{"nntp://h?compress=auto", nntp.Config{Addr: "h:119", Compress: nntp.CompressAuto}},
		{"nntp://h?compress=deflate", nntp.Config{Addr: "h:119", Compress: nntp.CompressDeflate}},
		{"nntp://h?compress=GZIP", nntp.Config{Addr: "h:119", Compress: nntp.CompressGzip}},
		{"nntp://h?compress=none", nntp.Config{Addr: "h:119", Compress: nntp.CompressNone}},
		{"nntp://h?minrate=1024&maxbytes=1000000&maxchunk=500000", nntp.Config{Addr: "h:119", MinRate: 1024, MaxFetchBytes: 1_000_000, MaxChunkBytes: 500_000}},
	}
	for _, c := range good {
		got, err := nntp.ParseURL(c.raw)
		require.NoError(t, err, c.raw)
		require.Equal(t, c.want, got, c.raw)
	}
	bad := []string{
		"", "news.example.com", "http://h", "nntp://", "nntp://h:0", "nntp://h:99999", "nntp://h:x",
		"nntp://h/alt.test", "nntp://h?conns=0", "nntp://h?conns=x", "nntp://h?starttls=maybe", "nntp://h?compress=zstd",
		"nntp://h?timeout=-1s", "nntp://h?bogus=1", "nntp://h#frag", "nntp:opaque", "nntp://:pw@h",
		"nntp://u:sec%0d%0aret@h", "nntp://h?minrate=0", "nntp://h?maxbytes=-1", "nntp://h?maxchunk=x",
		"nntp://h?maxchunk=67108864", "nntp://h?maxbytes=9223372036854775807",
	}
	for _, raw := range bad {
		_, err := nntp.ParseURL(raw)
		require.ErrorIs(t, err, nntp.ErrBadURL, "%q", raw)
		require.NotContains(t, err.Error(), "\n", "%q: one sentence", raw)
		if strings.Contains(raw, "sec") {
			require.NotContains(t, err.Error(), "sec", "the error shows the password")
		}
	}
}

// A password holding "/", "?" or "#" unescaped ends the URL's authority
// early, so url.Parse reads its rest as path, query or fragment and the
// host as a port: the error shows nothing of the URL and says to
// percent-encode the password; a path or fragment is never shown either.
func TestParseURLUnescapedPasswordShowsNothing(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		"nntps://user:1234/s3cr3t@news.example:563",
		"nntps://user:1234?s3cr3t@news.example:563",
		"nntps://user:1234#s3cr3t@news.example:563",
		"nntp://user:99999/s3cr3t@news.example",
		"nntp://user:1234?conns=s3cr3t@news.example",
	} {
		_, err := nntp.ParseURL(raw)
		require.ErrorIs(t, err, nntp.ErrBadURL, raw)
		require.ErrorContains(t, err, "percent-encoded", raw)
		for _, part := range []string{"1234", "99999", "s3cr3t", "news.example", "user"} {
			require.NotContains(t, err.Error(), part, raw)
		}
	}
	for _, raw := range []string{"nntp://h/s3cr3t", "nntp://h#s3cr3t"} {
		_, err := nntp.ParseURL(raw)
		require.ErrorIs(t, err, nntp.ErrBadURL, raw)
		require.NotContains(t, err.Error(), "s3cr3t", raw)
	}
}

func TestParseURLEnvironment(t *testing.T) {
	t.Setenv(nntp.EnvUser, "envuser")
	t.Setenv(nntp.EnvPass, "envpass")
	c, err := nntp.ParseURL("nntp://h")
	require.NoError(t, err)
	require.Equal(t, "envuser", c.User)
	require.Equal(t, "envpass", c.Pass)
	c, err = nntp.ParseURL("nntp://urluser:urlpass@h")
	require.NoError(t, err)
	require.Equal(t, "urluser", c.User)
	require.Equal(t, "urlpass", c.Pass)
	c, err = nntp.ParseURL("nntp://urluser@h")
	require.NoError(t, err)
	require.Equal(t, "urluser", c.User)
	require.Equal(t, "envpass", c.Pass, "a URL with a user and no password takes the password from the environment")
}

func TestConfigHidesPassword(t *testing.T) {
	t.Parallel()
	c := nntp.Config{Addr: "h:119", User: "u", Pass: "hunter2-secret", IdleTimeout: 7 * time.Second}
	for _, s := range []string{c.String(), fmt.Sprint(c), fmt.Sprintf("%v", c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), fmt.Sprintf("%v", &c), fmt.Sprintf("%s", c)} {
		require.NotContains(t, s, "hunter2")
		require.Contains(t, s, "h:119")
		require.Contains(t, s, "IdleTimeout:7s", "the settings are shown (not TLSConfig nor Clock, which are no settings to log)")
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	c := nntp.Config{Addr: "h:119"}
	require.NoError(t, c.Validate())
	require.Equal(t, nntp.Config{Addr: "h:119"}, c, "Validate must not change its receiver")
	for _, bad := range []nntp.Config{{}, {Addr: "h"}, {Addr: "h:1", MaxConns: -1}, {Addr: "h:1", Timeout: -1}, {Addr: "h:1", Pass: "p"}, {Addr: "h:1", StartTLS: 7}} {
		require.ErrorIs(t, bad.Validate(), nntp.ErrBadURL, "%v", bad)
		require.ErrorIs(t, bad.Validate(), edgeindex.ErrInvalid, "%v: the one config sentinel", bad)
		_, err := nntp.New(bad)
		require.ErrorIs(t, err, nntp.ErrBadURL)
	}
	src, err := nntp.New(nntp.Config{Addr: "h:1"})
	require.NoError(t, err)
	require.Equal(t, nntp.DefaultMaxConns, src.MaxConns())
	src.Close()
}

func TestGreeting(t *testing.T) {
	t.Parallel()
	for _, code := range []int{200, 201} {
		srv := serve(t, nntptest.Config{Greeting: code, Groups: oneGroup(nntptest.Lines(testGroup, 1, 3))})
		_, err := open(t, srv, nil).Fetch(ctxT(t), testGroup, span(1, 3))
		require.NoError(t, err, "greeting %d", code)
	}
	for _, code := range []int{400, 502} {
		srv := serve(t, nntptest.Config{Greeting: code})
		err := open(t, srv, nil).Check(ctxT(t))
		require.ErrorIs(t, err, nntp.ErrRefused, "greeting %d", code)
		var pe *nntp.ProtocolError
		require.ErrorAs(t, err, &pe)
		require.Equal(t, code, pe.Code)
	}
	srv := serve(t, nntptest.Config{Greeting: 205})
	err := open(t, srv, nil).Check(ctxT(t))
	var pe *nntp.ProtocolError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, 205, pe.Code)
}

func TestAuth(t *testing.T) {
	t.Parallel()
	lines := nntptest.Lines(testGroup, 1, 3)
	t.Run("accepted", func(t *testing.T) {
		t.Parallel()
		srv := serve(t, nntptest.Config{User: "u", Pass: "p4ss-word", AuthFirst: true, Groups: oneGroup(lines)})
		src := open(t, srv, nil)
		require.NoError(t, src.Check(ctxT(t)))
		chunk, err := src.Fetch(ctxT(t), testGroup, span(1, 3))
		require.NoError(t, err)
		require.Equal(t, linesText(lines...), chunkText(t, chunk))
	})
	t.Run("wrong password", func(t *testing.T) {
		t.Parallel()
		srv := serve(t, nntptest.Config{User: "u", Pass: "right"})
		src := open(t, srv, func(c *nntp.Config) { c.Pass = "wrong-pass-XYZ" })
		err := src.Check(ctxT(t))
		require.ErrorIs(t, err, nntp.ErrAuthFailed)
		require.NotContains(t, err.Error(), "wrong-pass-XYZ")
		_, err = src.Fetch(ctxT(t), testGroup, span(1, 3))
		require.ErrorIs(t, err, nntp.ErrAuthFailed)
		require.NotContains(t, err.Error(), "wrong-pass-XYZ")
	})
	for _, code := range []int{481, 482, 502} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			t.Parallel()
			srv := serve(t, nntptest.Config{User: "u", Pass: "p", AuthReply: code})
			err := open(t, srv, nil).Check(ctxT(t))
			require.ErrorIs(t, err, nntp.ErrAuthFailed)
			var pe *nntp.ProtocolError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, code, pe.Code)
			require.NotContains(t, err.Error(), "\n")
		})
	}
	t.Run("required without credentials", func(t *testing.T) {
		t.Parallel()
		srv := serve(t, nntptest.Config{User: "u", Pass: "p", AuthFirst: true, Groups: oneGroup(lines)})
		src := open(t, srv, func(c *nntp.Config) { c.User, c.Pass = "", "" })
		_, err := src.Fetch(ctxT(t), testGroup, span(1, 3))
		require.ErrorIs(t, err, nntp.ErrAuthRequired)
		_, err = src.Group(ctxT(t), testGroup)
		require.ErrorIs(t, err, nntp.ErrAuthRequired)
	})
	t.Run("asked again mid-session", func(t *testing.T) {
		t.Parallel()
		// The server forgets the login after the first connection's
		// handshake: the client logs in again on 480 and carries on.
		srv := serve(t, nntptest.Config{User: "u", Pass: "p", Groups: oneGroup(lines)})
		src := open(t, srv, func(c *nntp.Config) { c.MaxConns = 1 })
		require.NoError(t, src.Check(ctxT(t)))
		srv.Update(func(c *nntptest.Config) { c.AuthFirst = true })
		_, err := src.Fetch(ctxT(t), testGroup, span(1, 3))
		require.NoError(t, err)
	})
}

func TestEncryption(t *testing.T) {
	t.Parallel()
	lines := nntptest.Lines(testGroup, 1, 3)
	t.Run("483 without TLS", func(t *testing.T) {
		t.Parallel()
		srv := serve(t, nntptest.Config{RequireTLS: true, Groups: oneGroup(lines)})
		src := open(t, srv, nil)
		_, err := src.Fetch(ctxT(t), testGroup, span(1, 3))
		require.ErrorIs(t, err, nntp.ErrEncryptionRequired)
		var pe *nntp.ProtocolError
		require.ErrorAs(t, err, &pe)
		require.Equal(t, 483, pe.Code)
	})
	t.Run("STARTTLS used when offered", func(t *testing.T) {
		t.Parallel()
		srv := serve(t, nntptest.Config{StartTLS: true, RequireTLS: true, Groups: oneGroup(lines)})
		_, err := open(t, srv, nil).Fetch(ctxT(t), testGroup, span(1, 3))
		require.NoError(t, err)
		require.Equal(t, 1, srv.Stats().Commands["STARTTLS"])
	})
	t.Run("STARTTLS off", func(t *testing.T) {
		t.Parallel()
		srv := serve(t, nntptest.Config{StartTLS: true, Groups: oneGroup(lines)})
		_, err := open(t, srv, func(c *nntp.Config) { c.StartTLS = nntp.StartTLSOff }).Fetch(ctxT(t), testGroup, span(1, 3))
		require.NoError(t, err)
		require.Zero(t, srv.Stats().Commands["STARTTLS"])
	})
	t.Run("STARTTLS required, not offered", func(t *testing.T) {
		t.Parallel()
		srv := serve(t, nntptest.Config{Groups: oneGroup(lines)})
		err := open(t, srv, func(c *nntp.Config) { c.StartTLS = nntp.StartTLSRequire }).Check(ctxT(t))
		require.ErrorIs(t, err, nntp.ErrTLSUnavailable)
	})
	t.Run("untrusted certificate", func(t *testing.T) {
		t.Parallel()
		srv := serve(t, nntptest.Config{TLS: true})
		err := open(t, srv, func(c *nntp.Config) { c.TLSConfig = nil }).Check(ctxT(t))
		require.Error(t, err)
	})
}

func TestModeReader(t *testing.T) {
	t.Parallel()
	lines := nntptest.Lines(testGroup, 1, 3)
	for _, c := range []struct {
		name string
		cfg  nntptest.Config
		sent bool
	}{
		{"reader server", nntptest.Config{}, false},
		{"mode-switching server", nntptest.Config{ModeReader: true}, true},
		{"no capabilities", nntptest.Config{NoCapabilities: true}, true},
		{"capabilities need auth", nntptest.Config{CapabilitiesReply: 480}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg := c.cfg
			cfg.Groups = oneGroup(lines)
			srv := serve(t, cfg)
			_, err := open(t, srv, nil).Fetch(ctxT(t), testGroup, span(1, 3))
			require.NoError(t, err)
			require.Equal(t, c.sent, srv.Stats().Commands["MODE READER"] > 0)
		})
	}
}

func TestGroupForms(t *testing.T) {
	t.Parallel()
	empty := []string{
		"0 0 0 " + testGroup,
		"0 5 4 " + testGroup,       // low = high+1
		"0 10 3 " + testGroup,      // high < low
		"0 7 9 " + testGroup,       // count 0, a range
		"3 9 2 " + testGroup,       // high < low with a count
		"0 0 0 " + testGroup + " ", // trailing space
	}
	groups := []nntptest.Group{}
	for i, r := range empty {
		groups = append(groups, nntptest.Group{Name: fmt.Sprintf("g.empty%d", i), Reply: r})
	}
	groups = append(groups,
		nntptest.Group{Name: "g.big", Reply: "3 5000000000 5000000002 g.big"},
		nntptest.Group{Name: "g.garbage", Reply: "many 1 x g.garbage"},
		nntptest.Group{Name: "g.short", Reply: "3 1"},
		nntptest.Group{Name: "g.negative", Reply: "3 -1 5 g.negative"},
		nntptest.Group{Name: "g.overflow", Reply: "3 1 99999999999999999999 g.overflow"},
	)
	srv := serve(t, nntptest.Config{Groups: groups})
	src := open(t, srv, nil)
	for i := range empty {
		g, err := src.Group(ctxT(t), fmt.Sprintf("g.empty%d", i))
		require.NoError(t, err, empty[i])
		require.True(t, g.Empty(), "%q is an empty group", empty[i])
	}
	g, err := src.Group(ctxT(t), "g.big")
	require.NoError(t, err)
	require.Equal(t, nntp.GroupInfo{Name: "g.big", Count: 3, Low: 5_000_000_000, High: 5_000_000_002}, g)
	require.False(t, g.Empty())
	low, high, err := src.Watermarks(ctxT(t), "g.big")
	require.NoError(t, err)
	require.Equal(t, [2]int64{5_000_000_000, 5_000_000_002}, [2]int64{low, high})
	for _, name := range []string{"g.garbage", "g.short", "g.negative", "g.overflow"} {
		before := src.Stats().Dials
		_, err := src.Group(ctxT(t), name)
		require.ErrorIs(t, err, nntp.ErrProtocol, name)
		// The connection that got garbage is dropped; the next call dials.
		_, err = src.Group(ctxT(t), "g.big")
		require.NoError(t, err)
		require.Equal(t, before+1, src.Stats().Dials, name)
	}
}

func TestNoSuchGroup(t *testing.T) {
	t.Parallel()
	srv := serve(t, nntptest.Config{Groups: oneGroup(nntptest.Lines(testGroup, 1, 3))})
	src := open(t, srv, nil)
	_, err := src.Fetch(ctxT(t), "alt.nope", span(1, 3))
	require.ErrorIs(t, err, nntp.ErrNoSuchGroup)
	require.ErrorIs(t, err, sources.ErrNoSuchGroup)
	var pe *nntp.ProtocolError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, 411, pe.Code)
	_, err = src.Fetch(ctxT(t), "bad name", span(1, 3))
	require.ErrorIs(t, err, sources.ErrNoSuchGroup)
	// A 411 keeps the connection.
	_, err = src.Fetch(ctxT(t), testGroup, span(1, 3))
	require.NoError(t, err)
	require.Equal(t, int64(1), src.Stats().Dials)
}

func TestEmptyRange(t *testing.T) {
	t.Parallel()
	for _, code := range []int{423, 420, 224} {
		for _, compress := range []bool{false, true} {
			t.Run(fmt.Sprint(code, compress), func(t *testing.T) {
				t.Parallel()
				srv := serve(t, nntptest.Config{EmptyReply: code, Compress: compress, Groups: oneGroup(nntptest.Lines(testGroup, 1, 3))})
				src := open(t, srv, func(c *nntp.Config) { c.Compress = gzipIf(compress) })
				chunk, err := src.Fetch(ctxT(t), testGroup, span(10, 20))
				require.NoError(t, err)
				require.Empty(t, chunkText(t, chunk))
				require.NoError(t, overview.ReadChunk(chunk, func(overview.Overview) error { return errors.New("a line") }))
				// The connection is still in step.
				chunk, err = src.Fetch(ctxT(t), testGroup, span(1, 3))
				require.NoError(t, err)
				require.Equal(t, linesText(nntptest.Lines(testGroup, 1, 3)...), chunkText(t, chunk))
				require.Equal(t, int64(1), src.Stats().Dials)
			})
		}
	}
}

func TestXOVERFallbackRemembered(t *testing.T) {
	t.Parallel()
	srv := serve(t, nntptest.Config{NoOver: true, Groups: oneGroup(nntptest.Lines(testGroup, 1, 100))})
	src := open(t, srv, func(c *nntp.Config) { c.MaxConns = 2 })
	for i := range 10 {
		chunk, err := src.Fetch(ctxT(t), testGroup, span(int64(i*10+1), int64(i*10+10)))
		require.NoError(t, err)
		require.Equal(t, linesText(nntptest.Lines(testGroup, int64(i*10+1), int64(i*10+10))...), chunkText(t, chunk))
	}
	st := srv.Stats()
	require.Equal(t, 1, st.Commands["OVER"], "OVER is tried once per pool")
	require.Equal(t, 10, st.Commands["XOVER"])
}

func TestBytesKept(t *testing.T) {
	t.Parallel()
	lines := [][]byte{
		[]byte("1\t.leading dot\tf\td\t<1@x>\t\t10\t1"),
		[]byte("2\t..two dots\tf\td\t<2@x>\t\t10\t1"),
		[]byte("3\tLatin-1 \xe9t\xe9 and bad \xff\xfe\x80 bytes\tf\td\t<3@x>\t\t10\t1"),
		[]byte("4\tcarriage\rreturn inside\tf\td\t<4@x>\t\t\t"),
		[]byte("5\tnul \x00 byte\tf\td\t<5@x>\t\t10\t1\tXref: h g:5\textra"),
	}
	for _, compress := range []bool{false, true} {
		srv := serve(t, nntptest.Config{Compress: compress, Groups: oneGroup(lines)})
		src := open(t, srv, func(c *nntp.Config) { c.Compress = gzipIf(compress) })
		chunk, err := src.Fetch(ctxT(t), testGroup, span(1, 5))
		require.NoError(t, err)
		require.Equal(t, linesText(lines...), chunkText(t, chunk), "compress %t", compress)
		require.Zero(t, src.Stats().Dropped)
	}
}

func TestDropPolicy(t *testing.T) {
	t.Parallel()
	ok := func(n int) []byte { return nntptest.Line(testGroup, int64(n)) }
	// The server sends all of these for OVER 10-20 (IgnoreRange), sorted
	// by number, the line without one first.
	g := nntptest.Group{Name: testGroup, Lines: [][]byte{
		[]byte("x10	no number	f	d	<x@x>		1	1"),
		[]byte("9	below the span	f	d	<9@x>		1	1"),
		ok(10),
		[]byte("10	a duplicate	f	d	<10b@x>		1	1"),
		[]byte("11	too few fields	f"),
		[]byte("12	bytes not a count	f	d	<12@x>		many	1"),
		[]byte("14	lines not a count	f	d	<14@x>		1	-1"),
		ok(13),
		ok(15),
		[]byte("21	above the span	f	d	<21@x>		1	1"),
	}}
	srv := serve(t, nntptest.Config{IgnoreRange: true, Groups: []nntptest.Group{g}})
	src := open(t, srv, nil)
	chunk, err := src.Fetch(ctxT(t), testGroup, span(10, 20))
	require.NoError(t, err)
	require.Equal(t, linesText(ok(10), ok(13), ok(15)), chunkText(t, chunk))
	require.Equal(t, nntp.Stats{Dials: 1, Lines: 3, Dropped: 7}, src.Stats())
}

func TestLongLine(t *testing.T) {
	t.Parallel()
	long := append([]byte("5\t"), bytes.Repeat([]byte("x"), overview.MaxLineBytes+100)...)
	long = append(long, "\tf\td\t<5@x>\t\t1\t1"...)
	lines := append(nntptest.Lines(testGroup, 1, 4), long)
	lines = append(lines, nntptest.Lines(testGroup, 6, 9)...)
	for _, compress := range []bool{false, true} {
		srv := serve(t, nntptest.Config{Compress: compress, Groups: oneGroup(lines)})
		src := open(t, srv, func(c *nntp.Config) { c.Compress = gzipIf(compress) })
		chunk, err := src.Fetch(ctxT(t), testGroup, span(1, 9))
		require.NoError(t, err)
		want := append(nntptest.Lines(testGroup, 1, 4), nntptest.Lines(testGroup, 6, 9)...)
		require.Equal(t, linesText(want...), chunkText(t, chunk))
		require.Equal(t, int64(1), src.Stats().Dropped)
		// The connection is still in step.
		_, err = src.Fetch(ctxT(t), testGroup, span(1, 3))
		require.NoError(t, err)
		require.Equal(t, int64(1), src.Stats().Dials)
	}
}

// TestGroupSelectedAgainPastHigh: a server may fix a group's articles when
// GROUP selects it, as INN's nnrpd does (nntptest's sessions too), so a
// span past the high of the connection's last GROUP selects it again.
func TestGroupSelectedAgainPastHigh(t *testing.T) {
	t.Parallel()
	srv := serve(t, nntptest.Config{Groups: oneGroup(nntptest.Lines(testGroup, 1, 10))})
	src := open(t, srv, func(c *nntp.Config) { c.MaxConns = 1 })
	_, err := src.Fetch(ctxT(t), testGroup, span(1, 10))
	require.NoError(t, err)
	srv.Update(func(c *nntptest.Config) { c.Groups = oneGroup(nntptest.Lines(testGroup, 1, 20)) })
	chunk, err := src.Fetch(ctxT(t), testGroup, span(11, 20))
	require.NoError(t, err)
	require.Equal(t, linesText(nntptest.Lines(testGroup, 11, 20)...), chunkText(t, chunk), "new articles are seen on the same connection")
	require.Equal(t, 2, srv.Stats().Commands["GROUP"])
	require.Equal(t, 1, srv.Stats().Accepted)
}

func TestGroupRemembered(t *testing.T) {
	t.Parallel()
	srv := serve(t, nntptest.Config{Groups: []nntptest.Group{
		{Name: "a.one", Lines: nntptest.Lines("a.one", 1, 50)},
		{Name: "a.two", Lines: nntptest.Lines("a.two", 1, 50)},
	}})
	src := open(t, srv, func(c *nntp.Config) { c.MaxConns = 1 })
	for i := range 5 {
		_, err := src.Fetch(ctxT(t), "a.one", span(int64(i*10+1), int64(i*10+10)))
		require.NoError(t, err)
	}
	require.Equal(t, 1, srv.Stats().Commands["GROUP"])
	_, err := src.Fetch(ctxT(t), "a.two", span(1, 10))
	require.NoError(t, err)
	_, err = src.Fetch(ctxT(t), "a.one", span(1, 10))
	require.NoError(t, err)
	require.Equal(t, 3, srv.Stats().Commands["GROUP"])
	// Watermarks always asks: they move.
	_, _, err = src.Watermarks(ctxT(t), "a.one")
	require.NoError(t, err)
	require.Equal(t, 4, srv.Stats().Commands["GROUP"])
}

func TestServerClosesMidOver(t *testing.T) {
	t.Parallel()
	for _, compress := range []bool{false, true} {
		srv := serve(t, nntptest.Config{CloseAfter: 5, Compress: compress, Groups: oneGroup(nntptest.Lines(testGroup, 1, 100))})
		src := open(t, srv, func(c *nntp.Config) { c.MaxConns = 1; c.Compress = gzipIf(compress) })
		_, err := src.Fetch(ctxT(t), testGroup, span(1, 100))
		require.Error(t, err)
		srv.Update(func(c *nntptest.Config) { c.CloseAfter = 0 })
		chunk, err := src.Fetch(ctxT(t), testGroup, span(1, 100))
		require.NoError(t, err, "the next fetch gets a fresh connection")
		require.Equal(t, linesText(nntptest.Lines(testGroup, 1, 100)...), chunkText(t, chunk))
		require.Equal(t, int64(2), src.Stats().Dials)
	}
}

func TestIdleConnectionsDropped(t *testing.T) {
	t.Parallel()
	srv := serve(t, nntptest.Config{Groups: oneGroup(nntptest.Lines(testGroup, 1, 10))})
	src := open(t, srv, func(c *nntp.Config) { c.MaxConns = 2 })
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			_, err := src.Fetch(ctxT(t), testGroup, span(1, 10))
			require.NoError(t, err)
		})
	}
	wg.Wait()
	srv.DropConns()
	// Both idle connections are dead; the fetch is retried on a new one
	// rather than failing.
	for range 3 {
		_, err := src.Fetch(ctxT(t), testGroup, span(1, 10))
		require.NoError(t, err)
	}
}

func TestPoolMaximum(t *testing.T) {
	t.Parallel()
	srv := serve(t, nntptest.Config{LineDelay: 200 * time.Microsecond, Groups: oneGroup(nntptest.Lines(testGroup, 1, 640))})
	src := open(t, srv, func(c *nntp.Config) { c.MaxConns = 3 })
	var wg sync.WaitGroup
	errs := make([]error, 32)
	for i := range 32 {
		wg.Go(func() {
			var chunk []byte
			chunk, errs[i] = src.Fetch(ctxT(t), testGroup, span(int64(i*20+1), int64(i*20+20)))
			if errs[i] == nil && chunkText(t, chunk) != linesText(nntptest.Lines(testGroup, int64(i*20+1), int64(i*20+20))...) {
				errs[i] = errors.New("wrong lines")
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "fetch %d", i)
	}
	st := srv.Stats()
	require.LessOrEqual(t, st.MaxOpen, 3, "the server saw more connections than MaxConns")
	require.LessOrEqual(t, st.Accepted, 3, "connections were not reused")
	require.Equal(t, 2, st.MaxOpen, "32 concurrent fetches use all 3 connections but the one kept for GROUP")
}

func TestWaitForConnectionCancelled(t *testing.T) {
	t.Parallel()
	srv := serve(t, nntptest.Config{LineDelay: time.Hour, Groups: oneGroup(nntptest.Lines(testGroup, 1, 10))})
	src := open(t, srv, func(c *nntp.Config) { c.MaxConns = 1 })
	busy, stopBusy := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := src.Fetch(busy, testGroup, span(1, 10))
		done <- err
	}()
	require.Eventually(t, func() bool { return srv.Stats().Commands["OVER"] == 1 }, 10*time.Second, time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	waiting := make(chan error, 1)
	go func() {
		_, err := src.Fetch(ctx, testGroup, span(1, 10))
		waiting <- err
	}()
	cancel()
	require.ErrorIs(t, <-waiting, context.Canceled)
	stopBusy()
	require.ErrorIs(t, <-done, context.Canceled, "cancelling a fetch mid-response aborts it")
	require.Equal(t, 1, srv.Stats().Accepted, "the waiting fetch never dialled past MaxConns")
}

func TestReadTimeout(t *testing.T) {
	t.Parallel()
	srv := serve(t, nntptest.Config{LineDelay: time.Hour, Groups: oneGroup(nntptest.Lines(testGroup, 1, 10))})
	src := open(t, srv, func(c *nntp.Config) { c.Timeout = 50 * time.Millisecond })
	_, err := src.Fetch(ctxT(t), testGroup, span(1, 10))
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	srv.Update(func(c *nntptest.Config) { c.LineDelay = 0 })
	_, err = src.Fetch(ctxT(t), testGroup, span(1, 10))
	require.NoError(t, err, "the timed-out connection was dropped")
	require.Equal(t, int64(2), src.Stats().Dials)
}

func TestEndlessResponse(t *testing.T) {
	t.Parallel()
	for _, compress := range []bool{false, true} {
		srv := serve(t, nntptest.Config{Endless: true, Compress: compress, Groups: oneGroup(nntptest.Lines(testGroup, 1, 10))})
		src := open(t, srv, func(c *nntp.Config) { c.Compress = gzipIf(compress) })
		_, err := src.Fetch(ctxT(t), testGroup, span(1, 10))
		require.ErrorIs(t, err, nntp.ErrProtocol)
	}
}

func TestUnreachable(t *testing.T) {
	t.Parallel()
	srv := serve(t, nntptest.Config{})
	src := open(t, srv, nil)
	srv.Close()
	err := src.Check(ctxT(t))
	require.Error(t, err)
	require.Contains(t, err.Error(), srv.Addr())
	_, err = src.Fetch(ctxT(t), testGroup, span(1, 2))
	require.Error(t, err)
}

func TestClosed(t *testing.T) {
	t.Parallel()
	srv := serve(t, nntptest.Config{Groups: oneGroup(nntptest.Lines(testGroup, 1, 3))})
	src := open(t, srv, nil)
	_, err := src.Fetch(ctxT(t), testGroup, span(1, 3))
	require.NoError(t, err)
	require.NoError(t, src.Close())
	_, err = src.Fetch(ctxT(t), testGroup, span(1, 3))
	require.ErrorIs(t, err, nntp.ErrClosed)
	require.Eventually(t, func() bool { return srv.Stats().Open == 0 }, 10*time.Second, time.Millisecond)
	require.Equal(t, 1, srv.Stats().Commands["QUIT"])
}

func TestInvalidSpan(t *testing.T) {
	t.Parallel()
	src, err := nntp.New(nntp.Config{Addr: "127.0.0.1:1"})
	require.NoError(t, err)
	defer src.Close()
	_, err = src.Fetch(ctxT(t), testGroup, span(5, 4))
	require.Error(t, err)
	_, err = src.Fetch(ctxT(t), testGroup, span(-1, 4))
	require.Error(t, err)
}

func TestDialBackoff(t *testing.T) {
	t.Parallel()
	srv := serve(t, nntptest.Config{Greeting: 400})
	src := open(t, srv, func(c *nntp.Config) { c.DialBackoff, c.MaxDialBackoff = time.Hour, time.Hour })
	require.ErrorIs(t, src.Check(ctxT(t)), nntp.ErrRefused)
	require.Equal(t, int64(1), src.Stats().Dials)
	// After a failure the next dial waits (here at least half an hour):
	// a caller with a shorter deadline gets its context's error and the
	// server sees no new connection.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := src.Check(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, int64(1), src.Stats().Dials)
	require.Equal(t, 1, srv.Stats().Accepted)
}

func TestDialBackoffResets(t *testing.T) {
	t.Parallel()
	srv := serve(t, nntptest.Config{Greeting: 400, Groups: oneGroup(nntptest.Lines(testGroup, 1, 3))})
	src := open(t, srv, func(c *nntp.Config) { c.DialBackoff, c.MaxDialBackoff = time.Millisecond, 4*time.Millisecond })
	for range 5 {
		require.ErrorIs(t, src.Check(ctxT(t)), nntp.ErrRefused)
	}
	srv.Update(func(c *nntptest.Config) { c.Greeting = 200 })
	require.NoError(t, src.Check(ctxT(t)), "dialling resumes once the server is back")
	_, err := src.Fetch(ctxT(t), testGroup, span(1, 3))
	require.NoError(t, err)
	require.Equal(t, int64(6), src.Stats().Dials)
}
