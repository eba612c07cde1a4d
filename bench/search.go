package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/edgeindex/edgeindex/newznab"
	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/sqlstore"
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
	dbURL, path, err := s.searchDB(f)
	if err != nil {
		return nil, err
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
	if err := f.openRaw(ctx, dbURL, path, cfg.Conc, c.n); err != nil {
		return nil, err
	}
	settle := time.Since(start) - fill
	if err := f.serve(ctx); err != nil {
		return nil, err
	}
	hits, err := f.check(ctx, append(slices.Clone(queries), commonPairs...))
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(s.out, "bench: search-%s: %d releases filled through PutReleases (pages of %d) in %s, %.0f releases/s; %s to count and analyze; %d queries and %d common pairs, the same totals both ways; %s\n",
		backend, c.n, searchPage, fill.Round(time.Millisecond), float64(c.n)/fill.Seconds(), settle.Round(time.Millisecond),
		len(queries), len(commonPairs), spread(hits))
	return f, nil
}

// searchDB makes the database of f's backend: a new PostgreSQL schema,
// dropped when f closes, or a new SQLite file at path.
func (s *session) searchDB(f *searchFixture) (dbURL, path string, err error) {
	if f.backend == "pg" {
		u, drop, err := s.pg.schema(s.ctx, "search")
		if err != nil {
			return "", "", err
		}
		f.closers = append(f.closers, drop)
		s.pg.quiesce(s.ctx)
		return u, "", nil
	}
	dir, err := s.newDir()
	if err != nil {
		return "", "", err
	}
	path = filepath.Join(dir, "edgeindex.db")
	return "sqlite://" + path, path, nil
}

// openRaw opens the raw searcher over f's filled database, checks that
// it holds n releases, and takes its statistics.
func (f *searchFixture) openRaw(ctx context.Context, dbURL, path string, conc, n int) error {
	var err error
	if f.backend == "pg" {
		f.raw, err = openRawPG(ctx, dbURL, conc)
	} else {
		f.raw, err = openRawSQLite(path, conc)
	}
	if err != nil {
		return err
	}
	f.closers = append(f.closers, f.raw.close)
	stored, err := f.raw.count(ctx)
	if err != nil {
		return err
	}
	if stored != int64(n) {
		return fmt.Errorf("fill: %d releases stored, want %d", stored, n)
	}
	// A database that took a million rows in a few minutes has had its
	// statistics taken by autovacuum by the time it is searched; take
	// them now, for both sides alike.
	return f.raw.analyze(ctx)
}

// serve makes f's handler over its store, with a user without limits
// whose key f keeps.
func (f *searchFixture) serve(ctx context.Context) error {
	var err error
	f.key, err = newznab.NewKey()
	if err != nil {
		return err
	}
	if err := f.store.AddUser(ctx, newznab.User{Name: "bench", KeyHash: newznab.HashKey(f.key)}); err != nil {
		return err
	}
	h, err := newznab.New(newznab.Config{Store: f.store})
	if err != nil {
		return err
	}
	f.h = h
	return nil
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
	elapsed, err := parallel(ctx, cfg.Conc, func(int) error {
		for ctx.Err() == nil {
			i := int(next.Add(1)) - 1
			if i >= cfg.Requests {
				return nil
			}
			t := time.Now()
			if err := search(ctx, queries[i%len(queries)]); err != nil {
				return err
			}
			h.add(time.Since(t))
		}
		return nil
	})
	if err != nil {
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
