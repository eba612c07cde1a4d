package sqlstore_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// BenchmarkSearch runs Newznab searches over 300,000 releases: TV
// (40%, in two subcategories), movies (30%), other and audio; half are
// x264. Each filter that matches nothing must not read every release.
func BenchmarkSearch(b *testing.B) {
	const n = 300_000
	for _, be := range backends {
		b.Run(be.Name, func(b *testing.B) {
			s := open(b, be.URL(b), sqlstore.Config{})
			q := `WITH RECURSIVE n (i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < %d)
			INSERT INTO releases (set_key, name, poster, group_names, posted_us, last_us, files_seen, files_complete,
			files_expected, parts_seen, parts_expected, bytes, complete, updated_us, category, season, episode, search_words)
			SELECT 'k' || i, 'R.' || i, 'p', '["g"]', CAST(i AS BIGINT) * 1000000, CAST(i AS BIGINT) * 1000000, 1, 1, 0, 1, 1,
				1000000 + i, TRUE, 0,
				CASE i %% 10 WHEN 0 THEN 5030 WHEN 1 THEN 5030 WHEN 2 THEN 5040 WHEN 3 THEN 5040 WHEN 4 THEN 2040
					WHEN 5 THEN 2040 WHEN 6 THEN 2040 WHEN 7 THEN 8010 WHEN 8 THEN 8010 ELSE 3010 END,
				CASE WHEN i %% 10 < 4 THEN 1 + i %% 30 END, CASE WHEN i %% 10 < 4 THEN 1 + i %% 20 END,
				'show' || (i %% 5000) || ' ' || CASE WHEN i %% 2 = 0 THEN 'x264' ELSE 'x265' END || ' r' || i FROM n`
			_, err := s.DB().ExecContext(b.Context(), fmt.Sprintf(q, n-1))
			require.NoError(b, err)
			if be.Name == "postgres" {
				_, err = s.DB().ExecContext(b.Context(), "ANALYZE releases")
				require.NoError(b, err)
			}
			ep := func(s, e int) *release.Episode { return &release.Episode{Season: s, Episode: e} }
			for _, c := range []struct {
				name string
				q    release.Search
			}{
				{"newest", release.Search{}},
				{"cat5000", release.Search{Categories: []int{5000}}},
				{"cat5040", release.Search{Categories: []int{5040}}},
				{"cat3010", release.Search{Categories: []int{3010}}},
				{"cat7000none", release.Search{Categories: []int{7000}}},
				{"season9999none", release.Search{Categories: []int{5000}, Episode: ep(9999, 0)}},
				{"season3ep4", release.Search{Categories: []int{5000}, Episode: ep(3, 4)}},
				{"maxsize1none", release.Search{MaxBytes: 1}},
				{"x264", release.Search{Words: []string{"x264"}}},
				{"x264cat1010none", release.Search{Words: []string{"x264"}, Categories: []int{1010}}},
				{"x264cat5000", release.Search{Words: []string{"x264"}, Categories: []int{5000}}},
				{"rare", release.Search{Words: []string{"show42", "x264"}}},
			} {
				b.Run(c.name, func(b *testing.B) {
					for b.Loop() {
						_, err := s.SearchReleases(b.Context(), c.q)
						require.NoError(b, err)
					}
				})
			}
		})
	}
}
