package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/internal/pgtest"
	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/usenet"
)

// hugeName is a name of about a megabyte: many distinct short words,
// words too long to search for, and a few words to find it by.
func hugeName() string {
	var b strings.Builder
	b.WriteString("Huge.Name.")
	for i := 0; b.Len() < 1<<20; i++ {
		fmt.Fprintf(&b, "w%d.", i)
		if i%1000 == 0 {
			b.WriteString(strings.Repeat("x", release.MaxSearchWord+1) + ".")
		}
	}
	return b.String()
}

// TestSearchTextBounded: the indexed text of any name keeps at most
// maxIndexWords distinct words of at most release.MaxSearchWord bytes,
// and of a short name it is exactly release.SearchWords.
func TestSearchTextBounded(t *testing.T) {
	t.Parallel()
	for _, name := range []string{
		"Some.Show.S01E02.720p.HDTV.x264-GRP", "Café.Crème.2024", "Ελληνικά.Νέα", "İstanbul.ǅ.ß", "Bad\xff\xfeUTF8",
		"Repeat.repeat.REPEAT", "Zero\x00Byte", "Newer.𑼄𑼅.Kawi", "", "...", "U+FFFD\uFFFDsplits",
	} {
		require.Equal(t, strings.Join(release.SearchWords(name), " "), searchText(name), "%q", name)
	}
	words := strings.Fields(searchText(hugeName()))
	require.Len(t, words, maxIndexWords)
	require.Equal(t, []string{"huge", "name", "w0"}, words[:3])
	for _, w := range words {
		require.LessOrEqual(t, len(w), release.MaxSearchWord)
	}
	long := strings.Repeat("y", release.MaxSearchWord)
	require.Equal(t, long+" z", searchText(long+"y."+long+".z"), "a word too long to search for is not indexed")
}

// TestSearchHugeName puts a release of a megabyte's name through
// PutReleases on each backend: it is stored whole and found by its first
// words (PostgreSQL's tsvector of every word would fail).
func TestSearchHugeName(t *testing.T) {
	t.Parallel()
	name := hugeName()
	openEach(t, func(t *testing.T, _ string, s *Store) {
		day := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
		f := release.File{Key: "huge", Subject: "huge", Poster: "p", Date: day, Total: 1,
			Parts: []usenet.Part{{N: 1, MessageID: "<huge.1>", Bytes: 10}}}
		_, err := s.PutReleases(t.Context(), release.Update{Consumer: "c", Next: "0.1", Items: 1, Window: time.Hour,
			Files: []release.File{f}, Sets: []release.Set{{Name: name, Key: "huge"}}})
		require.NoError(t, err)
		found, err := s.SearchReleases(t.Context(), release.Search{Words: []string{"huge", "name", "w7"}, MinCompletion: 1})
		require.NoError(t, err)
		require.Len(t, found.Releases, 1)
		require.Equal(t, name, found.Releases[0].Name, "the name is stored whole")
		found, err = s.SearchReleases(t.Context(), release.Search{Words: []string{"w100000"}, MinCompletion: 1})
		require.NoError(t, err)
		require.True(t, len(found.Releases) == 0, "a word past those indexed is not found")
	})
}

// TestIndexOldHugeName: Open indexes a release of a megabyte's name
// stored before migration 0008.
func TestIndexOldHugeName(t *testing.T) {
	t.Parallel()
	name := hugeName()
	openEach(t, func(t *testing.T, url string, s *Store) {
		insertRows(t, s, []row{{name: name}, {name: "Small.Old"}}, false)
		s.Close()
		s, err := Open(t.Context(), url, Config{})
		require.NoError(t, err)
		defer s.Close()
		f, err := s.SearchReleases(t.Context(), release.Search{Words: []string{"huge", "w3"}})
		require.NoError(t, err)
		require.Len(t, f.Releases, 1)
		require.Equal(t, name, f.Releases[0].Name)
		require.Equal(t, []string{"Small.Old"}, names(t, s, release.Search{Words: []string{"old"}}))
	})
}

// TestSearchTimeout: a PostgreSQL search that takes longer than its
// bound (here it waits for a lock another transaction holds) ends with
// an error that is context.DeadlineExceeded.
func TestSearchTimeout(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), pgtest.URL(t), Config{})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	insertRows(t, s, []row{{name: "Locked.Out"}}, true)
	lock, err := s.db.BeginTxx(t.Context(), nil)
	require.NoError(t, err)
	defer lock.Rollback()
	_, err = lock.Exec("LOCK TABLE releases IN ACCESS EXCLUSIVE MODE")
	require.NoError(t, err)

	s.searchTimeout = 200 * time.Millisecond
	done := make(chan error, 1)
	go func() {
		_, err := s.SearchReleases(t.Context(), release.Search{Words: []string{"locked"}})
		done <- err
	}()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Contains(t, err.Error(), "search")
	case <-time.After(30 * time.Second):
		lock.Rollback()
		t.Fatal("the search outlived its bound")
	}
	require.NoError(t, lock.Rollback())
	require.Equal(t, []string{"Locked.Out"}, names(t, s, release.Search{Words: []string{"locked"}}))
}

// TestSearchCancel: a search whose context ends while it runs stops with
// that context's error on each backend, over a table big enough that the
// search cannot be done before.
func TestSearchCancel(t *testing.T) {
	t.Parallel()
	openEach(t, func(t *testing.T, _ string, s *Store) {
		manyReleases(t, s, 30_000)
		ctx, cancel := context.WithCancel(t.Context())
		var err error
		time.AfterFunc(5*time.Millisecond, cancel)
		// No release is this small: every row is read.
		for range 100 {
			_, err = s.SearchReleases(ctx, release.Search{MaxBytes: 1, Offset: 1})
			if err != nil {
				break
			}
		}
		require.ErrorIs(t, err, context.Canceled)
		require.True(t, errors.Is(err, context.Canceled) && strings.Contains(err.Error(), "search"), "%v", err)
	})
}

// TestSearchFilterPlans: over 20,000 releases, a search without words
// for a rare or absent category, or for a season, reads an index of that
// column rather than every release (EXPLAIN of the page on each backend,
// as SearchReleases would read it).
func TestSearchFilterPlans(t *testing.T) {
	t.Parallel()
	openEach(t, func(t *testing.T, _ string, s *Store) {
		// 40% TV in two subcategories with seasons 1 to 30, 30% movies,
		// 29% other, 1% audio; no 7000.
		_, err := s.db.ExecContext(t.Context(), `WITH RECURSIVE n (i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 19999)
			INSERT INTO releases (set_key, name, poster, group_names, posted_us, last_us, files_seen, files_complete,
			files_expected, parts_seen, parts_expected, bytes, complete, updated_us, category, season, episode, search_words)
			SELECT 'k' || i, 'R.' || i, 'p', '["g"]', CAST(i AS BIGINT), CAST(i AS BIGINT), 1, 1, 0, 1, 1, 100, TRUE, 0,
				CASE WHEN i % 100 = 99 THEN 3010 WHEN i % 10 < 2 THEN 5030 WHEN i % 10 < 4 THEN 5040 WHEN i % 10 < 7 THEN 2040 ELSE 8010 END,
				CASE WHEN i % 10 < 4 THEN 1 + i % 30 END, CASE WHEN i % 10 < 4 THEN 1 + i % 20 END, 'r ' || i FROM n`)
		require.NoError(t, err)
		if s.d.name == "postgres" {
			_, err := s.db.Exec("ANALYZE releases")
			require.NoError(t, err)
		}
		tv := []int{5000}
		for _, c := range []struct {
			q     release.Search
			index string
		}{
			{release.Search{Categories: []int{7000}}, "releases_category"},
			{release.Search{Categories: []int{3000}}, "releases_category"},
			{release.Search{Categories: []int{3010}}, "releases_category"},
			{release.Search{Categories: []int{7010, 3000}}, "releases_category"},
			{release.Search{Categories: tv, Episode: &release.Episode{Season: 9999}}, "releases_episode"},
			{release.Search{Categories: tv, Episode: &release.Episode{Season: 3, Episode: 4}}, "releases_episode"},
			{release.Search{Episode: &release.Episode{Season: 9999}}, "releases_episode"},
			{release.Search{Categories: tv}, "releases_posted"}, // many: newest first
		} {
			plan := s.explainSearch(t, c.q)
			require.Contains(t, plan, c.index, "%+v", c.q)
		}
	})
}

// explainSearch returns the plan of q's page as text.
func (s *Store) explainSearch(t *testing.T, q release.Search) string {
	t.Helper()
	q, err := release.CheckSearch(q)
	require.NoError(t, err)
	tx, err := s.rdb.BeginTxx(t.Context(), nil)
	require.NoError(t, err)
	defer tx.Rollback()
	var plan sqlitePlan
	if s.d.name == "sqlite" {
		plan, err = chooseSQLitePlan(t.Context(), tx, q, sqliteWordsFirst, sqliteCategoryFirst)
		require.NoError(t, err)
	}
	from, args := s.searchFrom(q, plan)
	query := s.bind("SELECT " + releaseCols + from + " ORDER BY posted_us DESC, id DESC LIMIT ? OFFSET ?")
	args = append(args, q.Limit, q.Offset)
	var lines []string
	if s.d.name == "postgres" {
		require.NoError(t, tx.Select(&lines, "EXPLAIN "+query, args...))
		return strings.Join(lines, "\n")
	}
	r, err := tx.Query("EXPLAIN QUERY PLAN "+query, args...)
	require.NoError(t, err)
	defer r.Close()
	for r.Next() {
		var id, parent, unused int
		var detail string
		require.NoError(t, r.Scan(&id, &parent, &unused, &detail))
		lines = append(lines, detail)
	}
	require.NoError(t, r.Err())
	return strings.Join(lines, "\n")
}
