package usenet_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/edgeindex/edgeindex/usenet"
	"github.com/stretchr/testify/require"
)

func TestParseSubject(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want usenet.Subject
	}{
		{`[01/40] - "name.part01.rar" yEnc (1/50)`,
			usenet.Subject{Base: `[01/40] - "name.part01.rar" yEnc`, Name: "name.part01.rar", Part: 1, Total: 50, File: 1, Files: 40}},
		{`"name.rar" yEnc (3/7)`,
			usenet.Subject{Base: `"name.rar" yEnc`, Name: "name.rar", Part: 3, Total: 7}},
		{`name.nfo (1/1)`,
			usenet.Subject{Base: `name.nfo`, Name: "name.nfo", Part: 1, Total: 1}},
		{`Re: "name.rar" yEnc (3/7)`,
			usenet.Subject{Base: `"name.rar" yEnc`, Name: "name.rar", Part: 3, Total: 7}},
		{`RE:re:  Re:"name.rar" yEnc (3/7)`,
			usenet.Subject{Base: `"name.rar" yEnc`, Name: "name.rar", Part: 3, Total: 7}},
		{`[01/40] - "name.part01.rar" yEnc (01/50)`,
			usenet.Subject{Base: `[01/40] - "name.part01.rar" yEnc`, Name: "name.part01.rar", Part: 1, Total: 50, File: 1, Files: 40}},
		{"  Some.Show.S01E01 -\t[3/9] -  \"show.vol03+04.par2\"  yEnc  (12/50) 1234567 ",
			usenet.Subject{Base: `Some.Show.S01E01 - [3/9] - "show.vol03+04.par2" yEnc 1234567`, Name: "show.vol03+04.par2", Part: 12, Total: 50, File: 3, Files: 9}},
		{`Release - [1/5] - file.r00 yEnc (2/3)`,
			usenet.Subject{Base: `Release - [1/5] - file.r00 yEnc`, Name: "file.r00", Part: 2, Total: 3, File: 1, Files: 5}},
		{`[1/5] - &quot;x y.rar&quot; yEnc (2/3)`,
			usenet.Subject{Base: `[1/5] - &quot;x y.rar&quot; yEnc`, Name: "x y.rar", Part: 2, Total: 3, File: 1, Files: 5}},
		{`My holiday photos - yEnc (1/2)`,
			usenet.Subject{Base: `My holiday photos - yEnc`, Name: "My holiday photos", Part: 1, Total: 2}},
		// The last valid counter is the part counter; an earlier one stays in Base.
		{`(1/2) "a.rar" yEnc (2/9) (9/8)`,
			usenet.Subject{Base: `(1/2) "a.rar" yEnc (9/8)`, Name: "a.rar", Part: 2, Total: 9}},
		{`"é.bin" yEnc (1/1)`, usenet.Subject{Base: `"é.bin" yEnc`, Name: "é.bin", Part: 1, Total: 1}},
		{`(0999999/999999)x`, usenet.Subject{Base: `x`, Name: "x", Part: 999999, Total: 999999}},
	}
	for _, c := range cases {
		got, ok := usenet.ParseSubject(c.in)
		require.True(t, ok, c.in)
		require.Equal(t, c.want, got, c.in)
	}
}

func TestParseSubjectNotBinary(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"",
		"Re: what is the password?",
		`"name.rar" yEnc`,
		`"name.rar" yEnc (0/5)`,        // part 0
		`"name.rar" yEnc (6/5)`,        // part past total
		`"name.rar" yEnc (1/0)`,        // no parts
		`"name.rar" yEnc (1/1000000)`,  // total past MaxTotal
		`"name.rar" yEnc (1/00000001)`, // more than 7 digits
		`"name.rar" yEnc (1/-5)`,
		`"name.rar" yEnc (a/5)`,
		`"name.rar" yEnc (1 /5)`,
		`"name.rar" yEnc [1/5]`, // a file counter only
		`(1/1)`,                 // nothing but a counter
		`Re: (1/1)`,
		" \t (3/4) \r\n",
		"((((/)))",
		"/)", ")", "(", "(1/", "1/1)",
	} {
		_, ok := usenet.ParseSubject(in)
		require.False(t, ok, in)
	}
}

// Base is a fixed point: a Base with a new counter appended parses back to
// itself, and Name and the file counter come from Base alone.
func checkSubject(t *testing.T, in string) {
	t.Helper()
	s, ok := usenet.ParseSubject(in)
	again, ok2 := usenet.ParseSubject(in)
	require.Equal(t, ok, ok2)
	require.Equal(t, s, again, "deterministic")
	if !ok {
		require.Equal(t, usenet.Subject{}, s)
		return
	}
	require.NotEmpty(t, s.Base)
	require.Equal(t, strings.Trim(s.Base, " \t\n\r\v\f"), s.Base)
	require.NotContains(t, s.Base, "  ")
	require.NotContains(t, s.Base, "\t")
	require.NotContains(t, s.Base, "\n")
	require.False(t, strings.HasPrefix(strings.ToLower(s.Base), "re:"), s.Base)
	require.True(t, 1 <= s.Part && s.Part <= s.Total && s.Total <= usenet.MaxTotal, "%+v", s)
	require.True(t, s.File == 0 && s.Files == 0 || 1 <= s.File && s.File <= s.Files, "%+v", s)
	require.NotEmpty(t, s.Name)
	require.True(t, len(s.Name) <= len(s.Base), "%+v", s)

	re, ok := usenet.ParseSubject(s.Base + " (" + strconv.Itoa(s.Total) + "/" + strconv.Itoa(s.Total) + ")")
	require.True(t, ok, s.Base)
	require.Equal(t, usenet.Subject{Base: s.Base, Name: s.Name, Part: s.Total, Total: s.Total, File: s.File, Files: s.Files}, re)
}

func TestParseSubjectProperties(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		`[01/40] - "name.part01.rar" yEnc (1/50)`,
		`Re: Re: name.nfo (1/1)`,
		"a\t\tb (1/2)   c",
		`"" yEnc (1/2)`,
		`[0/0] x (1/2)`,
		"Re:Re:(1/2)x",
		"re:\x00 (1/2)",
		"\xff\xfe (1/2)",
	} {
		checkSubject(t, in)
	}
}

func FuzzParseSubject(f *testing.F) {
	f.Add(`[01/40] - "name.part01.rar" yEnc (1/50)`)
	f.Add(`Re: name.nfo (1/1)`)
	f.Fuzz(func(t *testing.T, in string) {
		checkSubject(t, in)
	})
}
