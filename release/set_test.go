package release_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/usenet"
)

// TestParseSet is the table of subject forms: each row is a subject as it
// is posted (part counter included), the set name and key it cleans to,
// and its file counter.
func TestParseSet(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		subject     string
		name, key   string
		file, files int
	}{
		// Quoted names with rar volumes, par2, nfo, sfv and counters.
		{`"My.Show.S01E02.part01.rar" yEnc (1/50)`, "My.Show.S01E02", `"my.show.s01e02"`, 0, 0},
		{`[01/15] - "My.Show.S01E02.part01.rar" yEnc (1/50)`, "My.Show.S01E02", `"my.show.s01e02"`, 1, 15},
		{`[15/15] - "My.Show.S01E02.vol15+16.par2" yEnc (1/9)`, "My.Show.S01E02", `"my.show.s01e02"`, 15, 15},
		{`[02/15] - "My.Show.S01E02.par2" yEnc (1/1)`, "My.Show.S01E02", `"my.show.s01e02"`, 2, 15},
		{`[03/15] - "My.Show.S01E02.nfo" yEnc (1/1)`, "My.Show.S01E02", `"my.show.s01e02"`, 3, 15},
		{`[04/15] - "My.Show.S01E02.sfv" yEnc (1/1)`, "My.Show.S01E02", `"my.show.s01e02"`, 4, 15},
		{`[05/15] - "My.Show.S01E02.r00" yEnc (01/40)`, "My.Show.S01E02", `"my.show.s01e02"`, 5, 15},
		{`[06/15] - "My.Show.S01E02.rar" yEnc (01/40)`, "My.Show.S01E02", `"my.show.s01e02"`, 6, 15},
		{`[07/15] - "My.Show.S01E02-sample.mkv" yEnc (1/3)`, "My.Show.S01E02", `"my.show.s01e02"`, 7, 15},
		{`[08/15] - "My.Show.S01E02.vol000-001.PAR2" yEnc (1/3)`, "My.Show.S01E02", `"my.show.s01e02"`, 8, 15},
		// (1/40) as the file counter, the part counter last.
		{`(01/40) "archive.7z.001" yEnc (1/120)`, "archive", `"archive"`, 1, 40},
		{`(02/40) "archive.7z.002" yEnc (1/120)`, "archive", `"archive"`, 2, 40},
		{`"Backup.2024.zip.003" (3/4) yEnc (7/9)`, "Backup.2024", `"backup.2024"`, 3, 4},
		// A prefix outside the quotes stays in the key; sizes go.
		{`Another.Series.S02E03 [1/6] - "Another.Series.S02E03.part1.rar" yEnc (1/20)`, "Another.Series.S02E03",
			`another.series.s02e03 "another.series.s02e03"`, 1, 6},
		{`(Some Movie 2024) [01/12] - "some.movie.2024.part01.rar" 52.5 MB yEnc (1/70)`, "some.movie.2024",
			`(some movie 2024) "some.movie.2024"`, 1, 12},
		{`(Some Movie 2024) [12/12] - "some.movie.2024.vol3+4.par2" 1,2 GB yEnc (1/2)`, "some.movie.2024",
			`(some movie 2024) "some.movie.2024"`, 12, 12},
		{`"file.bin" 700MB yEnc (1/9)`, "file", `"file"`, 0, 0},
		{`"file.iso" - 123456 bytes yEnc (1/9)`, "file", `"file"`, 0, 0},
		// Counters in words.
		{`Docu - File 1 of 15 - "docu.part01.rar" yEnc (1/30)`, "docu", `docu "docu"`, 1, 15},
		{`Docu - 02/15 - "docu.part02.rar" yEnc (1/30)`, "docu", `docu "docu"`, 2, 15},
		{`Docu [3 of 15] "docu.part03.rar" yEnc (1/30)`, "docu", `docu "docu"`, 3, 15},
		// No quotes: a file name as a word.
		{`name.nfo (1/1)`, "name", "name", 0, 0},
		{`name.part07.rar (05/40)`, "name", "name", 0, 0},
		{`[1/3] name.r01 - yEnc (1/5)`, "name", "name", 1, 3},
		// Empty quotes, brackets and an obfuscating poster's style.
		{`[PRiVATE]-[WtFnZb]-[The.Name.2024.mkv]-[1/5] - "" yEnc (1/99)`, "The.Name.2024", `[private]-[wtfnzb]-[the.name.2024]`, 1, 5},
		{`[PRiVATE]-[WtFnZb]-[The.Name.2024.nfo]-[2/5] - "" yEnc (1/1)`, "The.Name.2024", `[private]-[wtfnzb]-[the.name.2024]`, 2, 5},
		// HTML-quoted names, AutoRarPar.
		{`&quot;odd.name.part1.rar&quot; yEnc (1/2)`, "odd.name", `"odd.name"`, 0, 0},
		{`AutoRarPar0001 "set.name.rar" yEnc (1/2)`, "set.name", `"set.name"`, 0, 0},
		// Not counters: 0/5, 9/3.
		{`Top 0/5 list "x.nfo" (1/1)`, "x", `top 0/5 list "x"`, 0, 0},
		// More counter, size and noise forms; words that only look like them.
		{`[1\5] "x.rar" yEnc (1/2)`, "x", `"x"`, 1, 5},
		{`(01 von 20) "x.rar" yEnc (1/2)`, "x", `"x"`, 1, 20},
		{`{3/7} "x.rar" (12 KB) yEnc (1/2)`, "x", `"x"`, 3, 7},
		{`"x.rar" 4 KiB 100 byte yEnc (1/2)`, "x", `"x"`, 0, 0},
		{`"x.rar" 10 MBit yEncode AutoRarPar0001x (1/2)`, "x", `"x" 10 mbit yencode autorarpar0001x`, 0, 0},
		{`Album 2024 "01 - intro.mp3" "02 - song.mp3" (1/2)`, "01 - intro", `album 2024 "01 intro" "02 song"`, 0, 0},
		{`[123456/7] "x.rar" (1/2)`, "x", `[123456/7] "x"`, 0, 0},
		// Names with nothing to strip.
		{`"Plain Name" yEnc (1/2)`, "Plain Name", `"plain name"`, 0, 0},
		{`just words (1/2)`, "just words", "just words", 0, 0},
		// Nothing but a counter and noise keeps the whole subject.
		{`[1/2] yEnc (1/2)`, "[1/2] yEnc", "[1/2] yenc", 1, 2},
	} {
		sub, ok := usenet.ParseSubject(c.subject)
		require.True(t, ok, c.subject)
		set := release.ParseSet(sub.Base)
		require.Equal(t, c.name, set.Name, "name of %s", c.subject)
		require.Equal(t, c.key, set.Key, "key of %s", c.subject)
		require.Equal(t, [2]int{c.file, c.files}, [2]int{set.File, set.Files}, "file counter of %s", c.subject)
	}
}

// TestParseSetOneKeyPerRelease checks the point of the rules: every file of
// a posting, whatever its extension, cleans to one key.
func TestParseSetOneKeyPerRelease(t *testing.T) {
	t.Parallel()
	files := []string{"Rel.2024.part01.rar", "Rel.2024.part02.rar", "Rel.2024.r00", "Rel.2024.r01", "Rel.2024.rar",
		"Rel.2024.par2", "Rel.2024.vol00+01.par2", "Rel.2024.vol01+02.par2", "Rel.2024.nfo", "Rel.2024.sfv",
		"Rel.2024.7z.001", "Rel.2024.001", "Rel.2024.mkv", "Rel.2024-sample.mkv", "Rel.2024.proof.jpg", "Rel.2024.srr", "Rel.2024.nzb"}
	for _, style := range []string{`[%02d/17] - "%s" yEnc (1/10)`, `"%[2]s" yEnc (1/10)`, `Rel.2024 (%02[1]d/17) "%[2]s" 12.5 MB yEnc (1/10)`} {
		var keys []string
		for i, f := range files {
			sub, ok := usenet.ParseSubject(sprintf(style, i+1, f))
			require.True(t, ok)
			set := release.ParseSet(sub.Base)
			keys = append(keys, set.Key)
			require.Equal(t, "Rel.2024", set.Name, "%s in %s", f, style)
		}
		for _, k := range keys {
			require.Equal(t, keys[0], k, style)
		}
	}
}

func TestStem(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"a.part01.rar": "a", "a.part1": "a", "a.r99": "a", "a.s01": "a", "a.z02": "a", "a.7z.001": "a", "a.001": "a",
		"a.vol01+02.par2": "a", "a.vol001-002.PAR2": "a", "a.PAR2": "a", "a.nfo": "a", "a.NFO": "a", "a-sample.mkv": "a",
		"a.sample.mkv": "a", "a_proof.jpg": "a", "a.2024": "a.2024", "x264": "x264", ".nfo": ".nfo", "a.mkv.mkv": "a.mkv",
		"Top.100.nfo": "Top.100", "a.S01E02": "a.S01E02", "": "",
	} {
		require.Equal(t, want, release.Stem(in), in)
	}
}

// FuzzParseSet: any bytes, no panic, a key and name in valid UTF-8
// without NUL, within their bounds.
func FuzzParseSet(f *testing.F) {
	for _, s := range []string{`[01/15] - "name.part01.rar" yEnc`, `"a.vol01+02.par2"`, `""""`, "\x00\xff(1/2)", `[PRiVATE]-[x.mkv]-[1/5] - ""`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		set := release.ParseSet(s)
		for _, v := range []string{set.Key, set.Name} {
			require.True(t, validText(v), "%q", v)
		}
		require.True(t, set.File >= 0 && set.File <= set.Files)
		require.LessOrEqual(t, len(set.Name), release.MaxNameBytes)
		require.LessOrEqual(t, len(set.Key), release.MaxKeyBytes)
	})
}

// BenchmarkParseSet parses a typical subject; the builder parses one per
// binary it consumes.
func BenchmarkParseSet(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		release.ParseSet(`[01/27] - "Some.Release.Name.2024.1080p.part01.rar" yEnc`)
	}
}
