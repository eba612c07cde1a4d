package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/edgeindex/edgeindex/release"
)

var _ release.Searcher = (*Store)(nil)

// SearchReleases implements release.Searcher. The words go to the full
// text index (a GIN index over to_tsvector('simple', search_words) on
// PostgreSQL, the FTS5 table release_search on SQLite); the other filters
// are plain columns. Matches come newest first, and Total counts them
// over a subquery limited to release.MaxSearchTotal rows, so a search
// that matches a million releases costs no more than one that matches
// that many. The page and its Total are read in one read transaction.
//
// PostgreSQL's planner chooses between the word index and the releases
// newest first by its statistics. SQLite's would always start from the
// word matches and sort them all (110 ms for two words in a tenth of a
// million releases); SearchReleases counts the matches of the words
// first (at most sqliteWordsFirst of them), and past that many reads the
// releases newest first, looking each up in the matches (22 ms).
func (s *Store) SearchReleases(ctx context.Context, q release.Search) (release.Found, error) {
	return s.search(ctx, q, sqliteWordsFirst)
}

// search is SearchReleases with SQLite's bound on the matches it reads
// first (tests lower it to try the other plan).
func (s *Store) search(ctx context.Context, q release.Search, wordsFirst int) (release.Found, error) {
	q, err := release.CheckSearch(q)
	if err != nil {
		return release.Found{}, err
	}
	opts := &sql.TxOptions{ReadOnly: true}
	if s.d.name == "postgres" {
		opts.Isolation = sql.LevelRepeatableRead
	}
	tx, err := s.rdb.BeginTxx(ctx, opts)
	if err != nil {
		return release.Found{}, fmt.Errorf("search: %w", err)
	}
	defer tx.Rollback()
	if s.d.name == "postgres" {
		// A search reads a few thousand rows at most: starting parallel
		// workers cost more than they save (19 ms of a 23 ms search).
		if _, err := tx.ExecContext(ctx, "SET LOCAL max_parallel_workers_per_gather = 0"); err != nil {
			return release.Found{}, fmt.Errorf("search: %w", err)
		}
	}
	from, args := s.searchFrom(q, false)
	if s.d.name == "sqlite" && len(q.Words) > 0 {
		var n int
		if err := tx.GetContext(ctx, &n, "SELECT COUNT(*) FROM (SELECT 1 FROM release_search WHERE release_search MATCH ? LIMIT ?)",
			ftsMatch(q.Words), wordsFirst); err != nil {
			return release.Found{}, fmt.Errorf("search: %w", err)
		}
		if n >= wordsFirst {
			from, args = s.searchFrom(q, true)
		}
	}
	var rows []releaseRow
	if err := tx.SelectContext(ctx, &rows, s.bind("SELECT "+releaseCols+from+
		" ORDER BY posted_us DESC, id DESC LIMIT ? OFFSET ?"), append(args, q.Limit, q.Offset)...); err != nil {
		return release.Found{}, fmt.Errorf("search: %w", err)
	}
	found := release.Found{Releases: make([]release.Release, 0, len(rows))}
	for _, row := range rows {
		r, err := row.release()
		if err != nil {
			return release.Found{}, fmt.Errorf("search: %w", err)
		}
		found.Releases = append(found.Releases, r)
	}
	switch {
	case len(rows) > 0 && len(rows) < q.Limit:
		found.Total = q.Offset + len(rows) // the last page: no need to count
	case len(rows) == 0 && q.Offset == 0:
		found.Total = 0
	default:
		from, args := s.searchFrom(q, false)
		if err := tx.GetContext(ctx, &found.Total, s.bind("SELECT COUNT(*) FROM (SELECT 1"+from+
			" LIMIT ?) matches"), append(args, release.MaxSearchTotal)...); err != nil {
			return release.Found{}, fmt.Errorf("search: total: %w", err)
		}
	}
	found.Total = min(found.Total, release.MaxSearchTotal)
	return found, nil
}

// sqliteWordsFirst is how many matches of its words a search on SQLite
// reads and sorts; a search whose words match more reads the releases
// newest first instead. At a million releases, two words that match
// 20,000 take 25 ms either way.
const sqliteWordsFirst = 20_000

// ftsMatch is the FTS5 query of words: each one quoted (a phrase of one
// word, so no word is read as FTS5 syntax), and a row of them matches
// all (AND).
func ftsMatch(words []string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = `"` + strings.ReplaceAll(w, `"`, `""`) + `"`
	}
	return strings.Join(quoted, " ")
}

// searchFrom returns the FROM and WHERE clauses of a checked search, with
// their arguments. On SQLite, newestFirst makes the releases the outer
// loop and the word matches a set each one is looked up in (the + keeps
// SQLite from driving the query from that set); otherwise the matches
// drive it (CROSS JOIN fixes the order).
func (s *Store) searchFrom(q release.Search, newestFirst bool) (string, []any) {
	from := " FROM releases"
	var conds []string
	var args []any
	if len(q.Words) > 0 {
		switch {
		case s.d.name == "postgres":
			// SearchWords gives letters and digits only, which the
			// default parser returns as they are, one lexeme each.
			conds = append(conds, "to_tsvector('simple', search_words) @@ plainto_tsquery('simple', ?)")
			args = append(args, strings.Join(q.Words, " "))
		case newestFirst:
			conds = append(conds, "+id IN (SELECT rowid FROM release_search WHERE release_search MATCH ?)")
			args = append(args, ftsMatch(q.Words))
		default:
			from = " FROM release_search CROSS JOIN releases ON releases.id = release_search.rowid"
			conds = append(conds, "release_search MATCH ?")
			args = append(args, ftsMatch(q.Words))
		}
	}
	if len(q.Categories) > 0 {
		var or []string
		seen := map[int]bool{}
		for _, c := range q.Categories {
			if seen[c] {
				continue
			}
			seen[c] = true
			if c%1000 == 0 {
				or = append(or, "category BETWEEN ? AND ?")
				args = append(args, c, c+999)
			} else {
				or = append(or, "category = ?")
				args = append(args, c)
			}
		}
		conds = append(conds, "("+strings.Join(or, " OR ")+")")
	}
	if q.Episode != nil {
		// Daily or not, a season and an episode are numbers: a daily
		// show's year and month*100+day match as they are.
		conds = append(conds, "season = ?")
		args = append(args, q.Episode.Season)
		if q.Episode.Episode != 0 {
			conds = append(conds, "episode = ?")
			args = append(args, q.Episode.Episode)
		}
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
	if q.MinCompletion >= 100 {
		conds = append(conds, "complete = ?")
		args = append(args, true)
	} else {
		conds = append(conds, "parts_seen > 0 AND parts_seen * 100 >= parts_expected * ?")
		args = append(args, q.MinCompletion)
	}
	return from + " WHERE " + strings.Join(conds, " AND "), args
}

// indexChunk bounds the releases indexOld classifies in one transaction.
const indexChunk = 500

// indexOld gives the releases stored before search existed (migration
// 0008) their category, episode and search words, in transactions of
// indexChunk releases. Open runs it; once every release has its words it
// reads one empty index (releases_unindexed) and returns. Processes that
// run it together write the same values, and each row once: the update
// only takes a row that has no words yet, and on PostgreSQL each skips
// the rows another has locked, so they share the work.
func (s *Store) indexOld(ctx context.Context) error {
	for {
		n := 0
		err := s.tx(ctx, func(tx *sqlx.Tx) error {
			var rows []struct {
				ID     int64  `db:"id"`
				Name   string `db:"name"`
				Groups string `db:"group_names"`
			}
			if err := tx.SelectContext(ctx, &rows, s.q("SELECT id, name, group_names FROM releases WHERE search_words IS NULL ORDER BY id LIMIT ? {skiplocked}"),
				indexChunk); err != nil {
				return err
			}
			n = len(rows)
			for _, row := range rows {
				r := release.Release{ID: row.ID, Name: row.Name}
				if err := json.Unmarshal([]byte(row.Groups), &r.Groups); err != nil {
					return fmt.Errorf("release %d: groups: %w", row.ID, err)
				}
				cat, season, episode, daily := classify(r)
				if _, err := tx.ExecContext(ctx, s.q(`UPDATE releases SET category = ?, season = ?, episode = ?, episode_daily = ?,
					search_words = ? WHERE id = ? AND search_words IS NULL`),
					cat, season, episode, daily, searchText(r.Name), r.ID); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("sqlstore: index releases: %w", err)
		}
		if n < indexChunk {
			return nil
		}
	}
}
