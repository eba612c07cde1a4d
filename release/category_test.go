package release_test

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/usenet"
)

// TestCategories checks Categorize against the real-world release names
// of testdata/categories.tsv: Sonarr's, Radarr's and NNTmux's test
// fixtures, with the category each fixture says the name is. The known
// misses at its end must stay wrong until a rule fixes them, so that the
// file says what Categorize gets wrong.
func TestCategories(t *testing.T) {
	t.Parallel()
	f, err := os.Open("testdata/categories.tsv")
	require.NoError(t, err)
	defer f.Close()
	n, misses := 0, 0
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		cols := strings.Split(text, "\t")
		require.True(t, len(cols) >= 2 && len(cols) <= 4, "line %d: %q", line, text)
		miss := len(cols) == 4
		require.True(t, !miss || cols[3] == "miss", "line %d: %q", line, text)
		want, err := strconv.Atoi(cols[1])
		require.NoError(t, err, "line %d", line)
		var groups []string
		if len(cols) >= 3 && cols[2] != "" {
			groups = strings.Split(cols[2], ",")
		}
		_, known := release.CategoryName(want)
		require.True(t, known, "line %d: %d", line, want)
		got := release.Categorize(cols[0], groups)
		switch {
		case miss && got == want:
			t.Errorf("line %d: Categorize(%q) is right now: move it out of the known misses", line, cols[0])
		case miss:
			misses++
		case got != want:
			t.Errorf("line %d: Categorize(%q, %q) = %d, want %d", line, cols[0], groups, got, want)
		default:
			n++
		}
	}
	require.NoError(t, sc.Err())
	require.GreaterOrEqual(t, n, 60)
	t.Logf("%d names right, %d known misses", n, misses)
}

func TestParseEpisode(t *testing.T) {
	t.Parallel()
	ep := func(s, e int) *release.Episode { return &release.Episode{Season: s, Episode: e} }
	daily := func(y, md int) *release.Episode { return &release.Episode{Season: y, Episode: md, Daily: true} }
	for _, c := range []struct {
		name string
		want *release.Episode
	}{
		{"Some.Show.S01E02.720p.HDTV.x264-GRP", ep(1, 2)},
		{"some show s1e2 hdtv", ep(1, 2)},
		{"Show.S01E02E03.720p", ep(1, 2)},
		{"SERIES.S03E01-06.DUAL.BDRip", ep(3, 1)},
		{"Show.S01E02-E03.720p", ep(1, 2)},
		{"The.SeriesS06E11.The.Santa.Simulation.480p", ep(6, 11)},
		{"the.Series.1x13.circles", ep(1, 13)},
		{"Series cómo pasó - 19x15 [344]", ep(19, 15)},
		{"Show.S2024E0101", ep(2024, 101)},
		// Season packs.
		{"The.Series.US.S03.720p.x264-DIMENSION", ep(3, 0)},
		{"Show S1 1080p", ep(1, 0)},
		{"30.Series.Season.04.HDTV.XviD-DIMENSION", ep(4, 0)},
		{"Series Title Season 2 (BDRemux 1080p HEVC FLAC)", ep(2, 0)},
		{"Show Season 1 Episode 5 720p", ep(1, 5)},
		// An episode wins over a pack anywhere in the name.
		{"Show.S01.Extras.S01E05", ep(1, 5)},
		// Daily shows.
		{"Show.2026.11.29.720p", daily(2026, 1129)},
		{"Show - 2026-11-29 - Guest", daily(2026, 1129)},
		{"Series Title 2011 04 18 Emma Roberts HDTV", daily(2011, 418)},
		{"2020.A.Late.Talk.Show.2012.16.02.PDTV", daily(2012, 216)},
		{"NBA.20260419.PHI.BOS.1080p60", daily(2026, 419)},
		{"Show.2024.02.29", daily(2024, 229)},
		// Not TV.
		{"2012.2009.1080p.BluRay.x264", nil},
		{"Blade.Runner.2049.2017.2160p.UHD.BluRay", nil},
		{"1776.1979.EXTENDED.720p.BluRay.X264-AMIABLE", nil},
		{"Movie.2019.1080p.x264", nil},
		{"Resolution.1920x1080.Movie.2020", nil},
		{"Movie.Name.AS02.2023.1080p", nil},
		{"Show.2026.13.13", nil},
		{"Show.2026.02.30", nil},
		{"Show.S12345E01", nil},
		{"Show.S01E12345", nil},
		{"Cyberpunk.2077-GOG", nil},
		{"d41d8cd98f00b204e9800998ecf8427e", nil},
		{"", nil},
		{"S", nil},
	} {
		require.Equal(t, c.want, release.ParseEpisode(c.name), c.name)
	}
}

// TestTitleWins: a readable title outside the quotes names a release
// whose quoted file name is obfuscated; every file of the posting keeps
// one key; a release with no readable name keeps the hashed one, and
// Categorize calls it hashed.
func TestTitleWins(t *testing.T) {
	t.Parallel()
	parse := func(subject string) release.Set {
		sub, ok := usenet.ParseSubject(subject)
		require.True(t, ok, subject)
		return release.ParseSet(sub.Base)
	}
	var keys []string
	for _, s := range []string{
		`My.Show.S01E01.720p.WEB-DL [1/4] - "x7k2q9.part1.rar" yEnc (1/5)`,
		`My.Show.S01E01.720p.WEB-DL [2/4] - "x7k2q9.part2.rar" yEnc (1/5)`,
		`My.Show.S01E01.720p.WEB-DL [3/4] - "x7k2q9.par2" yEnc (1/1)`,
		`My.Show.S01E01.720p.WEB-DL [4/4] - "x7k2q9.vol00+01.par2" yEnc (1/1)`,
	} {
		set := parse(s)
		require.Equal(t, "My.Show.S01E01.720p.WEB-DL", set.Name, s)
		keys = append(keys, set.Key)
	}
	for _, k := range keys {
		require.Equal(t, keys[0], k)
	}
	require.Equal(t, release.CatTVHD, release.Categorize("My.Show.S01E01.720p.WEB-DL", nil))

	// A file name outside the quotes is the title.
	set := parse(`[PRiVATE]-[The.Name.2024.1080p.mkv]-[1/5] - "AA7Jl2toE8Q53yNZmQ5R6G.mkv" yEnc (1/99)`)
	require.Equal(t, "The.Name.2024.1080p", set.Name)

	// A readable quoted name wins, as before.
	for _, s := range []string{
		`[1/3] - "Some.Show.S01E02.720p.HDTV.x264-GRP.part01.rar" yEnc (1/5)`,
		`[2/3] - "Some.Show.S01E02.720p.HDTV.x264-GRP.part02.rar" yEnc (1/5)`,
		`[3/3] - "Some.Show.S01E02.720p.HDTV.x264-GRP.par2" yEnc (1/5)`,
		`Other Words [1/3] - "Some.Show.S01E02.720p.HDTV.x264-GRP.par2" yEnc (1/5)`,
	} {
		require.Equal(t, "Some.Show.S01E02.720p.HDTV.x264-GRP", parse(s).Name, s)
	}
	// Words that only look like codes are no obfuscation.
	require.Equal(t, "S01E02E03", parse(`My.Show [1/2] - "S01E02E03.mkv" yEnc (1/5)`).Name)
	require.Equal(t, "x264", parse(`My.Show [1/2] - "x264.mkv" yEnc (1/5)`).Name)

	// Nothing readable outside the quotes: the hashed name stays, and is
	// categorized hashed.
	for _, s := range []string{
		`[1/2] - "x7k2q9.part1.rar" yEnc (1/5)`,
		`"d41d8cd98f00b204e9800998ecf8427e.rar" yEnc (1/5)`,
		`[PRiVATE] [1/2] - "x7k2q9.part1.rar" yEnc (1/5)`,
	} {
		set := parse(s)
		require.Contains(t, []string{"x7k2q9", "d41d8cd98f00b204e9800998ecf8427e"}, set.Name, s)
		require.Equal(t, release.CatHashed, release.Categorize(set.Name, []string{"alt.binaries.hdtv"}), s)
	}
}

func TestCategorizeHashed(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"x7k2q9", "d41d8cd98f00b204e9800998ecf8427e", "D41D8CD98F00B204E9800998ECF8427E",
		"550e8400-e29b-41d4-a716-446655440000", "xK9mR2pL4qW7nT3vB", "bcdfghjklmnpqrstvwxz", "aB3c.D4eF.5gH6i"} {
		require.Equal(t, release.CatHashed, release.Categorize(name, nil), name)
	}
	for _, name := range []string{"x264", "S01E02", "S01E02E03", "1080p", "Starfield", "Oppenheimer.2023",
		"Abcdefghijklmnopqrstu", "DD5.1.H264", "a1.b2.c3", "Top100", "Rel.2024"} {
		require.NotEqual(t, release.CatHashed, release.Categorize(name, nil), name)
	}
}

// TestCategorizeGroups: XXX by group whatever the name; other groups
// decide only when the name does not.
func TestCategorizeGroups(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		groups []string
		want   int
	}{
		{"Some.Name.2024.1080p.WEB-DL.x264-GRP", []string{"alt.binaries.erotica"}, release.CatXXXx264},
		{"Some.Name.2024.2160p.WEB-DL.x265-GRP", []string{"alt.binaries.movies", "alt.binaries.erotica.divx"}, release.CatXXXUHD},
		{"Some.Name.DVDRip", []string{"alt.binaries.multimedia.erotica"}, release.CatXXXDVD},
		{"Some.Name.XviD", []string{"alt.binaries.multimedia.erotica"}, release.CatXXXXviD},
		{"Some.Name.Set.01", []string{"alt.binaries.pictures.erotica"}, release.CatXXXImageSet},
		{"Some Name", []string{"alt.binaries.xxx"}, release.CatXXX},
		{"Some.Studio.XXX.720p", nil, release.CatXXXx264},
		{"Some.Show.S01E02.720p", []string{"alt.binaries.sounds.mp3"}, release.CatTVHD},
		{"Plain Words", []string{"alt.binaries.sounds.mp3"}, release.CatMP3},
		{"Plain Words", []string{"alt.binaries.sounds.flac"}, release.CatLossless},
		{"Plain Words", []string{"alt.binaries.comics.dcp"}, release.CatComics},
		{"Plain Words", []string{"alt.binaries.teevee"}, release.CatTV},
		{"Plain Words", []string{"alt.binaries.movies.divx"}, 2000},
		{"Plain Words", []string{"alt.binaries.test"}, release.CatMisc},
		{"Plain Words", nil, release.CatMisc},
		{"Artist-Album-2024-320kbps-MP3", nil, release.CatMP3},
		{"Some.Documentary.S01E01.1080p.WEB", nil, release.CatTVDocu},
		{"UFC.300.Main.Card.720p.WEB.h264", nil, release.CatTVSport},
		{"NBA.2K24-RUNE", nil, release.CatPCGames},
		{"Show.S01E01.FLAC.1080p", nil, release.CatTVHD},
	} {
		require.Equal(t, c.want, release.Categorize(c.name, c.groups), "%s in %v", c.name, c.groups)
	}
}

// TestAssignClassifies: Assign sets Category and Episode on new releases,
// and again on changed ones, whose groups can grow.
func TestAssignClassifies(t *testing.T) {
	t.Parallel()
	day := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	a := file("a", `"My.Show.S01E02.720p.HDTV.x264-GRP.part1.rar"`, day, 1, 2, 3)
	ch := release.Assign(release.Update{Window: time.Hour, Files: []release.File{a}}, nil, nil, day)
	require.Len(t, ch.New, 1)
	require.Equal(t, release.CatTVHD, ch.New[0].Category)
	require.Equal(t, &release.Episode{Season: 1, Episode: 2}, ch.New[0].Episode)

	// A stored release gains a file in an erotica group: it is XXX now.
	stored := ch.New[0]
	stored.ID = 7
	b := file("b", `"My.Show.S01E02.720p.HDTV.x264-GRP.part2.rar"`, day.Add(time.Minute), 1, 2, 3)
	b.Groups = []string{"alt.binaries.erotica"}
	ch = release.Assign(release.Update{Window: time.Hour, Files: []release.File{b}}, nil, []release.Release{stored}, day)
	require.Len(t, ch.Changed, 1)
	require.Equal(t, []string{"alt.binaries.erotica", "g"}, ch.Changed[0].Groups)
	require.Equal(t, release.CatXXXx264, ch.Changed[0].Category)
	require.Equal(t, &release.Episode{Season: 1, Episode: 2}, ch.Changed[0].Episode)
}

// FuzzCategorize: any name and group, no panic, a known category, and
// ParseEpisode in the bounds a search checks.
func FuzzCategorize(f *testing.F) {
	f.Add("Some.Show.S01E02.720p.HDTV.x264-GRP", "alt.binaries.hdtv")
	f.Add("Movie.2024.2160p.UHD.BluRay.REMUX-GRP", "alt.binaries.movies")
	f.Add("x7k2q9", "")
	f.Add("[SubsPlease] Show - 08 (720p) [26BDA3C9]", "alt.binaries.multimedia.anime")
	f.Fuzz(func(t *testing.T, name, group string) {
		c := release.Categorize(name, []string{group})
		_, ok := release.CategoryName(c)
		require.True(t, ok, "%q: %d", name, c)
		if ep := release.ParseEpisode(name); ep != nil {
			require.True(t, ep.Season >= 0 && ep.Season <= 9999 && ep.Episode >= 0 && ep.Episode <= 9999, "%q: %+v", name, ep)
		}
	})
}

// BenchmarkCategorize categorizes a typical name; Assign does it for each
// new or changed release.
func BenchmarkCategorize(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		release.Categorize("Some.Show.S01E02.720p.HDTV.x264-GRP", []string{"alt.binaries.hdtv", "alt.binaries.teevee"})
	}
}

// TestLongNames: names far longer than any release's stay categorized,
// and ParseEpisode reads the first 64 words.
func TestLongNames(t *testing.T) {
	t.Parallel()
	long := "Show.S01E02." + strings.Repeat("s1e", 100_000)
	require.Equal(t, &release.Episode{Season: 1, Episode: 2}, release.ParseEpisode(long))
	require.Nil(t, release.ParseEpisode(strings.Repeat("word.", 64)+"S01E02"))
	for _, name := range []string{long, strings.Repeat("[x] - 1", 50_000), strings.Repeat("a1", 100_000), strings.Repeat("\xff", 10_000)} {
		_, ok := release.CategoryName(release.Categorize(name, []string{strings.Repeat("g", 10_000)}))
		require.True(t, ok)
	}
}
