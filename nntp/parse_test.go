package nntp

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/overview"
)

func TestParseStatus(t *testing.T) {
	t.Parallel()
	for line, want := range map[string]struct {
		code int
		text string
	}{
		"200 ready":        {200, "ready"},
		"211 3 1 3 g":      {211, "3 1 3 g"},
		"205":              {205, ""},
		"224 ":             {224, ""},
		"500 a  b":         {500, "a  b"},
		"101 capabilities": {101, "capabilities"},
	} {
		code, text, err := parseStatus(line)
		require.NoError(t, err, line)
		require.Equal(t, want.code, code, line)
		require.Equal(t, want.text, text, line)
	}
	for _, bad := range []string{"", "20", "2000 x", "abc ok", "099 low", "600 high", "-20 x", "20x y", " 200 x", strings.Repeat("2", 5000)} {
		_, _, err := parseStatus(bad)
		require.ErrorIs(t, err, ErrProtocol, "%q", bad)
	}
}

func TestParseCapabilities(t *testing.T) {
	t.Parallel()
	c, err := parseCapabilities([]string{"VERSION 2", "reader", "", "AUTHINFO USER SASL", "MODE-READER", "XFEATURE-COMPRESS GZIP TERMINATOR"})
	require.NoError(t, err)
	require.True(t, c.Has("READER"))
	require.True(t, c.Has("mode-reader"))
	require.True(t, c.HasArg("authinfo", "user"))
	require.False(t, c.HasArg("AUTHINFO", "PASS"))
	require.False(t, c.Has("STARTTLS"))
	for _, bad := range []string{"2VERSION", "-X", "A\x00B", strings.Repeat("A", 5000)} {
		_, err := parseCapabilities([]string{bad})
		require.ErrorIs(t, err, ErrProtocol, "%q", bad)
	}
}

func TestOverviewNumber(t *testing.T) {
	t.Parallel()
	for line, want := range map[string]int64{
		"1\ts\tf\td\tm\tr\t10\t1":                 1,
		"5000000000\ts\tf\td\tm\tr\t\t":           5_000_000_000,
		"7\ts\tf\td\tm\tr\t1\t2\tXref: a:7\tmore": 7,
		"9223372036854775807\t\t\t\t\t\t\t":       1<<63 - 1,
		"3\t\xff\xfe\tf\td\tm\tr\t10\t1":          3,
	} {
		n, ok := overviewNumber([]byte(line))
		require.True(t, ok, "%q", line)
		require.Equal(t, want, n)
	}
	for _, bad := range []string{"", "\t", "x\ts\tf\td\tm\tr\t1\t1", "1", "1\ts\tf\td\tm\tr\t1", "1\ts\tf\td\tm\tr\tx\t1",
		"1\ts\tf\td\tm\tr\t1\t1x", "9223372036854775808\ts\tf\td\tm\tr\t1\t1", "+1\ts\tf\td\tm\tr\t1\t1", "-1\ts\tf\td\tm\tr\t1\t1"} {
		_, ok := overviewNumber([]byte(bad))
		require.False(t, ok, "%q", bad)
	}
}

func FuzzParseStatus(f *testing.F) {
	for _, s := range []string{"200 ready", "211 3 1 3 g", "205", "abc", "", "600 x", "224 overview [COMPRESS=GZIP]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		code, text, err := parseStatus(line)
		if err != nil {
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("error %v is not ErrProtocol", err)
			}
			return
		}
		if code < 100 || code > 599 {
			t.Fatalf("code %d out of range", code)
		}
		if !strings.HasSuffix(line, text) || len(line) < 3 {
			t.Fatalf("text %q is not the tail of %q", text, line)
		}
	})
}

func FuzzParseGroup(f *testing.F) {
	for _, s := range []string{"3 1 3 alt.test", "0 0 0 g", "0 5 4 g", "5000000000 1 5000000000 g extra", "x 1 2 g", "1 2", "-1 1 1 g", "1 +1 1 g"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		g, err := parseGroup(text)
		if err != nil {
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("error %v is not ErrProtocol", err)
			}
			return
		}
		if g.Count < 0 || g.Low < 0 || g.High < 0 || g.Name == "" || strings.ContainsAny(g.Name, " \t\r\n") {
			t.Fatalf("accepted %q as %+v", text, g)
		}
		_ = g.Empty()
	})
}

func FuzzParseCapabilities(f *testing.F) {
	f.Add("VERSION 2\nREADER\nAUTHINFO USER\nSTARTTLS")
	f.Add("MODE-READER\n\nIHAVE")
	f.Add("2X\n")
	f.Fuzz(func(t *testing.T, text string) {
		c, err := parseCapabilities(strings.Split(text, "\n"))
		if err != nil {
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("error %v is not ErrProtocol", err)
			}
			return
		}
		for label := range c {
			if label != strings.ToUpper(label) || !validLabel(label) {
				t.Fatalf("label %q", label)
			}
			if !c.Has(strings.ToLower(label)) {
				t.Fatalf("Has(%q) is false", label)
			}
		}
	})
}

func FuzzOverviewNumber(f *testing.F) {
	f.Add([]byte("1\ts\tf\td\tm\tr\t10\t1"))
	f.Add([]byte("5000000000\ts\tf\td\tm\tr\t\t\tXref: x"))
	f.Add([]byte("12\ts"))
	f.Fuzz(func(t *testing.T, line []byte) {
		if strings.ContainsAny(string(line), "\n") {
			return // lines never hold one: the reader splits on it
		}
		n, ok := overviewNumber(line)
		if !ok {
			return
		}
		// Every line Fetch keeps must be one overview.Parse reads.
		o, err := parseOverviewForTest(line)
		if err != nil {
			t.Fatalf("kept %q, which overview.Parse refuses: %v", line, err)
		}
		if o != n {
			t.Fatalf("number %d, overview.Parse says %d", n, o)
		}
	})
}

func TestReadBlock(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("y", overview.MaxLineBytes+10)
	in := "..leading dot\r\n...two\r\n.\x00x\r\nbare lf\n\xff\xfe invalid utf-8\r\n" + long + "\r\nafter\r\n\r\n.\r\nNEXT"
	skipped := 0
	c := &conn{lim: blockLimits{skip: func() error { skipped++; return nil }}}
	var got []string
	r := bufio.NewReaderSize(strings.NewReader(in), 4096)
	require.NoError(t, c.readBlock(r, func(l []byte) error { got = append(got, string(l)); return nil }))
	require.Equal(t, []string{".leading dot", "..two", "\x00x", "bare lf", "\xff\xfe invalid utf-8", "after", ""}, got)
	require.Equal(t, 1, skipped, "the over-long line is skipped")
	rest, _ := io.ReadAll(r)
	require.Equal(t, "NEXT", string(rest), "reading stops at the terminator")

	for _, cut := range []string{"a\r\nb", "a\r\n", "", long} {
		c := &conn{}
		c.r = bufio.NewReaderSize(strings.NewReader(cut), 4096)
		require.ErrorIs(t, c.readPlain(func([]byte) error { return nil }), io.ErrUnexpectedEOF, "%.20q", cut)
	}
}
