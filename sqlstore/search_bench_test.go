package sqlstore_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// searchReleases is how many releases BenchmarkSearch searches.
const searchReleases = 1_000_000

// BenchmarkSearch runs Newznab searches over a million releases: TV
// (40%, in two subcategories), movies (30%), other and audio; half are
// x264; sizes spread from 1 MB to 1 GB whatever their age. Each case
// runs twice: as SearchReleases answers it (a page of 100 and its total)
// and as the raw query, the obvious SQL of the same filters for the
// page alone, planned by the database as it likes. Each reports its 99th
// percentile (p99-ms) beside the mean.
func BenchmarkSearch(b *testing.B) {
	for _, be := range backends {
		b.Run(be.Name, func(b *testing.B) {
			s := open(b, be.URL(b), sqlstore.Config{})
			q := `WITH RECURSIVE n (i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < %d)
			INSERT INTO releases (set_key, name, poster, group_names, posted_us, last_us, files_seen, files_complete,
			files_expected, parts_seen, parts_expected, bytes, complete, updated_us, category, season, episode, search_words)
			SELECT 'k' || i, 'R.' || i, 'p', '["g"]', CAST(i AS BIGINT) * 1000000, CAST(i AS BIGINT) * 1000000, 1, 1, 0, 1, 1,
				1000000 + (CAST(i AS BIGINT) * 7919 %% 1000000) * 1000, TRUE, 0,
				CASE i %% 10 WHEN 0 THEN 5030 WHEN 1 THEN 5030 WHEN 2 THEN 5040 WHEN 3 THEN 5040 WHEN 4 THEN 2040
					WHEN 5 THEN 2040 WHEN 6 THEN 2040 WHEN 7 THEN 8010 WHEN 8 THEN 8010 ELSE 3010 END,
				CASE WHEN i %% 10 < 4 THEN 1 + i %% 30 END, CASE WHEN i %% 10 < 4 THEN 1 + i %% 20 END,
				'show' || (i %% 5000) || ' ' || CASE WHEN i %% 2 = 0 THEN 'x264' ELSE 'x265' END || ' r' || i FROM n`
			_, err := s.DB().ExecContext(b.Context(), fmt.Sprintf(q, searchReleases-1))
			require.NoError(b, err)
			if be.Name == "postgres" {
				_, err = s.DB().ExecContext(b.Context(), "ANALYZE releases")
				require.NoError(b, err)
			}
			ep := func(s, e int) *release.Episode { return &release.Episode{Season: s, Episode: e} }
			week := time.UnixMicro(int64(searchReleases) * 1_000_000).Add(-7 * 24 * time.Hour) // the newest 60%
			for _, c := range []struct {
				name string
				q    release.Search
			}{
				{"newest", release.Search{}},
				{"offset1000", release.Search{Offset: 1000}},
				{"cat5000", release.Search{Categories: []int{5000}}},
				{"cat5040", release.Search{Categories: []int{5040}}},
				{"cat3010", release.Search{Categories: []int{3010}}},
				{"cat7000none", release.Search{Categories: []int{7000}}},
				{"season9999none", release.Search{Categories: []int{5000}, Episode: ep(9999, 0)}},
				{"season3ep4", release.Search{Categories: []int{5000}, Episode: ep(3, 4)}},
				{"minsize1", release.Search{MinBytes: 1}},
				{"maxsize1none", release.Search{MaxBytes: 1}},
				{"maxsize1.1MB", release.Search{MaxBytes: 1_100_000}},
				{"minsize999MB", release.Search{MinBytes: 999_900_000}},
				{"minsize500MBmaxage", release.Search{MinBytes: 500_000_000, PostedAfter: week}},
				{"maxage", release.Search{PostedAfter: week}},
				{"cat5000maxsize2MB", release.Search{Categories: []int{5000}, MaxBytes: 2_000_000}},
				{"x264", release.Search{Words: []string{"x264"}}},
				{"x264minsize1", release.Search{Words: []string{"x264"}, MinBytes: 1}},
				{"x264maxsize2MB", release.Search{Words: []string{"x264"}, MaxBytes: 2_000_000}},
				{"x264cat1010none", release.Search{Words: []string{"x264"}, Categories: []int{1010}}},
				{"x264cat5000", release.Search{Words: []string{"x264"}, Categories: []int{5000}}},
				{"x264cat5000minsizemaxageoffset", release.Search{Words: []string{"x264"}, Categories: []int{5000},
					MinBytes: 100_000_000, PostedAfter: week, Offset: 200}},
				{"rare", release.Search{Words: []string{"show42", "x264"}}},
				{"raremaxsize2MB", release.Search{Words: []string{"show42", "x264"}, MaxBytes: 2_000_000}},
			} {
				c.q.Limit, c.q.MinCompletion = 100, 100
				b.Run(c.name, func(b *testing.B) {
					timed(b, func() {
						_, err := s.SearchReleases(b.Context(), c.q)
						require.NoError(b, err)
					})
				})
				b.Run(c.name+"/raw", func(b *testing.B) {
					query, args := rawSearch(be.Name, c.q)
					timed(b, func() {
						var ids []int64
						require.NoError(b, s.DB().SelectContext(b.Context(), &ids, s.DB().Rebind(query), args...))
					})
				})
			}
		})
	}
}

// timed runs fn in a benchmark loop and reports its 99th percentile.
func timed(b *testing.B, fn func()) {
	var took []time.Duration
	for b.Loop() {
		start := time.Now()
		fn()
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)*99/100])/float64(time.Millisecond), "p99-ms")
}

// rawSearch is the obvious SQL of q's page: its filters ANDed, newest
// first, no plan chosen and no total counted.
func rawSearch(backend string, q release.Search) (string, []any) {
	var conds []string
	var args []any
	if len(q.Words) > 0 {
		if backend == "postgres" {
			conds = append(conds, "array_to_tsvector(string_to_array(search_words, ' ')) @@ CAST(? AS tsquery)")
			args = append(args, strings.Join(q.Words, " & "))
		} else {
			conds = append(conds, "id IN (SELECT rowid FROM release_search WHERE release_search MATCH ?)")
			args = append(args, strings.Join(q.Words, " "))
		}
	}
	for _, c := range q.Categories {
		if c%1000 == 0 {
			conds = append(conds, "category BETWEEN ? AND ?")
			args = append(args, c, c+999)
		} else {
			conds = append(conds, "category = ?")
			args = append(args, c)
		}
	}
	if q.Episode != nil {
		conds = append(conds, "season = ?", "episode = ?")
		args = append(args, q.Episode.Season, q.Episode.Episode)
	}
	if !q.PostedAfter.IsZero() {
		conds = append(conds, "posted_us > ?")
		args = append(args, q.PostedAfter.UnixMicro())
	}
	if q.MinBytes > 0 {
		conds = append(conds, "bytes >= ?")
		args = append(args, q.MinBytes)
	}
	if q.MaxBytes > 0 {
		conds = append(conds, "bytes <= ?")
		args = append(args, q.MaxBytes)
	}
	conds = append(conds, "complete = ?")
	args = append(args, true)
	return "SELECT id FROM releases WHERE " + strings.Join(conds, " AND ") +
		" ORDER BY posted_us DESC, id DESC LIMIT ? OFFSET ?", append(args, q.Limit, q.Offset)
}
