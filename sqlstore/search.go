package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jmoiron/sqlx"

	"github.com/edgeindex/edgeindex/release"
)

var _ release.Searcher = (*Store)(nil)

// SearchReleases implements release.Searcher. The words go to the full
// text index (a GIN index over the tsvector of search_words' words on
// PostgreSQL, the FTS5 table release_search on SQLite); the other filters
// are plain columns, the category and the episode indexed. Matches come
// newest first, and Total counts them over a subquery limited to
// release.MaxSearchTotal rows, so a search that matches a million
// releases costs no more than one that matches that many. The page and
// its Total are read in one read transaction. On PostgreSQL each of its
// statements stops at SearchTimeout; on SQLite the search stops when ctx
// ends.
//
// PostgreSQL's planner chooses between the word index and the releases
// newest first by its statistics. SQLite's would always start from the
// word matches and sort them all (110 ms for two words in a tenth of a
// million releases); SearchReleases counts the matches of the words
// first (at most sqliteWordsFirst of them), and past that many reads the
// releases newest first, looking through each one's words (12 ms for a
// word of half of a million releases, page and total). It does the same
// with the categories (sqliteCategoryFirst) and the sizes
// (sqliteSizeFirst).
func (s *Store) SearchReleases(ctx context.Context, q release.Search) (release.Found, error) {
	return s.search(ctx, q, sqliteWordsFirst, sqliteCategoryFirst)
}

// search is SearchReleases with SQLite's bounds on the matches of the
// words and of the categories it reads first (tests lower them to try the
// other plans).
func (s *Store) search(ctx context.Context, q release.Search, wordsFirst, categoryFirst int) (release.Found, error) {
	q, err := release.CheckSearch(q)
	if err != nil {
		return release.Found{}, err
	}
	timeout := s.searchTimeout
	if timeout <= 0 {
		timeout = SearchTimeout
	}
	// SQLite's driver interrupts the statement when ctx ends.
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tx, err := s.fdb.BeginTxx(ctx, s.d.snapshotRead())
	if err != nil {
		return release.Found{}, searchErr(ctx, "", err)
	}
	defer tx.Rollback()
	if s.d.statementTimeouts() {
		// A search reads a few thousand rows at most: starting parallel
		// workers cost more than they save (19 ms of a 23 ms search).
		// One that reads more stops at SearchTimeout, in the server.
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("SET LOCAL max_parallel_workers_per_gather = 0; SET LOCAL statement_timeout = %d",
			timeout.Milliseconds())); err != nil {
			return release.Found{}, searchErr(ctx, "", err)
		}
	}
	plan := sqlitePlan{}
	if s.d.hintsPlans() {
		if plan, err = chooseSQLitePlan(ctx, tx, q, wordsFirst, categoryFirst); err != nil {
			return release.Found{}, searchErr(ctx, "", err)
		}
	}
	from, args := s.searchFrom(q, plan)
	var rows []releaseRow
	if err := tx.SelectContext(ctx, &rows, s.bind("SELECT "+releaseCols+from+
		" ORDER BY posted_us DESC, id DESC LIMIT ? OFFSET ?"), append(args, q.Limit, q.Offset)...); err != nil {
		return release.Found{}, searchErr(ctx, "", err)
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
		// The total is counted as the page was read, but that a
		// category's index may drive it: no order to keep.
		counted := plan
		counted.categoryUnindexed = false
		from, args := s.searchFrom(q, counted)
		order := ""
		if !s.d.hintsPlans() {
			// PostgreSQL: in the page's order, the planner reads an
			// index and stops at the bound, rather than every match.
			order = " ORDER BY posted_us DESC, id DESC"
		}
		if err := tx.GetContext(ctx, &found.Total, s.bind("SELECT COUNT(*) FROM (SELECT 1"+from+order+
			" LIMIT ?) matches"), append(args, release.MaxSearchTotal)...); err != nil {
			return release.Found{}, searchErr(ctx, "total: ", err)
		}
	}
	found.Total = min(found.Total, release.MaxSearchTotal)
	return found, nil
}

// SearchTimeout bounds a search on each backend: each statement on
// PostgreSQL (statement_timeout, and the context), the whole search on
// SQLite (its context, which the driver's interrupt obeys). A search that
// matches few releases by a filter no index serves (a size, a completion)
// may read every release. A search past it fails with an error that is
// context.DeadlineExceeded.
const SearchTimeout = 5 * time.Second

// searchErr wraps an error of a search: the context's error when the
// context ended (whatever the driver made of it), and
// context.DeadlineExceeded, as well as the error, when PostgreSQL
// cancelled the statement at SearchTimeout.
func searchErr(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("search: %s%w", what, ctx.Err())
	}
	if pe, ok := errors.AsType[*pgconn.PgError](err); ok && pe.Code == "57014" {
		return fmt.Errorf("search: %s%w: %w", what, context.DeadlineExceeded, err)
	}
	return fmt.Errorf("search: %s%w", what, err)
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

// tsQuery is the PostgreSQL tsquery of words: each one a quoted lexeme
// (a quote doubled, a backslash escaped, though SearchWords gives
// neither), all of them ANDed.
func tsQuery(words []string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		w = strings.ReplaceAll(w, `\`, `\\`)
		quoted[i] = "'" + strings.ReplaceAll(w, "'", "''") + "'"
	}
	return strings.Join(quoted, " & ")
}

// sqliteCategoryFirst is how many releases of its categories a search on
// SQLite without words reads through releases_category, and sorts when a
// parent category makes them a range of it; a search whose categories
// hold more reads the releases newest first instead (a parent category of
// 120,000 of 300,000 releases: 150 ms through the index, 4 ms newest
// first). Its total is counted through the index either way.
const sqliteCategoryFirst = 5000

// sqliteSizeFirst is how many releases of its size range a search on
// SQLite reads through releases_bytes and sorts; past that many it reads
// the releases newest first, filtering the sizes on the way.
const sqliteSizeFirst = 5000

// chooseSQLitePlan counts, in tx, the matches of q's words (in the FTS5
// table) and of its categories (in releases_category), up to wordsFirst
// and categoryFirst, to choose how the page is read.
func chooseSQLitePlan(ctx context.Context, tx *sqlx.Tx, q release.Search, wordsFirst, categoryFirst int) (sqlitePlan, error) {
	var plan sqlitePlan
	if len(q.Words) > 0 {
		var n int
		if err := tx.GetContext(ctx, &n, "SELECT COUNT(*) FROM (SELECT 1 FROM release_search WHERE release_search MATCH ? LIMIT ?)",
			ftsMatch(q.Words), wordsFirst); err != nil {
			return plan, err
		}
		plan.newestFirst = n >= wordsFirst
	}
	if len(q.Categories) > 0 {
		cats, err := presentCategories(ctx, tx, q.Categories)
		if err != nil {
			return plan, err
		}
		plan.categories = cats
		cond, args := categoryCond(cats, "")
		var n int
		if err := tx.GetContext(ctx, &n, "SELECT COUNT(*) FROM (SELECT 1 FROM releases WHERE "+cond+" LIMIT ?)",
			append(args, categoryFirst)...); err != nil {
			return plan, err
		}
		plan.categoryUnindexed = n >= categoryFirst
	}
	if (q.MinBytes > 0 || q.MaxBytes > 0) && (len(q.Words) == 0 || plan.newestFirst) {
		cond, args := sizeCond(q, "")
		var n int
		if err := tx.GetContext(ctx, &n, "SELECT COUNT(*) FROM (SELECT 1 FROM releases WHERE "+cond+" LIMIT ?)",
			append(args, sqliteSizeFirst)...); err != nil {
			return plan, err
		}
		plan.sizeFew = n < sqliteSizeFirst
	}
	return plan, nil
}

// sqlitePlan is how a search on SQLite reads the releases; the zero
// sqlitePlan lets the indexes of its words and categories drive it.
type sqlitePlan struct {
	// newestFirst makes the releases the outer loop, each one's words
	// looked through for the search's; otherwise the matches of the word
	// index drive it (CROSS JOIN fixes the order).
	newestFirst bool
	// categoryUnindexed keeps SQLite from reading a category's releases
	// through releases_category (+category): a parent category is a
	// range of that index, which SQLite would read whole and sort.
	categoryUnindexed bool
	// sizeFew reads the releases through releases_bytes (INDEXED BY):
	// the size range holds fewer than sqliteSizeFirst. Otherwise the
	// sizes are filtered on the way (+bytes), never a range of that
	// index SQLite would read whole and sort.
	sizeFew bool
	// categories are the search's categories, each parent replaced by
	// the subcategories the releases hold (nil: as asked). A list of
	// values, unlike a parent's range, lets releases_category seek the
	// date in each (a total of 10,000 TV releases of the last week:
	// 19 ms rather than 33).
	categories []int
}

// presentCategories returns cats with each parent category (a multiple
// of 1000) replaced by the categories of its range that releases hold,
// found by one seek of releases_category each; -1 when none is held.
func presentCategories(ctx context.Context, tx *sqlx.Tx, cats []int) ([]int, error) {
	var out []int
	for _, c := range cats {
		if c%1000 != 0 {
			out = append(out, c)
			continue
		}
		for next := c - 1; ; {
			var m sql.NullInt64
			if err := tx.GetContext(ctx, &m, "SELECT MIN(category) FROM releases WHERE category > ? AND category <= ?", next, c+999); err != nil {
				return nil, err
			}
			if !m.Valid {
				break
			}
			next = int(m.Int64)
			out = append(out, next)
		}
	}
	if len(out) == 0 {
		out = append(out, -1) // no release is in any of them
	}
	return out, nil
}

// categoryCond is the condition of a search's categories on the column
// prefix+"category" ("+category" on SQLite uses no index), with its
// arguments.
func categoryCond(cats []int, prefix string) (string, []any) {
	var or []string
	var args []any
	seen := map[int]bool{}
	for _, c := range cats {
		if seen[c] {
			continue
		}
		seen[c] = true
		if c%1000 == 0 {
			or = append(or, prefix+"category BETWEEN ? AND ?")
			args = append(args, c, c+999)
		} else {
			or = append(or, prefix+"category = ?")
			args = append(args, c)
		}
	}
	return "(" + strings.Join(or, " OR ") + ")", args
}

// searchFrom returns the FROM and WHERE clauses of a checked search, with
// their arguments, for plan (on SQLite; PostgreSQL's planner chooses).
func (s *Store) searchFrom(q release.Search, plan sqlitePlan) (string, []any) {
	from := " FROM releases"
	var conds []string
	var args []any
	if len(q.Words) > 0 {
		var cond string
		from, cond, args = s.wordsFrom(q.Words, plan.newestFirst)
		conds = append(conds, cond)
	}
	if len(q.Categories) > 0 {
		prefix := ""
		if s.d.hintsPlans() && plan.categoryUnindexed {
			prefix = "+"
		}
		cats := q.Categories
		if plan.categories != nil {
			cats = plan.categories
		}
		cond, cargs := categoryCond(cats, prefix)
		conds = append(conds, cond)
		args = append(args, cargs...)
	}
	sizePrefix := ""
	switch {
	case plan.sizeFew:
		// Only without words, or with them newest first: from is the
		// releases alone.
		from = " FROM releases INDEXED BY releases_bytes"
	case s.d.hintsPlans():
		sizePrefix = "+"
	}
	conds, args = filterConds(q, conds, args, sizePrefix)
	return from + " WHERE " + strings.Join(conds, " AND "), args
}

// sizeCond is the condition of a search's sizes on the column
// prefix+"bytes", with its arguments; "" when it has none.
func sizeCond(q release.Search, prefix string) (string, []any) {
	var conds []string
	var args []any
	if q.MinBytes > 0 {
		conds = append(conds, prefix+"bytes >= ?")
		args = append(args, q.MinBytes)
	}
	if q.MaxBytes > 0 {
		conds = append(conds, prefix+"bytes <= ?")
		args = append(args, q.MaxBytes)
	}
	return strings.Join(conds, " AND "), args
}

// wordsFrom returns the FROM clause and the condition of a search's
// words, with its arguments: the index of the words drives the query on
// SQLite unless newestFirst.
func (s *Store) wordsFrom(words []string, newestFirst bool) (from, cond string, args []any) {
	switch {
	case !s.d.fts5():
		// The expression of the index releases_search, and the
		// words as lexemes: no parser splits or drops them.
		return " FROM releases", "array_to_tsvector(string_to_array(search_words, ' ')) @@ CAST(? AS tsquery)", []any{tsQuery(words)}
	case newestFirst:
		// Many releases match: they are found reading the newest, each
		// one's stored words looked through for each word whole, rather
		// than every match of the index read into a set first (228 ms
		// for a word of half of a million releases).
		conds := make([]string, len(words))
		args := make([]any, len(words))
		for i, w := range words {
			conds[i] = "instr(' ' || search_words || ' ', ?) > 0"
			args[i] = " " + w + " "
		}
		return " FROM releases", strings.Join(conds, " AND "), args
	default:
		return " FROM release_search CROSS JOIN releases ON releases.id = release_search.rowid", "release_search MATCH ?", []any{ftsMatch(words)}
	}
}

// filterConds appends to conds and args the conditions of a search's
// episode, date, sizes (on sizePrefix+"bytes") and completion.
func filterConds(q release.Search, conds []string, args []any, sizePrefix string) ([]string, []any) {
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
	if cond, sargs := sizeCond(q, sizePrefix); cond != "" {
		conds = append(conds, cond)
		args = append(args, sargs...)
	}
	if q.NoPassword {
		conds = append(conds, "password = 0")
	}
	if q.MinCompletion >= 100 {
		conds = append(conds, "complete = ?")
		args = append(args, true)
	} else {
		conds = append(conds, "parts_seen > 0 AND parts_seen * 100 >= parts_expected * ?")
		args = append(args, q.MinCompletion)
	}
	return conds, args
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
