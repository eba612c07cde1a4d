package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/release"
)

// The search cases (release.Searcher): words (AND, case, separators,
// unicode, numbers), the filters, order and paging, one index entry per
// release however often it changes, and bad queries. The releases are
// built the real way: items in the results feed, a release.Builder, and
// the store's PutReleases. A backend that is no release.Searcher skips
// them.
//
// Categories and episodes: the store keeps what the builder gives
// (release.Assign) and, where that is unset, release.Categorize and
// release.ParseEpisode of the name. The cases compute what to expect
// from the stored values, so they hold whatever the rules say, and check
// that some of them keep only part of the releases; the
// parent/subcategory and season/episode arithmetic over controlled values
// is checked by sqlstore's own tests.

// searchStore is a release store that searches.
type searchStore interface {
	release.Store
	release.Searcher
}

func searcher(t *testing.T, e *env) searchStore {
	t.Helper()
	ss, ok := e.Backend.(searchStore)
	if !ok {
		t.Skip("the backend implements no release.Searcher")
	}
	return ss
}

// named is a release as a search case posts it: one file of total parts,
// the parts listed seen.
type named struct {
	name  string
	date  time.Time
	total int
	parts []int
}

// searchDay is the day the search cases post on.
var searchDay = time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)

// buildNamed posts each release's file in group (new to the backend)
// through the results feed and builds them with consumer's builder; it
// returns the store's releases by name. want is the consumer's item count
// after it.
func (e *env) buildNamed(t *testing.T, ss searchStore, group, consumer string, rels []named, want int64) map[string]release.Release {
	t.Helper()
	ps := make([]posted, len(rels))
	for i, r := range rels {
		ps[i] = posted{"Poster <p@example.test>", fmt.Sprintf(`"%s.rar" yEnc`, r.name), group, r.date, r.total, r.parts}
	}
	e.storeItems(t, ps)
	build(t, e, ss, e.builder(t, ss, consumer, 0), consumer, want)
	out := map[string]release.Release{}
	for name, list := range all(t, e, ss, group) {
		require.Len(t, list, 1, name)
		out[name] = list[0]
	}
	for _, r := range rels {
		require.Contains(t, out, r.name, "the release of %q", r.name)
	}
	return out
}

// complete returns n for a release of one complete file of 2 parts.
func complete(name string, date time.Time) named { return named{name, date, 2, []int{1, 2}} }

// search runs q and returns the names found, in order.
func search(t *testing.T, e *env, ss searchStore, q release.Search) ([]string, release.Found) {
	t.Helper()
	f, err := ss.SearchReleases(e.ctx, q)
	require.NoError(t, err, "%+v", q)
	names := []string{}
	for _, r := range f.Releases {
		names = append(names, r.Name)
	}
	return names, f
}

// words searches text's SearchWords and returns the names found, sorted.
func words(t *testing.T, e *env, ss searchStore, text string) []string {
	t.Helper()
	names, f := search(t, e, ss, release.Search{Words: release.SearchWords(text)})
	require.Equal(t, len(names), f.Total, "%q", text)
	slices.Sort(names)
	return names
}

func testSearchWords(t *testing.T, e *env) {
	ss := searcher(t, e)
	const (
		s02   = "Some.Show.S01E02.720p.HDTV.x264-GRP"
		s03   = "Some.Show.S01E03.1080p.WEB.x264-GRP"
		other = "Other_Show S01E02 720p-X"
		cafe  = "Café.Crème.2024"
		daily = "Daily.Show.2026.11.29.720p"
		greek = "Ελληνικά.Νέα.2025"
		// Kawi (Unicode 14) is letters to Go, not to every database
		// locale: PostgreSQL's parser, were it used, would drop them.
		kawi  = "Newer.𑼄𑼅.Kawi"
		mixed = "Mixed.𑼄q𑼅.Show"
	)
	day := searchDay
	e.buildNamed(t, ss, "g.words", "search", []named{
		complete(s02, day), complete(s03, day.Add(time.Hour)), complete(other, day.Add(2*time.Hour)),
		complete(cafe, day.Add(3*time.Hour)), complete(daily, day.Add(4*time.Hour)), complete(greek, day.Add(5*time.Hour)),
		complete(kawi, day.Add(6*time.Hour)), complete(mixed, day.Add(7*time.Hour)),
	}, 8)
	for text, want := range map[string][]string{
		"some show s01e02":     {s02},
		"show s01e03":          {s03},
		"SOME.show":            {s02, s03},
		"s01e02 720p":          {other, s02},
		"show":                 {daily, mixed, other, s02, s03},
		"𑼄𑼅":                   {kawi},
		"newer 𑼄𑼅":             {kawi},
		"show 𑼄𑼅":              nil, // no name has both: the word is not dropped
		"𑼄q𑼅":                  {mixed},
		"𑼄q𑼅 show":             {mixed},
		"𑼄q𑼅 kawi":             nil,
		"q":                    nil, // nor is a word split out of one
		"𑼄":                    nil, // words match whole
		"x264":                 {s02, s03},
		"1080p":                {s03},
		"x264 grp 720p":        {s02},
		"café":                 {cafe},
		"CAFÉ crème":           {cafe},
		"cafe":                 nil, // diacritics are kept
		"2024":                 {cafe},
		"2026 11 29":           {daily},
		"2026.11.29":           {daily},
		"11":                   {daily},
		"ελληνικά":             {greek},
		"ΝΈΑ":                  {greek},
		"some show s01e04":     nil,
		"nosuchword":           nil,
		"some-other":           nil, // AND: no name has both
		"s01":                  nil, // words match whole
		"GRP x264 Some S01E02": {s02},
	} {
		got := words(t, e, ss, text)
		if want == nil {
			want = []string{}
		}
		slices.Sort(want)
		require.Equal(t, want, got, "%q", text)
	}
	names, f := search(t, e, ss, release.Search{})
	require.Equal(t, []string{mixed, kawi, greek, daily, cafe, other, s03, s02}, names, "no words: every release, newest first")
	require.Equal(t, 8, f.Total)
}

func testSearchFilters(t *testing.T, e *env) {
	ss := searcher(t, e)
	day := searchDay
	rels := e.buildNamed(t, ss, "g.filters", "search", []named{
		{"Full.Movie.2024.1080p", day, 4, []int{1, 2, 3, 4}},             // 4000 bytes, complete
		{"Most.Movie.2024.1080p", day.Add(time.Hour), 4, []int{1, 2, 3}}, // 3000 bytes, 75%
		{"Half.Movie.2024.1080p", day.Add(2 * time.Hour), 4, []int{1, 3}},
		{"Tiny.Movie.2024.1080p", day.Add(3 * time.Hour), 1, []int{1}},
		{"Some.Show.S02E05.720p", day.Add(4 * time.Hour), 2, []int{1, 2}},
		{"Some.Show.S02E06.720p", day.Add(5 * time.Hour), 2, []int{1, 2}},
		{"Some.Show.S03E01.720p", day.Add(6 * time.Hour), 2, []int{1, 2}},
		{"Some.Show.S02.720p", day.Add(7 * time.Hour), 2, []int{1, 2}},
	}, 8)
	movie := release.SearchWords("movie")
	for _, c := range []struct {
		name string
		q    release.Search
		want []string
	}{
		{"complete only by default", release.Search{Words: movie},
			[]string{"Tiny.Movie.2024.1080p", "Full.Movie.2024.1080p"}},
		{"min completion 75", release.Search{Words: movie, MinCompletion: 75},
			[]string{"Tiny.Movie.2024.1080p", "Most.Movie.2024.1080p", "Full.Movie.2024.1080p"}},
		{"min completion 76", release.Search{Words: movie, MinCompletion: 76},
			[]string{"Tiny.Movie.2024.1080p", "Full.Movie.2024.1080p"}},
		{"min completion 1", release.Search{Words: movie, MinCompletion: 1},
			[]string{"Tiny.Movie.2024.1080p", "Half.Movie.2024.1080p", "Most.Movie.2024.1080p", "Full.Movie.2024.1080p"}},
		{"min bytes", release.Search{Words: movie, MinBytes: 2000, MinCompletion: 1},
			[]string{"Half.Movie.2024.1080p", "Most.Movie.2024.1080p", "Full.Movie.2024.1080p"}},
		{"max bytes", release.Search{Words: movie, MaxBytes: 3000, MinCompletion: 1},
			[]string{"Tiny.Movie.2024.1080p", "Half.Movie.2024.1080p", "Most.Movie.2024.1080p"}},
		{"both bytes", release.Search{Words: movie, MinBytes: 2000, MaxBytes: 3000, MinCompletion: 1},
			[]string{"Half.Movie.2024.1080p", "Most.Movie.2024.1080p"}},
		{"posted after", release.Search{Words: movie, PostedAfter: day.Add(time.Hour), MinCompletion: 1},
			[]string{"Tiny.Movie.2024.1080p", "Half.Movie.2024.1080p"}},
		{"posted after, no words", release.Search{PostedAfter: day.Add(5 * time.Hour)},
			[]string{"Some.Show.S02.720p", "Some.Show.S03E01.720p"}},
	} {
		got, f := search(t, e, ss, c.q)
		require.Equal(t, c.want, got, c.name)
		require.Equal(t, len(c.want), f.Total, c.name)
	}

	// Categories and episodes: what the rules give each name.
	for _, r := range rels {
		require.Equal(t, release.Categorize(r.Name, r.Groups), r.Category, r.Name)
		require.Equal(t, release.ParseEpisode(r.Name), r.Episode, r.Name)
	}
	inCategory := func(r release.Release, cats []int) bool {
		for _, c := range cats {
			if r.Category == c || c%1000 == 0 && r.Category >= c && r.Category < c+1000 {
				return true
			}
		}
		return false
	}
	expect := func(keep func(release.Release) bool) []string {
		var out []release.Release
		for _, r := range rels {
			if r.Complete && keep(r) {
				out = append(out, r)
			}
		}
		slices.SortFunc(out, func(a, b release.Release) int { return b.Posted.Compare(a.Posted) })
		names := []string{}
		for _, r := range out {
			names = append(names, r.Name)
		}
		return names
	}
	// The expectations come from the stored values, so the cases only
	// test the filters while some of them keep part of the releases: a
	// filter the store ignored would then answer too many.
	all := len(expect(func(release.Release) bool { return true }))
	var narrowed []int
	for _, cats := range [][]int{{8000}, {8010}, {5000}, {5040}, {2000}, {2040, 5040}, {2000, 5000, 8000}, {1000, 9999}} {
		got, _ := search(t, e, ss, release.Search{Categories: cats})
		require.Equal(t, expect(func(r release.Release) bool { return inCategory(r, cats) }), got, "categories %v", cats)
		narrowed = append(narrowed, len(got))
	}
	for _, ep := range []release.Episode{{Season: 2}, {Season: 2, Episode: 5}, {Season: 3, Episode: 1}, {Season: 4}} {
		got, _ := search(t, e, ss, release.Search{Episode: &ep})
		want := expect(func(r release.Release) bool {
			return r.Episode != nil && r.Episode.Season == ep.Season && (ep.Episode == 0 || r.Episode.Episode == ep.Episode)
		})
		require.Equal(t, want, got, "episode %+v", ep)
		narrowed = append(narrowed, len(got))
	}
	require.True(t, slices.ContainsFunc(narrowed, func(n int) bool { return n > 0 && n < all }),
		"no category or episode case kept part of the %d releases: %v", all, narrowed)
}

func testSearchPaging(t *testing.T, e *env) {
	ss := searcher(t, e)
	var rels []named
	for i := range 25 {
		// Pairs posted at one instant: the later id comes first.
		rels = append(rels, complete(fmt.Sprintf("Paged.Release.%02d", i), searchDay.Add(time.Duration(i/2)*time.Minute)))
	}
	byName := e.buildNamed(t, ss, "g.paging", "search", rels, 25)
	var want []int64
	for _, r := range byName {
		want = append(want, r.ID)
	}
	slices.SortFunc(want, func(a, b int64) int {
		ra, rb := byID(byName, a), byID(byName, b)
		if c := rb.Posted.Compare(ra.Posted); c != 0 {
			return c
		}
		return int(b - a)
	})
	var got []int64
	for offset := 0; offset < 30; offset += 10 {
		f, err := ss.SearchReleases(e.ctx, release.Search{Words: []string{"paged"}, Offset: offset, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, 25, f.Total, "offset %d", offset)
		require.Len(t, f.Releases, min(10, 25-offset))
		for _, r := range f.Releases {
			got = append(got, r.ID)
		}
	}
	require.Equal(t, want, got, "newest first, then by id, descending; each once")
	f, err := ss.SearchReleases(e.ctx, release.Search{Words: []string{"paged"}, Offset: 40, Limit: 10})
	require.NoError(t, err)
	require.Empty(t, f.Releases)
	require.Equal(t, 25, f.Total, "past the end: the total still counts")
	f, err = ss.SearchReleases(e.ctx, release.Search{Offset: 3, Limit: 2})
	require.NoError(t, err)
	require.Equal(t, want[3:5], []int64{f.Releases[0].ID, f.Releases[1].ID})
	require.Equal(t, 25, f.Total)
}

func byID(m map[string]release.Release, id int64) release.Release {
	for _, r := range m {
		if r.ID == id {
			return r
		}
	}
	return release.Release{}
}

// testSearchIndexedOnce changes a release with later pages: a search finds
// it once, with its new totals, and the moment PutReleases returns.
func testSearchIndexedOnce(t *testing.T, e *env) {
	ss := searcher(t, e)
	name := "Growing.Release.2025.1080p"
	rels := e.buildNamed(t, ss, "g.once1", "search", []named{{name, searchDay, 3, []int{1}}}, 1)
	id := rels[name].ID
	q := release.Search{Words: release.SearchWords("growing release"), MinCompletion: 1}
	check := func(parts int64) {
		t.Helper()
		f, err := ss.SearchReleases(e.ctx, q)
		require.NoError(t, err)
		require.Equal(t, 1, f.Total)
		require.Len(t, f.Releases, 1)
		require.Equal(t, id, f.Releases[0].ID)
		require.Equal(t, parts, f.Releases[0].PartsSeen)
	}
	check(1)
	for i, part := range []int{2, 3} {
		ps := []posted{{"Poster <p@example.test>", fmt.Sprintf(`"%s.rar" yEnc`, name), fmt.Sprintf("g.once%d", i+2), searchDay, 3, []int{part}}}
		e.storeItems(t, ps)
		build(t, e, ss, e.builder(t, ss, "search", 0), "search", int64(2+i))
		check(int64(2 + i)) // searchable at once, one entry
	}
	f, err := ss.SearchReleases(e.ctx, release.Search{Words: release.SearchWords("growing release")})
	require.NoError(t, err)
	require.Len(t, f.Releases, 1, "complete now")
	got, err := ss.ReleaseByID(e.ctx, id)
	require.NoError(t, err)
	require.True(t, got.Complete)
	require.Equal(t, []string{"g.once1", "g.once2", "g.once3"}, got.Groups)
}

// testSearchHostileNames stores names with XML metacharacters, control
// bytes and invalid UTF-8: a search returns each name as the listing does.
func testSearchHostileNames(t *testing.T, e *env) {
	ss := searcher(t, e)
	hostile := []string{
		"Tags.<b>bold</b>&amp;.hostile1",
		"Apos'trophe & <![CDATA[x]]> hostile2",
		"Ctrl\x01\x07\x1b[31m.hostile3",
		"Bad\xff\xfeUTF8.hostile4",
		"Zero\x00Byte.hostile5",
	}
	var rels []named
	for i, n := range hostile {
		rels = append(rels, named{n, searchDay.Add(time.Duration(i) * time.Minute), 1, []int{1}})
	}
	ps := make([]posted, len(rels))
	for i, r := range rels {
		ps[i] = posted{"Poster <p@example.test>", fmt.Sprintf(`"%s.rar" yEnc`, r.name), "g.hostile", r.date, r.total, r.parts}
	}
	e.storeItems(t, ps)
	build(t, e, ss, e.builder(t, ss, "search", 0), "search", int64(len(ps)))
	stored := all(t, e, ss, "g.hostile")
	require.Len(t, stored, len(hostile))
	for i := range hostile {
		word := fmt.Sprintf("hostile%d", i+1)
		f, err := ss.SearchReleases(e.ctx, release.Search{Words: []string{word}})
		require.NoError(t, err)
		require.Len(t, f.Releases, 1, word)
		r := f.Releases[0]
		require.Contains(t, stored, r.Name, "%s: the name as stored", word)
		require.Equal(t, stored[r.Name][0].ID, r.ID)
		for _, w := range release.SearchWords(r.Name) {
			f, err := ss.SearchReleases(e.ctx, release.Search{Words: []string{w, word}})
			require.NoError(t, err)
			require.Len(t, f.Releases, 1, "%s: word %q of its name", word, w)
		}
	}
}

// testSearchBadQueries: each bad query is edgeindex.ErrInvalid and changes
// nothing.
func testSearchBadQueries(t *testing.T, e *env) {
	ss := searcher(t, e)
	e.buildNamed(t, ss, "g.bad", "search", []named{complete("Good.Release", searchDay)}, 1)
	long := make([]byte, release.MaxSearchWord+1)
	for i := range long {
		long[i] = 'a'
	}
	many := make([]string, release.MaxSearchWords+1)
	for i := range many {
		many[i] = fmt.Sprintf("w%d", i)
	}
	for name, q := range map[string]release.Search{
		"limit":          {Limit: -1},
		"limit big":      {Limit: release.MaxSearchLimit + 1},
		"offset":         {Offset: -1},
		"offset big":     {Offset: release.MaxSearchOffset + 1},
		"completion":     {MinCompletion: 101},
		"completion neg": {MinCompletion: -1},
		"bytes":          {MinBytes: -1},
		"max bytes":      {MaxBytes: -1},
		"upper case":     {Words: []string{"Good"}},
		"two words":      {Words: []string{"good release"}},
		"a dot":          {Words: []string{"good.release"}},
		"a quote":        {Words: []string{`good"`}},
		"fts syntax":     {Words: []string{"good*"}},
		"empty word":     {Words: []string{""}},
		"long word":      {Words: []string{string(long)}},
		"many words":     {Words: many},
		"category":       {Categories: []int{999}},
		"category big":   {Categories: []int{10000}},
		"season":         {Episode: &release.Episode{Season: -1}},
		"episode":        {Episode: &release.Episode{Season: 1, Episode: 10000}},
	} {
		_, err := ss.SearchReleases(e.ctx, q)
		require.ErrorIs(t, err, edgeindex.ErrInvalid, name)
	}
	names, f := search(t, e, ss, release.Search{Words: []string{"good"}})
	require.Equal(t, []string{"Good.Release"}, names, "bad queries changed nothing")
	require.Equal(t, 1, f.Total)
	p, err := ss.Releases(e.ctx, release.Query{})
	require.NoError(t, err)
	require.Len(t, p.Releases, 1)
}
