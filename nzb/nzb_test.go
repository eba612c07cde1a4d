package nzb_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"mime"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/nzb"
	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/usenet"
)

func render(t testing.TB, r release.Release) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, nzb.Write(&b, r))
	return b.Bytes()
}

// parse reads an NZB back: every token (well-formed XML), then the
// document.
func parse(t testing.TB, data []byte) doc {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(data))
	for {
		_, err := d.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err, "well-formed XML:\n%s", data)
	}
	var out doc
	require.NoError(t, xml.Unmarshal(data, &out))
	return out
}

func TestWrite(t *testing.T) {
	t.Parallel()
	r := sample(2, 2)
	r.Files[1].Groups = nil // falls back on the release's groups
	got := string(render(t, r))
	want := nzb.Prolog + `<nzb xmlns="http://www.newzbin.com/DTD/2003/nzb">
 <head>
  <meta type="name">My.Show.S01E02</meta>
 </head>
 <file poster="Poster &lt;p@example.test&gt;" date="1748772000" subject="[01/02] - &quot;My.Show.S01E02.part01.rar&quot; yEnc (1/2)">
  <groups>
   <group>alt.binaries.test</group>
   <group>alt.binaries.tv</group>
  </groups>
  <segments>
   <segment bytes="739124" number="1">part1of2.file0@poster.example</segment>
   <segment bytes="739124" number="2">part2of2.file0@poster.example</segment>
  </segments>
 </file>
 <file poster="Poster &lt;p@example.test&gt;" date="1748772060" subject="[02/02] - &quot;My.Show.S01E02.part02.rar&quot; yEnc (1/2)">
  <groups>
   <group>alt.binaries.test</group>
  </groups>
  <segments>
   <segment bytes="739124" number="1">part1of2.file1@poster.example</segment>
   <segment bytes="739124" number="2">part2of2.file1@poster.example</segment>
  </segments>
 </file>
</nzb>
`
	require.Equal(t, want, got)
	d := parse(t, []byte(got))
	require.Equal(t, docOf(sample(2, 2)).Files[0], d.Files[0])
}

// hostile is a release whose every string is what a hostile or broken
// poster could put in a header.
func hostile() release.Release {
	nasty := "a<b>&c\"d'e ]]> \x00\x01\x1f\x7f tab\there\r\nline \xff\xfe bad utf8 \uFFFE\uFFFF é 漢字 \U0001F600"
	day := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	return release.Release{ID: 1, Name: "../../etc/passwd " + nasty, Poster: nasty, Groups: []string{"alt.binaries.<x>"}, Posted: day,
		Files: []release.File{
			{Key: "k", Subject: `"` + nasty + `.rar" yEnc`, Poster: nasty, Date: day, Groups: []string{"alt.bin&aries", nasty}, Total: 3,
				Parts: []usenet.Part{{N: 1, MessageID: "<a&b<c>@x]]>>", Bytes: 10}, {N: 2, MessageID: " <\x01\xff@y> ", Bytes: -5},
					{N: 3, MessageID: "<>"}}},
			{Key: "none", Subject: "no segments", Poster: "p", Date: day, Total: 1, Parts: []usenet.Part{{N: 1, MessageID: "<>"}}},
		}}
}

func TestWriteHostile(t *testing.T) {
	t.Parallel()
	r := hostile()
	d := parse(t, render(t, r))
	require.Equal(t, nzb.Text(r.Name), d.Meta[0].Value)
	require.Len(t, d.Files, 1, "a file without a segment is left out")
	f := d.Files[0]
	require.Equal(t, nzb.Text(r.Poster), f.Poster)
	require.Equal(t, nzb.Text(r.Files[0].Subject)+" (1/3)", f.Subject)
	require.Equal(t, []string{"alt.bin&aries", nzb.Text(r.Files[0].Groups[1])}, f.Groups)
	require.Equal(t, []segment{{Bytes: 10, Number: 1, ID: "a&b<c>@x]]>"}, {Bytes: 0, Number: 2, ID: "\uFFFD\uFFFD@y"}}, f.Segments,
		"the empty message-id is left out; a negative size is 0")
	require.Contains(t, nzb.Text(r.Poster), "é 漢字 \U0001F600", "valid UTF-8 stays as it is")
	require.Contains(t, nzb.Text(r.Poster), "tab\there\r\nline", "tab, CR and LF are kept, escaped")
}

func TestWriteEmpty(t *testing.T) {
	t.Parallel()
	for name, r := range map[string]release.Release{
		"no files":    {Name: "x"},
		"no segments": {Name: "x", Groups: []string{"g"}, Files: []release.File{{Parts: []usenet.Part{{N: 1, MessageID: "<>"}}}}},
		"no groups":   {Name: "x", Files: []release.File{{Parts: []usenet.Part{{N: 1, MessageID: "<a@b>"}}}}},
	} {
		require.ErrorIs(t, nzb.Check(r), nzb.ErrEmpty, name)
		var b bytes.Buffer
		err := nzb.Write(&b, r)
		require.ErrorIs(t, err, nzb.ErrEmpty, name)
		require.ErrorIs(t, err, edgeindex.ErrNotFound, name)
		require.Zero(t, b.Len(), "%s: nothing written", name)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestCheck(t *testing.T) {
	t.Parallel()
	require.NoError(t, nzb.Check(sample(1, 1)))
}

func TestWriteError(t *testing.T) {
	t.Parallel()
	require.ErrorContains(t, nzb.Write(failWriter{}, sample(3, 5000)), "disk full")
}

// TestWriteValidDTD checks NZBs against the NZB 1.1 DTD with xmllint.
// Without xmllint it skips, unless EDGEINDEX_REQUIRE_NZBGET=1.
func TestWriteValidDTD(t *testing.T) {
	t.Parallel()
	xmllint := requireXMLLint(t)
	dtd, err := filepath.Abs("testdata/nzb-1.1.dtd")
	require.NoError(t, err)
	dir := t.TempDir()
	noName := sample(1, 3)
	noName.Name = ""
	for name, r := range map[string]release.Release{"sample": sample(3, 40), "hostile": hostile(), "no name": noName} {
		path := filepath.Join(dir, nzb.SafeFileName(name))
		require.NoError(t, os.WriteFile(path, render(t, r), 0o644))
		out, err := exec.Command(xmllint, "--noout", "--nonet", "--dtdvalid", dtd, path).CombinedOutput()
		require.NoError(t, err, "%s: xmllint: %s", name, out)
	}
	// The DTD does catch a broken NZB.
	bad := filepath.Join(dir, "bad.nzb")
	require.NoError(t, os.WriteFile(bad, []byte(nzb.Prolog+`<nzb xmlns="http://www.newzbin.com/DTD/2003/nzb"><file poster="p" subject="s"><groups/></file></nzb>`), 0o644))
	out, err := exec.Command(xmllint, "--noout", "--nonet", "--dtdvalid", dtd, bad).CombinedOutput()
	require.Error(t, err, "xmllint accepts a broken NZB: %s", out)
}

// requireXMLLint returns xmllint's path, or skips (fails under
// EDGEINDEX_REQUIRE_NZBGET=1).
func requireXMLLint(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("xmllint")
	if err != nil {
		if os.Getenv("EDGEINDEX_REQUIRE_NZBGET") == "1" {
			t.Fatalf("xmllint is required (EDGEINDEX_REQUIRE_NZBGET=1): apt-get install libxml2-utils: %v", err)
		}
		t.Skipf("no xmllint (apt-get install libxml2-utils): %v", err)
	}
	return path
}

func TestSafeFileName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"My.Show.S01E02":                    "My.Show.S01E02.nzb",
		"Some Movie (2024) [1080p]":         "Some Movie (2024) [1080p].nzb",
		"../../etc/passwd":                  "etc_passwd.nzb",
		`a"b\c;d%e'f`:                       "a_b_c_d_e_f.nzb",
		"evil\r\nContent-Type: text/html":   "evil_Content-Type_text_html.nzb",
		"\x00\x01\xff":                      "release.nzb",
		"":                                  "release.nzb",
		"...":                               "release.nzb",
		".hidden":                           "hidden.nzb",
		"name.NZB":                          "name.nzb",
		"CON":                               "_CON.nzb",
		"lpt1.txt":                          "_lpt1.txt.nzb",
		"COM10":                             "COM10.nzb",
		"é漢字":                               "release.nzb",
		"rtl\u202Eexe.nzb":                  "rtl_exe.nzb",
		"a  b__c..d":                        "a b_c.d.nzb",
		strings.Repeat("x", 500):            strings.Repeat("x", nzb.MaxFileName-4) + ".nzb",
		strings.Repeat("/", 10000) + "tail": "tail.nzb",
	} {
		got := nzb.SafeFileName(in)
		require.Equal(t, want, got, "%q", in)
		require.LessOrEqual(t, len(got), nzb.MaxFileName)
	}
}

func TestContentDisposition(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"My.Show.S01E02", "Some Movie (2024)", `x"; filename="evil.exe`, "\r\nSet-Cookie: a=b", "é"} {
		h := nzb.ContentDisposition(name)
		require.NotContains(t, h, "\r")
		require.NotContains(t, h, "\n")
		typ, params, err := mime.ParseMediaType(h)
		require.NoError(t, err, h)
		require.Equal(t, "attachment", typ)
		require.Equal(t, nzb.SafeFileName(name), params["filename"], h)
	}
	require.Equal(t, "attachment; filename=My.Show.S01E02.nzb", nzb.ContentDisposition("My.Show.S01E02"))
}

func TestText(t *testing.T) {
	t.Parallel()
	require.Equal(t, "a\uFFFDb\uFFFD\t\n\r\uFFFD\uFFFDé", nzb.Text("a\x00b\x1f\t\n\r\xff\uFFFEé"))
}
