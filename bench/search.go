package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/edgeindex/edgeindex/newznab"
	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/sqlstore"
	"github.com/edgeindex/edgeindex/usenet"
)

// searchConfig sizes the search line.
type searchConfig struct {
	Releases int // releases stored
	Conc     int // goroutines sending requests or queries
	Requests int // requests (and raw searches) per measurement
	Queries  int // distinct two-word queries
}

// searchSeed makes the corpus and the queries; both backends get the same.
const searchSeed = 18

// searchPage is how many files one PutReleases writes.
const searchPage = 5000

// commonPairs are the stress queries: two words that a large share of
// the releases carry, whose matches the count reads up to its limit.
var commonPairs = []string{"1080p x264", "720p hdtv", "2160p x265", "web dl", "bluray 1080p", "1080p web"}

// searchFixtures are the filled stores, one per backend, kept from the
// first measurement of a backend to closeSearch.
var searchFixtures = map[string]*searchFixture{}

// closeSearch closes every filled store and drops its schema.
func closeSearch() {
	for k, f := range searchFixtures {
		f.close()
		delete(searchFixtures, k)
	}
}

// searchMeasures are the search lines of both backends: the handler and
// the raw query on two-word queries drawn from the stored names (the
// target), and both again on common pairs (a stress line). The first
// line of a backend fills its store; the others reuse it.
func (s *session) searchMeasures(cfg searchConfig) []measure {
	c := newCorpus(searchSeed, cfg.Releases)
	var queries []string
	var ms []measure
	for _, backend := range []string{"pg", "sqlite"} {
		name := "search-" + backend
		fixture := func() (*searchFixture, error) {
			if f := searchFixtures[backend]; f != nil {
				return f, nil
			}
			if queries == nil {
				queries = c.queries(cfg.Queries)
			}
			f, err := s.newSearchFixture(backend, c, cfg, queries)
			if err != nil {
				return nil, err
			}
			searchFixtures[backend] = f
			return f, nil
		}
		for _, set := range []struct {
			label  string
			common bool
		}{{"", false}, {"common-", true}} {
			ms = append(ms, measure{name + "/" + set.label + "handler", "req/s", func() (result, error) {
				f, err := fixture()
				if err != nil {
					return result{}, err
				}
				return f.run(s.ctx, f.requests(cfg, set.common), f.queries(set.common), f.handlerSearch)
			}})
			ms = append(ms, measure{name + "/" + set.label + "raw", "queries/s", func() (result, error) {
				f, err := fixture()
				if err != nil {
					return result{}, err
				}
				return f.run(s.ctx, f.requests(cfg, set.common), f.queries(set.common), f.raw.search)
			}})
		}
	}
	return ms
}

// searchFixture is one backend's filled store, its handler, and the raw
// searcher over the same database.
type searchFixture struct {
	backend string
	store   *sqlstore.Store
	h       http.Handler
	key     string
	raw     rawSearcher
	words   []string // the two-word queries
	closers []func()
}

func (f *searchFixture) queries(common bool) []string {
	if common {
		return commonPairs
	}
	return f.words
}

// requests is cfg with the request count of a line: for the common
// pairs, each pair once a goroutine (48 at the defaults), as one such
// search takes a hundred times as long as a two-word one or more (5 s raw
// on SQLite at a million releases).
func (f *searchFixture) requests(cfg searchConfig, common bool) searchConfig {
	if common {
		cfg.Requests = min(cfg.Requests, len(commonPairs)*cfg.Conc)
	}
	return cfg
}

func (f *searchFixture) close() {
	for i := len(f.closers) - 1; i >= 0; i-- {
		f.closers[i]()
	}
	f.closers = nil
}

// newSearchFixture opens a store on a new PostgreSQL schema or SQLite
// file, fills it with the corpus through PutReleases, adds a user without
// limits, and checks that the handler and the raw query agree on every
// query's total.
func (s *session) newSearchFixture(backend string, c *corpus, cfg searchConfig, queries []string) (_ *searchFixture, err error) {
	ctx := s.ctx
	f := &searchFixture{backend: backend, words: queries}
	defer func() {
		if err != nil {
			f.close()
		}
	}()
	var dbURL, path string
	if backend == "pg" {
		u, drop, err := s.pg.schema(ctx, "search")
		if err != nil {
			return nil, err
		}
		f.closers = append(f.closers, drop)
		s.pg.quiesce(ctx)
		dbURL = u
	} else {
		dir, err := s.newDir()
		if err != nil {
			return nil, err
		}
		path = filepath.Join(dir, "edgeindex.db")
		dbURL = "sqlite://" + path
	}
	st, err := sqlstore.Open(ctx, dbURL, sqlstore.Config{})
	if err != nil {
		return nil, err
	}
	f.store = st
	f.closers = append(f.closers, func() { st.Close() })
	start := time.Now()
	if err := fillReleases(ctx, st, c); err != nil {
		return nil, fmt.Errorf("fill: %w", err)
	}
	fill := time.Since(start)
	if backend == "pg" {
		f.raw, err = openRawPG(ctx, dbURL, cfg.Conc)
	} else {
		f.raw, err = openRawSQLite(path, cfg.Conc)
	}
	if err != nil {
		return nil, err
	}
	f.closers = append(f.closers, f.raw.close)
	stored, err := f.raw.count(ctx)
	if err != nil {
		return nil, err
	}
	if stored != int64(c.n) {
		return nil, fmt.Errorf("fill: %d releases stored, want %d", stored, c.n)
	}
	// A database that took a million rows in a few minutes has had its
	// statistics taken by autovacuum by the time it is searched; take
	// them now, for both sides alike.
	if err := f.raw.analyze(ctx); err != nil {
		return nil, err
	}
	settle := time.Since(start) - fill
	f.key, err = newznab.NewKey()
	if err != nil {
		return nil, err
	}
	if err := st.AddUser(ctx, newznab.User{Name: "bench", KeyHash: newznab.HashKey(f.key)}); err != nil {
		return nil, err
	}
	h, err := newznab.New(newznab.Config{Store: st})
	if err != nil {
		return nil, err
	}
	f.h = h
	hits, err := f.check(ctx, append(slices.Clone(queries), commonPairs...))
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(s.out, "bench: search-%s: %d releases filled through PutReleases (pages of %d) in %s, %.0f releases/s; %s to count and analyze; %d queries and %d common pairs, the same totals both ways; %s\n",
		backend, c.n, searchPage, fill.Round(time.Millisecond), float64(c.n)/fill.Seconds(), settle.Round(time.Millisecond),
		len(queries), len(commonPairs), spread(hits))
	return f, nil
}

// check runs every query once through the handler and once raw (which
// also warms both), and fails unless they find the same total and the
// same first release. It returns the totals of the two-word queries.
func (f *searchFixture) check(ctx context.Context, queries []string) ([]int, error) {
	var totals []int
	for i, q := range queries {
		ht, hfirst, err := f.handlerTotal(q)
		if err != nil {
			return nil, err
		}
		rt, rfirst, err := f.raw.find(ctx, q)
		if err != nil {
			return nil, err
		}
		if ht != rt || hfirst != rfirst {
			return nil, fmt.Errorf("query %q: the handler finds %d (first %d), the raw query %d (first %d)", q, ht, hfirst, rt, rfirst)
		}
		if i < len(f.words) {
			totals = append(totals, ht)
		}
	}
	return totals, nil
}

// spread describes the totals of the queries: their mean and quantiles.
func spread(totals []int) string {
	if len(totals) == 0 {
		return "no queries"
	}
	s := slices.Sorted(slices.Values(totals))
	sum := 0
	for _, n := range s {
		sum += n
	}
	at := func(q float64) int { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return fmt.Sprintf("matches a query: mean %.0f, p50 %d, p90 %d, p99 %d (counted up to %d)",
		float64(sum)/float64(len(s)), at(0.5), at(0.9), at(0.99), release.MaxSearchTotal)
}

var (
	totalAttr = regexp.MustCompile(`<newznab:response[^>]* total="(\d+)"`)
	guidID    = regexp.MustCompile(`/details/(\d+)`)
)

// handlerTotal sends q through the handler and returns the total and the
// first release's id (0: none) its answer gives.
func (f *searchFixture) handlerTotal(q string) (int, int64, error) {
	body, err := f.get(q)
	if err != nil {
		return 0, 0, err
	}
	m := totalAttr.FindSubmatch(body)
	if m == nil {
		return 0, 0, fmt.Errorf("query %q: no total in the answer: %.300s", q, body)
	}
	total, _ := strconv.Atoi(string(m[1]))
	var first int64
	if m := guidID.FindSubmatch(body); m != nil {
		first, _ = strconv.ParseInt(string(m[1]), 10, 64)
	}
	return total, first, nil
}

// get sends one search request to the handler, in process, and returns
// the whole body of its answer.
func (f *searchFixture) get(q string) ([]byte, error) {
	req := httptest.NewRequest(http.MethodGet, "/api?t=search&q="+url.QueryEscape(q)+"&apikey="+f.key, nil)
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	res := rec.Result()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK || !strings.Contains(res.Header.Get("Content-Type"), "xml") {
		return nil, fmt.Errorf("query %q: status %d: %.300s", q, res.StatusCode, body)
	}
	return body, nil
}

// handlerSearch is one timed request through the handler.
func (f *searchFixture) handlerSearch(_ context.Context, q string) error {
	_, err := f.get(q)
	return err
}

// run sends cfg.Requests searches, the queries in turn, from cfg.Conc
// goroutines, and reports their rate and latencies.
func (f *searchFixture) run(ctx context.Context, cfg searchConfig, queries []string, search func(context.Context, string) error) (result, error) {
	var next atomic.Int64
	var h hist
	var wg sync.WaitGroup
	errs := make(chan error, cfg.Conc)
	start := time.Now()
	for range cfg.Conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= cfg.Requests {
					return
				}
				t := time.Now()
				if err := search(ctx, queries[i%len(queries)]); err != nil {
					errs <- err
					return
				}
				h.add(time.Since(t))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return result{}, err
	}
	if err := ctx.Err(); err != nil {
		return result{}, err
	}
	return result{rate: float64(cfg.Requests) / elapsed.Seconds(), elapsed: elapsed,
		detail: fmt.Sprintf("p50 %s p99 %s max %s; %d by %d, %d queries", fmtDur(h.quantile(0.5)), fmtDur(h.quantile(0.99)),
			fmtDur(time.Duration(h.max.Load())), cfg.Requests, cfg.Conc, len(queries))}, nil
}

func fmtDur(d time.Duration) string {
	switch {
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}

// fillReleases writes the corpus through the store's real write path:
// pages of searchPage files, one per release, each one PutReleases as
// the release builder calls it, with the Sets made outside the
// transaction as the builder makes them. The next page is made while the
// store writes one.
func fillReleases(ctx context.Context, st *sqlstore.Store, c *corpus) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pages := make(chan release.Update, 2)
	go func() {
		defer close(pages)
		u := release.Update{Consumer: "bench"}
		c.each(func(i int, r corpusRelease) bool {
			f := r.file(i)
			u.Files = append(u.Files, f)
			u.Sets = append(u.Sets, release.ParseSet(f.Subject))
			if len(u.Files) < searchPage && i < c.n-1 {
				return true
			}
			u.Items, u.Next = len(u.Files), "0."+strconv.Itoa(i+1)
			select {
			case pages <- u:
			case <-ctx.Done():
				return false
			}
			u = release.Update{Consumer: "bench", After: u.Next}
			return true
		})
	}()
	for u := range pages {
		a, err := st.PutReleases(ctx, u)
		if err != nil {
			return err
		}
		if a.Created != len(u.Files) {
			return fmt.Errorf("page after %q: %d releases created of %d files", u.After, a.Created, len(u.Files))
		}
	}
	return ctx.Err()
}

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
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = int32(conc + 2)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
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

// corpus makes n scene-style release names and their files, the same
// for a seed: TV episodes (Title.Words.S03E07.1080p.WEB-DL.x264-GRP) and
// films (Movie.Title.2019.2160p.BluRay.x265-GRP), their titles drawn with
// Zipf's law from catalogues whose words are drawn with Zipf's law from a
// vocabulary of a few thousand; posted over a year, 90% complete.
type corpus struct {
	seed  uint64
	n     int
	vocab []string
	shows []title
	films []title
	grps  []string
	start time.Time
}

// title is a show or a film: its words, capitalized, and a film's year.
type title struct {
	words []string
	year  int
}

const (
	vocabSize = 4000
	showCount = 20_000
	filmCount = 40_000
)

var (
	resolutions = []string{"1080p", "1080p", "1080p", "720p", "720p", "2160p", "480p"}
	tvSources   = []string{"WEB-DL", "WEB-DL", "WEBRip", "HDTV", "HDTV", "AMZN.WEB-DL", "NF.WEB-DL", "BluRay"}
	filmSources = []string{"BluRay", "BluRay", "WEB-DL", "WEBRip", "BDRip", "REMUX.BluRay", "DVDRip"}
	codecs      = []string{"x264", "x264", "x264", "x265", "H.264", "HEVC", "x265.10bit"}
	extraTags   = []string{"PROPER", "REPACK", "INTERNAL", "MULTi", "DUBBED"}
	newsgroups  = map[bool][]string{
		true:  {"alt.binaries.teevee", "alt.binaries.hdtv", "alt.binaries.hdtv.x264", "alt.binaries.multimedia"},
		false: {"alt.binaries.movies", "alt.binaries.movies.divx", "alt.binaries.hd.movies", "alt.binaries.multimedia"},
	}
	// reserved are words the vocabulary must not make: the tags' own.
	reserved = map[string]bool{"web": true, "dl": true, "hdtv": true, "nf": true, "amzn": true, "hevc": true, "remux": true,
		"multi": true, "proper": true, "repack": true, "internal": true, "dubbed": true, "bluray": true, "webrip": true, "bdrip": true, "dvdrip": true}
)

func newCorpus(seed uint64, n int) *corpus {
	r := rand.New(rand.NewPCG(seed, 1))
	c := &corpus{seed: seed, n: n, start: time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC)}
	cons := strings.Split("b c d f g h j k l m n p r s t v w z br cr dr fr gr kr pr st tr th sh ch", " ")
	vows := strings.Split("a e i o u a e o ai ea ou", " ")
	ends := strings.Split("n r s l t x k m nd rt", " ")
	seen := map[string]bool{}
	for len(c.vocab) < vocabSize {
		var b strings.Builder
		for range 1 + r.IntN(3) {
			b.WriteString(cons[r.IntN(len(cons))])
			b.WriteString(vows[r.IntN(len(vows))])
		}
		if r.IntN(2) == 0 {
			b.WriteString(ends[r.IntN(len(ends))])
		}
		w := b.String()
		if len(w) < 3 || seen[w] || reserved[w] {
			continue
		}
		seen[w] = true
		c.vocab = append(c.vocab, strings.ToUpper(w[:1])+w[1:])
	}
	words := rand.NewZipf(r, 1.1, 10, vocabSize-1)
	titles := func(k int, film bool) []title {
		out := make([]title, k)
		for i := range out {
			for nw := 1 + r.IntN(4); len(out[i].words) < nw; {
				if w := c.vocab[words.Uint64()]; !slices.Contains(out[i].words, w) {
					out[i].words = append(out[i].words, w)
				}
			}
			if film {
				out[i].year = 1960 + int(66*(1-r.Float64()*r.Float64())) // more recent films are more common
			}
		}
		return out
	}
	c.shows, c.films = titles(showCount, false), titles(filmCount, true)
	for range 400 {
		var b strings.Builder
		for range 3 + r.IntN(4) {
			b.WriteByte(byte('A' + r.IntN(26)))
		}
		c.grps = append(c.grps, b.String())
	}
	return c
}

// corpusRelease is one release of the corpus.
type corpusRelease struct {
	name     string
	tv       bool
	title    title
	episode  string // "S03E07" for a TV release
	group    string
	poster   string
	posted   time.Time
	complete bool
	bytes    int64
}

// each calls fn with the releases in order, until it returns false.
func (c *corpus) each(fn func(i int, r corpusRelease) bool) {
	r := rand.New(rand.NewPCG(c.seed, 2))
	shows := rand.NewZipf(r, 1.05, 5, showCount-1)
	films := rand.NewZipf(r, 1.05, 5, filmCount-1)
	groups := rand.NewZipf(r, 1.2, 3, uint64(len(c.grps)-1))
	year := 365 * 24 * time.Hour
	for i := range c.n {
		var rel corpusRelease
		rel.tv = r.IntN(100) < 55
		var parts []string
		if rel.tv {
			rel.title = c.shows[shows.Uint64()]
			rel.episode = fmt.Sprintf("S%02dE%02d", 1+r.IntN(r.IntN(12)+1), 1+r.IntN(24))
			parts = append(slices.Clone(rel.title.words), rel.episode)
		} else {
			rel.title = c.films[films.Uint64()]
			parts = append(slices.Clone(rel.title.words), strconv.Itoa(rel.title.year))
		}
		if r.IntN(100) < 4 {
			parts = append(parts, extraTags[r.IntN(len(extraTags))])
		}
		parts = append(parts, resolutions[r.IntN(len(resolutions))])
		if rel.tv {
			parts = append(parts, tvSources[r.IntN(len(tvSources))])
		} else {
			parts = append(parts, filmSources[r.IntN(len(filmSources))])
		}
		rel.group = c.grps[groups.Uint64()]
		rel.name = strings.Join(parts, ".") + "." + codecs[r.IntN(len(codecs))] + "-" + rel.group
		rel.poster = fmt.Sprintf("poster%03d <poster%03d@nowhere.example>", r.IntN(300), r.IntN(300))
		// In posting order, over a year, a few minutes of jitter.
		rel.posted = c.start.Add(time.Duration(float64(year) * (float64(i) + r.Float64()) / float64(c.n))).Truncate(time.Microsecond)
		rel.complete = r.IntN(100) < 90
		rel.bytes = (200 + r.Int64N(8000)) << 20
		if !fn(i, rel) {
			return
		}
	}
}

// file is release i's one file, as the results feed gives it: complete
// with its one part, or one part of two.
func (r corpusRelease) file(i int) release.File {
	groups := newsgroups[r.tv]
	g := groups[i%len(groups)]
	f := release.File{
		Key:     fmt.Sprintf("bench-%08d", i),
		Subject: fmt.Sprintf(`[1/1] - "%s.mkv" yEnc`, r.name),
		Name:    r.name + ".mkv",
		Poster:  r.poster,
		Date:    r.posted,
		Groups:  []string{g},
		Total:   1,
		Parts: []usenet.Part{{N: 1, Article: int64(i) + 1, MessageID: fmt.Sprintf("<part1.%d@nowhere.example>", i),
			Bytes: r.bytes}},
		Complete: true,
		Bytes:    r.bytes,
	}
	if !r.complete {
		f.Total, f.Complete = 2, false
	}
	return f
}

// queries draws k two-word queries from the stored names, the way users
// type them: a title word and the episode (TV) or the year (films), or
// two words of the title; in lower case, as the handler's words are.
func (c *corpus) queries(k int) []string {
	pick := rand.New(rand.NewPCG(c.seed, 3))
	want := map[int][]int{} // release index -> which of the picks
	for j := range k {
		i := pick.IntN(c.n)
		want[i] = append(want[i], j)
	}
	out := make([]string, k)
	c.each(func(i int, r corpusRelease) bool {
		for _, j := range want[i] {
			ws := r.title.words
			w := ws[pick.IntN(len(ws))]
			var q string
			switch {
			case len(ws) > 1 && pick.IntN(2) == 0:
				a := pick.IntN(len(ws))
				b := (a + 1 + pick.IntN(len(ws)-1)) % len(ws)
				q = ws[a] + " " + ws[b]
			case r.tv:
				q = w + " " + r.episode
			default:
				q = w + " " + strconv.Itoa(r.title.year)
			}
			out[j] = strings.ToLower(q)
		}
		return true
	})
	return out
}
