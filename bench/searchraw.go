package main

import (
	"context"
	"database/sql"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// rawSearcher is the search written by hand from the schema: the full
// text match, complete releases newest first, 100 of them scanned into Go
// values, and the count up to the API's limit when the page is full.
type rawSearcher interface {
	search(ctx context.Context, q string) error
	// find returns the total and the first id of q.
	find(ctx context.Context, q string) (int, int64, error)
	count(ctx context.Context) (int64, error)
	analyze(ctx context.Context) error
	close()
}

// rawRow holds one scanned row.
type rawRow struct {
	id, posted, last, partsSeen, partsExpected, bytes, updated, grabs int64
	setKey, name, poster, groups                                      string
	filesSeen, filesComplete, filesExpected, category                 int
	complete                                                          bool
	season, episode                                                   sql.NullInt64
	daily                                                             sql.NullBool
}

func (r *rawRow) dest() []any {
	return []any{&r.id, &r.setKey, &r.name, &r.poster, &r.groups, &r.posted, &r.last, &r.filesSeen, &r.filesComplete,
		&r.filesExpected, &r.partsSeen, &r.partsExpected, &r.bytes, &r.complete, &r.updated, &r.category,
		&r.season, &r.episode, &r.daily, &r.grabs}
}

const rawCols = `r.id, r.set_key, r.name, r.poster, r.group_names, r.posted_us, r.last_us, r.files_seen, r.files_complete,
	r.files_expected, r.parts_seen, r.parts_expected, r.bytes, r.complete, r.updated_us, r.category,
	r.season, r.episode, r.episode_daily, r.grabs`

const rawLimit = 100

// rawPG searches PostgreSQL with pgx (which prepares and caches each
// statement).
type rawPG struct{ pool *pgxpool.Pool }

func openRawPG(ctx context.Context, dbURL string, conc int) (*rawPG, error) {
	pool, err := openPool(ctx, dbURL, conc+2)
	if err != nil {
		return nil, err
	}
	return &rawPG{pool: pool}, nil
}

const (
	pgPage = `SELECT ` + rawCols + ` FROM releases r
		WHERE array_to_tsvector(string_to_array(r.search_words, ' ')) @@ $1::tsquery AND r.complete
		ORDER BY r.posted_us DESC, r.id DESC LIMIT 100`
	pgCount = `SELECT count(*) FROM (SELECT 1 FROM releases r
		WHERE array_to_tsvector(string_to_array(r.search_words, ' ')) @@ $1::tsquery AND r.complete LIMIT 10000) m`
)

// tsquery is q's words as a tsquery of quoted lexemes, every one required:
// the index holds the words as they are, past PostgreSQL's parser. The
// bench's words are letters and digits only, so they need no escaping.
func tsquery(q string) string {
	return "'" + strings.Join(strings.Fields(q), "' & '") + "'"
}

func (p *rawPG) find(ctx context.Context, q string) (int, int64, error) {
	q = tsquery(q)
	rows, err := p.pool.Query(ctx, pgPage, q)
	if err != nil {
		return 0, 0, err
	}
	defer rows.Close()
	return rawFound(rows, func(total *int) error { return p.pool.QueryRow(ctx, pgCount, q).Scan(total) })
}

func (p *rawPG) search(ctx context.Context, q string) error {
	_, _, err := p.find(ctx, q)
	return err
}

func (p *rawPG) count(ctx context.Context) (int64, error) {
	var n int64
	err := p.pool.QueryRow(ctx, "SELECT count(*) FROM releases").Scan(&n)
	return n, err
}

func (p *rawPG) analyze(ctx context.Context) error {
	_, err := p.pool.Exec(ctx, "VACUUM ANALYZE releases")
	return err
}

func (p *rawPG) close() { p.pool.Close() }

// rawSQLite searches SQLite with database/sql (the driver sqlstore
// registers), through statements prepared once.
type rawSQLite struct {
	db          *sql.DB
	page, total *sql.Stmt
}

func openRawSQLite(path string, conc int) (*rawSQLite, error) {
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?_pragma=busy_timeout(10000)&_pragma=query_only(1)")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(conc)
	db.SetMaxIdleConns(conc)
	r := &rawSQLite{db: db}
	if r.page, err = db.Prepare(`SELECT ` + rawCols + ` FROM release_search s JOIN releases r ON r.id = s.rowid
		WHERE release_search MATCH ? AND r.complete ORDER BY r.posted_us DESC, r.id DESC LIMIT 100`); err != nil {
		db.Close()
		return nil, err
	}
	if r.total, err = db.Prepare(`SELECT count(*) FROM (SELECT 1 FROM release_search s JOIN releases r ON r.id = s.rowid
		WHERE release_search MATCH ? AND r.complete LIMIT 10000)`); err != nil {
		db.Close()
		return nil, err
	}
	return r, nil
}

func (p *rawSQLite) find(ctx context.Context, q string) (int, int64, error) {
	rows, err := p.page.QueryContext(ctx, q)
	if err != nil {
		return 0, 0, err
	}
	defer rows.Close()
	return rawFound(rows, func(total *int) error { return p.total.QueryRowContext(ctx, q).Scan(total) })
}

// rawRows is what pgx's and database/sql's rows both do.
type rawRows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// rawFound reads a page of rows and, when the page is full, the count
// that countTo stores: the total and the first release's id, as the API
// answers them; 0, 0 for no match. Both drivers close rows once Next
// returns false, so the count never waits on the page's connection.
func rawFound(rows rawRows, countTo func(*int) error) (int, int64, error) {
	var page []rawRow
	for rows.Next() {
		var r rawRow
		if err := rows.Scan(r.dest()...); err != nil {
			return 0, 0, err
		}
		page = append(page, r)
	}
	if err := rows.Err(); err != nil {
		return 0, 0, err
	}
	if len(page) == 0 {
		return 0, 0, nil
	}
	total := len(page)
	if total == rawLimit {
		if err := countTo(&total); err != nil {
			return 0, 0, err
		}
	}
	return total, page[0].id, nil
}

func (p *rawSQLite) search(ctx context.Context, q string) error {
	_, _, err := p.find(ctx, q)
	return err
}

func (p *rawSQLite) count(ctx context.Context) (int64, error) {
	var n int64
	err := p.db.QueryRowContext(ctx, "SELECT count(*) FROM releases").Scan(&n)
	return n, err
}

// analyze does nothing on SQLite: the store never runs ANALYZE, so
// neither side gets statistics a real database would not have.
func (p *rawSQLite) analyze(context.Context) error { return nil }

func (p *rawSQLite) close() {
	p.page.Close()
	p.total.Close()
	p.db.Close()
}
