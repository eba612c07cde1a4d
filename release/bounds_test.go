package release_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/release"
)

// TestParseSetNameBound: a subject may be as long as an overview line, up
// to 1 MiB; its name and key stay short (PostgreSQL's full text refuses a
// text over 1 MB), cut at a UTF-8 boundary and without a separator left
// dangling at the end.
func TestParseSetNameBound(t *testing.T) {
	t.Parallel()
	mib := 1 << 20
	for _, s := range []string{
		`"` + strings.Repeat("Long.Name.", mib/10) + `part01.rar" yEnc`,
		`"` + strings.Repeat("Név.é.", mib/8) + `rar"`,
		strings.Repeat("word ", mib/5),
		strings.Repeat("a-", mib/2),
		strings.Repeat("é", mib/2),
		strings.Repeat("x7k2q9 ", mib/7) + `"x7k2q9.rar"`,
		`"x7k2q9.rar" ` + strings.Repeat("My.Show.S01E01.720p ", mib/20),
		"[1/2] " + strings.Repeat(" ", mib) + "yEnc",
		strings.Repeat("\xff", mib),
	} {
		set := release.ParseSet(s)
		require.LessOrEqual(t, len(set.Name), release.MaxNameBytes, "%.40q", s)
		require.LessOrEqual(t, len(set.Key), release.MaxKeyBytes, "%.40q", s)
		require.NotEmpty(t, set.Name, "%.40q", s)
		require.True(t, validText(set.Name) && validText(set.Key), "%.40q", s)
		last, _ := utf8.DecodeLastRuneInString(set.Name)
		require.False(t, strings.ContainsRune(" -_.", last), "%.40q: %q", s, set.Name)
	}
	// A name at the bound stays whole.
	name := strings.Repeat("a", release.MaxNameBytes-5) + ".S01E"
	require.Equal(t, name, release.ParseSet(`"`+name+`.part1.rar" yEnc`).Name)
}

// TestParseSetReadsPrefix: ParseSet reads the first MaxSubjectBytes of a
// subject and nothing more, so its work is bounded whatever the subject's
// length; the files of one posting still share a key.
func TestParseSetReadsPrefix(t *testing.T) {
	t.Parallel()
	tail := strings.Repeat("padding words here ", 1<<20/19)
	s := `[01/17] - "Rel.2024.part01.rar" ` + tail
	require.True(t, release.ParseSet(s[:release.MaxSubjectBytes]) == release.ParseSet(s))

	var keys []string
	for i, f := range []string{"Rel.2024.part01.rar", "Rel.2024.vol00+01.par2", "Rel.2024.7z.001", "Rel.2024.nfo"} {
		set := release.ParseSet(fmt.Sprintf(`[%02d/17] - "%s" `, i+1, f) + tail)
		require.Equal(t, "Rel.2024", set.Name)
		keys = append(keys, set.Key)
	}
	for _, k := range keys {
		require.Equal(t, keys[0], k)
	}
}

// hostile returns subjects of n bytes made to make a parser rescan: deep
// nests of empty brackets, many quotes, many counters and sizes, many
// distinct words, long runs of spaces after openers.
func hostile(n int) []string {
	var words strings.Builder
	for i := 0; words.Len() < n; i++ {
		fmt.Fprintf(&words, "w%d.x%d ", i, i)
	}
	return []string{
		strings.Repeat("[", n/2-1) + " " + strings.Repeat("]", n/2),
		strings.Repeat(`"a" `, n/4),
		strings.Repeat(`" `, n/2),
		strings.Repeat("[1/2] ", n/6),
		strings.Repeat("1 of 2 ", n/7),
		strings.Repeat("(1 MB) ", n/7),
		"[" + strings.Repeat(" ", n) + "1",
		strings.Repeat("&quot;", n/6),
		words.String(),
		`"x7k2q9.rar" ` + strings.Repeat("[a] ", n/4),
	}
}

// TestParseSetHostile: a 1 MiB hostile subject parses in bounded work,
// both because ParseSet reads only its first MaxSubjectBytes and because
// it takes linear time in what it reads.
// The work is counted as bytes allocated, which, unlike time, does not
// depend on the machine's load: ParseSet copies what it reads a few
// times, so a bound of a few dozen times MaxSubjectBytes holds, where
// reading the whole subject, or rescanning it, allocates megabytes. The
// test does not run in parallel, so that no other test allocates
// meanwhile.
func TestParseSetHostile(t *testing.T) {
	for _, s := range hostile(release.MaxSubjectBytes) {
		s = strings.Repeat(s, 1<<20/len(s)) // 1 MiB, hostile in the part ParseSet reads too
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		set := release.ParseSet(s)
		runtime.ReadMemStats(&after)
		allocated := after.TotalAlloc - before.TotalAlloc
		require.LessOrEqual(t, allocated, uint64(32*release.MaxSubjectBytes), "%.20q", s)
		require.LessOrEqual(t, len(set.Name), release.MaxNameBytes)
	}
}

// TestParseSetLongSubjectOneKey: when a subject is longer than
// MaxSubjectBytes and its normalization shrinks (long runs of spaces),
// the read text ends at a different place in each file of the posting
// (their counters differ in width); the key must not end there, or one
// posting splits in two releases.
func TestParseSetLongSubjectOneKey(t *testing.T) {
	t.Parallel()
	for _, tail := range []string{
		strings.Repeat(" abcd           ", 800),
		strings.Repeat(" abcd"+strings.Repeat(" ", 60), 800), // shrinks 13 times
		strings.Repeat("a b ", 4000),
	} {
		first := release.ParseSet(fmt.Sprintf(`[1/15] - "Some.Release.2024.part1.rar" yEnc %s`, tail)).Key
		for f := 1; f <= 15; f++ {
			set := release.ParseSet(fmt.Sprintf(`[%d/15] - "Some.Release.2024.part%d.rar" yEnc %s`, f, f, tail))
			require.Equal(t, first, set.Key, "file %d, %.20q", f, tail)
			require.Equal(t, "Some.Release.2024", set.Name)
		}
	}
}

// TestParseSetNameCut: a name over MaxNameBytes is cut at the last
// separator near the bound, not inside a word, and ends with "…" to show
// it was cut. A subject of separators alone still has a name: a release
// with a key is never without one.
func TestParseSetNameCut(t *testing.T) {
	t.Parallel()
	stem := strings.Repeat("Long.Name.", 100) + "S01E01"
	name := release.ParseSet(`"` + stem + `.part01.rar" yEnc`).Name
	require.LessOrEqual(t, len(name), release.MaxNameBytes)
	require.True(t, strings.HasSuffix(name, "…"), name)
	cut := strings.TrimSuffix(name, "…")
	require.True(t, strings.HasPrefix(stem, cut), name)
	require.Equal(t, byte('.'), stem[len(cut)], name) // a whole word before the cut
	require.Greater(t, len(cut), release.MaxNameBytes-64)

	// One word longer than the bound is cut at the bound.
	word := strings.Repeat("a", 2*release.MaxNameBytes)
	name = release.ParseSet(word).Name
	require.Equal(t, word[:release.MaxNameBytes-len("…")]+"…", name)

	for _, s := range []string{strings.Repeat("- ", 400), strings.Repeat("-", 1000), `"` + strings.Repeat("-_", 400) + `.rar"`} {
		set := release.ParseSet(s)
		require.NotEmpty(t, set.Key, "%.20q", s)
		require.NotEmpty(t, set.Name, "%.20q", s)
		require.LessOrEqual(t, len(set.Name), release.MaxNameBytes)
		require.True(t, validText(set.Name))
	}
}
