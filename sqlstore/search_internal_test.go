package sqlstore

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/internal/pgtest"
	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/usenet"
)

// openEach runs fn on a new store of each backend.
func openEach(t *testing.T, fn func(t *testing.T, url string, s *Store)) {
	t.Helper()
	for _, b := range pgtest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			url := b.URL(t)
			s, err := Open(t.Context(), url, Config{})
			require.NoError(t, err)
			t.Cleanup(func() { s.Close() })
			fn(t, url, s)
		})
	}
}

// row is a release written straight into the table, with the category
// and episode a test chooses.
type row struct {
	name     string
	category int
	episode  *release.Episode
}

// insertRows writes rows as complete releases, one minute apart, the
// first the oldest; words false leaves their search words NULL, as a
// release stored before migration 0008 has them.
func insertRows(t *testing.T, s *Store, rows []row, words bool) map[string]int64 {
	t.Helper()
	ids := map[string]int64{}
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	tx, err := s.db.BeginTxx(t.Context(), nil)
	require.NoError(t, err)
	defer tx.Rollback()
	for i, r := range rows {
		rel := release.Release{Category: r.category, Episode: r.episode, Name: r.name}
		cat, season, episode, daily := classify(rel)
		var text any = searchText(r.name)
		if !words {
			cat, text = 0, nil
		}
		posted := base.Add(time.Duration(i) * time.Minute).UnixMicro()
		var id int64
		require.NoError(t, tx.GetContext(t.Context(), &id, s.q(`INSERT INTO releases (set_key, name, poster, group_names, posted_us, last_us,
			files_seen, files_complete, files_expected, parts_seen, parts_expected, bytes, complete, updated_us,
			category, season, episode, episode_daily, search_words)
			VALUES (?, ?, 'p', '["g"]', ?, ?, 1, 1, 0, 1, 1, 100, ?, ?, ?, ?, ?, ?, ?) RETURNING id`),
			fmt.Sprintf("k%d", i), r.name, posted, posted, true, posted, cat, season, episode, daily, text), r.name)
		ids[r.name] = id
	}
	require.NoError(t, tx.Commit())
	return ids
}

func names(t *testing.T, s *Store, q release.Search) []string {
	t.Helper()
	f, err := s.SearchReleases(t.Context(), q)
	require.NoError(t, err, "%+v", q)
	out := []string{}
	for _, r := range f.Releases {
		out = append(out, r.Name)
	}
	require.Equal(t, len(out), f.Total)
	slices.Sort(out)
	return out
}

// TestSearchCategoriesAndEpisodes checks the parent and subcategory rule
// and the season and episode filter over categories and episodes the
// test chooses (the conformance cases get theirs from the rules).
func TestSearchCategoriesAndEpisodes(t *testing.T) {
	t.Parallel()
	ep := func(s, e int) *release.Episode { return &release.Episode{Season: s, Episode: e} }
	openEach(t, func(t *testing.T, _ string, s *Store) {
		insertRows(t, s, []row{
			{"A.Show.S01E02", 5040, ep(1, 2)},
			{"B.Show.S01E03", 5030, ep(1, 3)},
			{"C.Movie", 2040, nil},
			{"D.Other", 8010, nil},
			{"E.Daily.Show.2026.11.29", 5040, &release.Episode{Season: 2026, Episode: 1129, Daily: true}},
			{"F.Show.S02", 5045, ep(2, 0)},
			{"G.Top", 5999, nil},
			{"H.Next", 6000, nil},
		}, true)
		for _, c := range []struct {
			cats []int
			want []string
		}{
			{[]int{5000}, []string{"A.Show.S01E02", "B.Show.S01E03", "E.Daily.Show.2026.11.29", "F.Show.S02", "G.Top"}},
			{[]int{5040}, []string{"A.Show.S01E02", "E.Daily.Show.2026.11.29"}},
			{[]int{5000, 5040, 5000}, []string{"A.Show.S01E02", "B.Show.S01E03", "E.Daily.Show.2026.11.29", "F.Show.S02", "G.Top"}},
			{[]int{2000, 8010}, []string{"C.Movie", "D.Other"}},
			{[]int{5030, 2040}, []string{"B.Show.S01E03", "C.Movie"}},
			{[]int{6000}, []string{"H.Next"}},
			{[]int{7000}, []string{}},
			{[]int{2045}, []string{}},
		} {
			require.Equal(t, c.want, names(t, s, release.Search{Categories: c.cats}), "%v", c.cats)
		}
		for _, c := range []struct {
			ep   release.Episode
			want []string
		}{
			{release.Episode{Season: 1}, []string{"A.Show.S01E02", "B.Show.S01E03"}},
			{release.Episode{Season: 1, Episode: 2}, []string{"A.Show.S01E02"}},
			{release.Episode{Season: 2}, []string{"F.Show.S02"}},
			{release.Episode{Season: 2026, Episode: 1129}, []string{"E.Daily.Show.2026.11.29"}},
			{release.Episode{Season: 3}, []string{}},
		} {
			require.Equal(t, c.want, names(t, s, release.Search{Episode: &c.ep}), "%+v", c.ep)
		}
		require.Equal(t, []string{"A.Show.S01E02", "B.Show.S01E03"},
			names(t, s, release.Search{Words: []string{"show"}, Categories: []int{5000}, Episode: &release.Episode{Season: 1}}))

		// What was written reads back.
		f, err := s.SearchReleases(t.Context(), release.Search{Words: []string{"daily"}})
		require.NoError(t, err)
		require.Equal(t, 5040, f.Releases[0].Category)
		require.Equal(t, &release.Episode{Season: 2026, Episode: 1129, Daily: true}, f.Releases[0].Episode)
		r, err := s.ReleaseByID(t.Context(), f.Releases[0].ID)
		require.NoError(t, err)
		require.Equal(t, f.Releases[0].Episode, r.Episode)
		f, err = s.SearchReleases(t.Context(), release.Search{Words: []string{"movie"}})
		require.NoError(t, err)
		require.Nil(t, f.Releases[0].Episode)
	})
}

// TestIndexOld stores releases as they were before migration 0008 (no
// words, no category): the next Open classifies and indexes every one,
// over several chunks, and an Open after that indexes none twice.
func TestIndexOld(t *testing.T) {
	t.Parallel()
	openEach(t, func(t *testing.T, url string, s *Store) {
		rows := make([]row, 2*indexChunk+7)
		for i := range rows {
			rows[i] = row{name: fmt.Sprintf("Old.Release.%04d.x264", i)}
		}
		insertRows(t, s, rows, false)
		require.Empty(t, names(t, s, release.Search{Words: []string{"old"}}), "not indexed yet")
		s.Close()

		for range 2 {
			s, err := Open(t.Context(), url, Config{})
			require.NoError(t, err)
			f, err := s.SearchReleases(t.Context(), release.Search{Words: []string{"old", "x264"}, Limit: release.MaxSearchLimit})
			require.NoError(t, err)
			require.Equal(t, len(rows), f.Total)
			for _, r := range f.Releases {
				require.Equal(t, release.Categorize(r.Name, r.Groups), r.Category)
			}
			require.Equal(t, []string{"Old.Release.0013.x264"}, names(t, s, release.Search{Words: []string{"0013"}}))
			var unindexed int
			require.NoError(t, s.db.Get(&unindexed, "SELECT COUNT(*) FROM releases WHERE search_words IS NULL"))
			require.Zero(t, unindexed)
			if s.d.name == "sqlite" {
				var entries int
				require.NoError(t, s.db.Get(&entries, "SELECT COUNT(*) FROM release_search"))
				require.Equal(t, len(rows), entries, "one index entry per release")
			}
			s.Close()
		}
	})
}

// TestSearchWordsAsLexemes checks that on PostgreSQL the index's
// expression makes of a name's searchText exactly its words, and tsQuery
// of each word a query of that one lexeme, whatever the database's locale
// holds a letter: so the index and the query agree with SearchWords. The
// Kawi script (Unicode 14) is letters to Go and not to glibc's C.UTF-8:
// its parser drops them.
func TestSearchWordsAsLexemes(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), pgtest.URL(t), Config{})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	for _, name := range []string{
		"Some.Show.S01E02.720p.HDTV.x264-GRP", "Café.Crème.2024", "x264", "1080p", "S01E02", "2026.11.29",
		"Ελληνικά.Νέα", "Straße.ÄÖÜ", "日本語.テスト", "1e5.0x1f.v1.3.14", "007.0001.a1b2c3", "DTS-HD.MA.5.1",
		"Tags.<b>&amp;", "Bad\xff\xfeUTF8", "İstanbul.ǅ.ß", "HEVC.10bit.H.265", "Newer.𑼄𑼅.Kawi", "𑼄𑼅x",
	} {
		words := release.SearchWords(name)
		var lexemes []string
		require.NoError(t, s.db.Select(&lexemes, "SELECT unnest(tsvector_to_array(array_to_tsvector(string_to_array($1, ' '))))",
			searchText(name)))
		want := slices.Clone(words)
		slices.Sort(want)
		slices.Sort(lexemes)
		require.Equal(t, want, lexemes, "%q", name)
		for _, w := range words {
			var ok bool
			require.NoError(t, s.db.Get(&ok, "SELECT array_to_tsvector(ARRAY[$1]) @@ CAST($2 AS tsquery) AND NOT array_to_tsvector(ARRAY['x' || $1]) @@ CAST($2 AS tsquery)",
				w, tsQuery([]string{w})))
			require.True(t, ok, "%q of %q", w, name)
		}
	}
	// Quotes and backslashes (SearchWords gives none) stay in their
	// lexemes.
	var ok bool
	odd := []string{`it's`, `back\slash`, `'`, `\`}
	require.NoError(t, s.db.Get(&ok, "SELECT array_to_tsvector($1::text[]) @@ CAST($2 AS tsquery)", odd, tsQuery(odd)))
	require.True(t, ok)
	require.NoError(t, s.db.Get(&ok, "SELECT array_to_tsvector($1::text[]) @@ CAST($2 AS tsquery)", odd[:3], tsQuery(odd)))
	require.False(t, ok)
}

// TestSearchEntryOnce changes a release with a later page: it keeps one
// index entry (FTS5 counts them on SQLite; a search finds it once on
// both), and a name that changes changes its entry.
func TestSearchEntryOnce(t *testing.T) {
	t.Parallel()
	openEach(t, func(t *testing.T, _ string, s *Store) {
		day := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
		file := func(key, subject string, n int) release.File {
			return release.File{Key: key, Subject: subject, Poster: "p", Date: day, Total: 2,
				Parts: []usenet.Part{{N: n, MessageID: fmt.Sprintf("<%s.%d>", key, n), Bytes: 10}}}
		}
		put := func(after, next string, files ...release.File) {
			t.Helper()
			_, err := s.PutReleases(t.Context(), release.Update{Consumer: "c", After: after, Next: next, Items: len(files),
				Window: time.Hour, Files: files})
			require.NoError(t, err)
		}
		put("", "0.1", file("a", `[1/2] - "Entry.Once.part1.rar" yEnc`, 1))
		put("0.1", "0.2", file("b", `[2/2] - "Entry.Once.part2.rar" yEnc`, 1), file("a", `[1/2] - "Entry.Once.part1.rar" yEnc`, 2))
		put("0.2", "0.3", file("b", `[2/2] - "Entry.Once.part2.rar" yEnc`, 2))
		f, err := s.SearchReleases(t.Context(), release.Search{Words: []string{"entry", "once"}, MinCompletion: 1})
		require.NoError(t, err)
		require.Len(t, f.Releases, 1)
		require.Equal(t, 1, f.Total)
		r := f.Releases[0]
		require.Equal(t, 2, r.FilesSeen)
		require.True(t, r.Complete)
		entries := func(match string) int {
			t.Helper()
			var n int
			require.NoError(t, s.db.Get(&n, "SELECT COUNT(*) FROM release_search WHERE release_search MATCH ?", match))
			return n
		}
		if s.d.name == "sqlite" {
			var n int
			require.NoError(t, s.db.Get(&n, "SELECT COUNT(*) FROM release_search"))
			require.Equal(t, 1, n, "one entry for the release changed twice")
			require.Equal(t, 1, entries(`"entry" "once"`))
		}

		// A name that changes (none does today) moves its entry.
		_, err = s.db.Exec(s.q("UPDATE releases SET name = ?, search_words = ? WHERE id = ?"), "Renamed.Thing", searchText("Renamed.Thing"), r.ID)
		require.NoError(t, err)
		require.Empty(t, names(t, s, release.Search{Words: []string{"entry"}}))
		require.Equal(t, []string{"Renamed.Thing"}, names(t, s, release.Search{Words: []string{"renamed", "thing"}}))
		if s.d.name == "sqlite" {
			require.Equal(t, 0, entries(`"entry"`))
			require.Equal(t, 1, entries(`"renamed"`))
		}
	})
}

// TestSearchPlans runs searches on SQLite with both plans (the word or
// category matches first, and the releases newest first when they match
// many): they find the same pages and totals.
func TestSearchPlans(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), "sqlite://"+t.TempDir()+"/plans.db", Config{})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	var rows []row
	for i := range 60 {
		rows = append(rows, row{name: fmt.Sprintf("Plan.%d.Show.S01E%02d.%s", i%7, i%5, []string{"720p", "1080p"}[i%2]),
			category: 5030 + 10*(i%3)})
	}
	insertRows(t, s, rows, true)
	for _, q := range []release.Search{
		{Words: []string{"show"}},
		{Words: []string{"show", "1080p"}, Limit: 7, Offset: 3},
		{Words: []string{"plan", "3"}, Categories: []int{5040}},
		{Words: []string{"s01e04", "720p"}, Limit: 2},
		{Words: []string{"nothing"}},
		{Words: []string{"show"}, Offset: 59, Limit: 5},
		{Categories: []int{5000}},
		{Categories: []int{5000}, Offset: 7, Limit: 5},
		{Categories: []int{5040, 5030}, Episode: &release.Episode{Season: 1, Episode: 3}},
		{Categories: []int{7000}},
	} {
		first, err := s.search(t.Context(), q, 1<<30, 1<<30)
		require.NoError(t, err)
		newest, err := s.search(t.Context(), q, 1, 1)
		require.NoError(t, err)
		require.Equal(t, first, newest, "%+v", q)
	}
	f, err := s.search(t.Context(), release.Search{Words: []string{"show"}, Limit: 10}, 1, 1)
	require.NoError(t, err)
	require.Equal(t, 60, f.Total)
	require.Len(t, f.Releases, 10)
}

// TestSearchTotalCap matches more releases than release.MaxSearchTotal:
// Total says MaxSearchTotal, and the last pages are still read.
func TestSearchTotalCap(t *testing.T) {
	t.Parallel()
	openEach(t, func(t *testing.T, _ string, s *Store) {
		rows := make([]row, release.MaxSearchTotal+50)
		// One statement writes them all (a row at a time is slow under
		// the race detector on SQLite).
		_, err := s.db.ExecContext(t.Context(), s.q(`WITH RECURSIVE n (i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
			INSERT INTO releases (set_key, name, poster, group_names, posted_us, last_us, files_seen, files_complete,
			files_expected, parts_seen, parts_expected, bytes, complete, updated_us, category, search_words)
			SELECT 'k' || i, 'Many.' || i, 'p', '["g"]', CAST(i AS BIGINT) * 1000000, CAST(i AS BIGINT) * 1000000, 1, 1, 0, 1, 1, 100, ?, 0, 8010, 'many ' || i FROM n`),
			len(rows)-1, true)
		require.NoError(t, err)
		for _, q := range []release.Search{
			{Words: []string{"many"}},
			{},
			{Words: []string{"many"}, Offset: release.MaxSearchOffset, Limit: 100},
		} {
			f, err := s.SearchReleases(t.Context(), q)
			require.NoError(t, err)
			require.Equal(t, release.MaxSearchTotal, f.Total, "%+v", q)
			if q.Offset == 0 {
				require.Len(t, f.Releases, release.DefaultSearchLimit)
				require.Equal(t, fmt.Sprintf("Many.%d", len(rows)-1), f.Releases[0].Name, "newest first")
			} else {
				require.Len(t, f.Releases, 50)
				require.Equal(t, "Many.0", f.Releases[49].Name)
			}
		}
	})
}
