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
func (s *Store) SearchReleases(ctx context.Context, q release.Search) (release.Found, error) {
	q, err := release.CheckSearch(q)
	if err != nil {
		return release.Found{}, err
	}
	where, args := s.searchWhere(q)
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
	var rows []releaseRow
	if err := tx.SelectContext(ctx, &rows, s.bind("SELECT "+releaseCols+" FROM releases"+where+
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
		if err := tx.GetContext(ctx, &found.Total, s.bind("SELECT COUNT(*) FROM (SELECT 1 FROM releases"+where+
			" LIMIT ?) matches"), append(args, release.MaxSearchTotal)...); err != nil {
			return release.Found{}, fmt.Errorf("search: total: %w", err)
		}
	}
	found.Total = min(found.Total, release.MaxSearchTotal)
	return found, nil
}

// searchWhere returns the WHERE clause of a checked search, with its
// arguments.
func (s *Store) searchWhere(q release.Search) (string, []any) {
	var conds []string
	var args []any
	if len(q.Words) > 0 {
		if s.d.name == "postgres" {
			// SearchWords gives letters and digits only, which the
			// default parser returns as they are, one lexeme each.
			conds = append(conds, "to_tsvector('simple', search_words) @@ plainto_tsquery('simple', ?)")
			args = append(args, strings.Join(q.Words, " "))
		} else {
			// Each word quoted: a phrase of one word; a row of them
			// matches all (AND).
			quoted := make([]string, len(q.Words))
			for i, w := range q.Words {
				quoted[i] = `"` + strings.ReplaceAll(w, `"`, `""`) + `"`
			}
			conds = append(conds, "id IN (SELECT rowid FROM release_search WHERE release_search MATCH ?)")
			args = append(args, strings.Join(quoted, " "))
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
	return " WHERE " + strings.Join(conds, " AND "), args
}

// indexChunk bounds the releases indexOld classifies in one transaction.
const indexChunk = 500

// indexOld gives the releases stored before search existed (migration
// 0008) their category, episode and search words, in transactions of
// indexChunk releases. Open runs it; once every release has its words it
// reads one empty index (releases_unindexed) and returns. Processes that
// run it together write the same values, and each row once: the update
// only takes a row that has no words yet.
func (s *Store) indexOld(ctx context.Context) error {
	for {
		n := 0
		err := s.tx(ctx, func(tx *sqlx.Tx) error {
			var rows []struct {
				ID     int64  `db:"id"`
				Name   string `db:"name"`
				Groups string `db:"group_names"`
			}
			if err := tx.SelectContext(ctx, &rows, s.q("SELECT id, name, group_names FROM releases WHERE search_words IS NULL ORDER BY id LIMIT ?"),
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
