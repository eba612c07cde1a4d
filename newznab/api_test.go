package newznab_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/internal/pgtest"
	"github.com/edgeindex/edgeindex/internal/testmain"
	"github.com/edgeindex/edgeindex/newznab"
	"github.com/edgeindex/edgeindex/nzb"
	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/sqlstore"
	"github.com/edgeindex/edgeindex/usenet"
)

func TestMain(m *testing.M) { testmain.Main(m) }

// apiEnv is a handler over a real store with releases built through the
// results feed and the release builder, served by an httptest server.
type apiEnv struct {
	store *sqlstore.Store
	srv   *httptest.Server
	clock *clock.Manual
	// keys of the users: alice (no limits), two requests a day, one grab
	// a day, suspended.
	key, reqLimited, grabLimited, suspended string
	byName                                  map[string]release.Release
	docs                                    [][]byte // every XML document the test read, for xmllint
	evil                                    string   // the hostile release's name
}

// hostileName is posted as a file name; the release's name is what
// release.ParseSet makes of it, found by its first word (evil).
const hostileName = "Evil <b>&amp;</b> 'a' ]]> \x01\x1f \xff\xfe & end"

// postings are the files the tests post: name -> files (each one part).
var postings = []struct {
	name   string
	files  []string
	poster string
	date   time.Time
}{
	{"Show.Name.S01E02.720p.HDTV.x264-GRP", []string{"Show.Name.S01E02.720p.HDTV.x264-GRP.part1.rar", "Show.Name.S01E02.720p.HDTV.x264-GRP.part2.rar"},
		"Alice <a@example.test>", time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC)},
	{"Film.Title.2026.1080p.BluRay.x264-GRP", []string{"Film.Title.2026.1080p.BluRay.x264-GRP.mkv"},
		"Bob <b@example.test>", time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)},
	{"Daily.Show.2026.11.29.720p.WEB", []string{"Daily.Show.2026.11.29.720p.WEB.mkv"},
		"Carol <c@example.test>", time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC)},
	{hostileName, []string{hostileName + ".rar"},
		"Mallory \"<m&m>\" \x02 \xc3", time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)},
}

func newAPIEnv(t *testing.T, b pgtest.Backend) *apiEnv {
	t.Helper()
	ctx := t.Context()
	clk := clock.NewManual(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	store, err := sqlstore.Open(ctx, b.URL(t), sqlstore.Config{Clock: clk})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })

	const group = "alt.binaries.edgeindex"
	var bins []usenet.Binary
	article := int64(0)
	for _, p := range postings {
		for i, name := range p.files {
			article++
			bin := usenet.Binary{Subject: fmt.Sprintf(`[%d/%d] - "%s" yEnc`, i+1, len(p.files), name), Name: name,
				Poster: p.poster, Group: group, Date: p.date.Format(time.RFC1123Z), Total: 2, Complete: true}
			for n := 1; n <= 2; n++ {
				bin.Parts = append(bin.Parts, usenet.Part{N: n, Article: article*2 + int64(n),
					MessageID: fmt.Sprintf("<%d.%d@edgeindex.test>", article, n), Bytes: 1000})
			}
			bins = append(bins, bin)
		}
	}
	buildReleases(t, store, clk, group, "n", 100, bins)

	e := &apiEnv{store: store, clock: clk, byName: map[string]release.Release{}}
	for _, u := range []struct {
		key        *string
		name       string
		reqs, grab int64
	}{{&e.key, "alice", 0, 0}, {&e.reqLimited, "req", 2, 0}, {&e.grabLimited, "grab", 0, 1}, {&e.suspended, "gone", 0, 0}} {
		k, err := newznab.NewKey()
		require.NoError(t, err)
		*u.key = k
		require.NoError(t, store.AddUser(ctx, newznab.User{Name: u.name, KeyHash: newznab.HashKey(k), RequestLimit: u.reqs, GrabLimit: u.grab}))
	}
	require.NoError(t, store.SuspendUser(ctx, "gone", true))

	h, err := newznab.New(newznab.Config{Store: store, Now: clk.Now, MaxLimit: 100, DefaultLimit: 50})
	require.NoError(t, err)
	e.srv = httptest.NewServer(h)
	t.Cleanup(e.srv.Close)

	for _, r := range e.releases(t) {
		if strings.HasPrefix(r.Name, "Evil") {
			e.evil = r.Name
		}
		e.byName[r.Name] = r
	}
	require.NotEmpty(t, e.evil)
	require.Len(t, e.byName, len(postings), "one release a posting")
	return e
}

// releases lists every release with its files.
func (e *apiEnv) releases(t *testing.T) []release.Release {
	t.Helper()
	var out []release.Release
	cursor := ""
	for {
		p, err := e.store.Releases(t.Context(), release.Query{After: cursor, Limit: 100})
		require.NoError(t, err)
		if len(p.Releases) == 0 {
			return out
		}
		for _, r := range p.Releases {
			full, err := e.store.ReleaseByID(t.Context(), r.ID)
			require.NoError(t, err)
			out = append(out, full)
		}
		cursor = p.Next
	}
}

// state is what a request may not change: the releases (but their grab
// counts) and the users (but their day's counts).
func (e *apiEnv) state(t *testing.T) string {
	t.Helper()
	rels := e.releases(t)
	for i := range rels {
		rels[i].Grabs = 0
	}
	accts, err := e.store.Accounts(t.Context(), e.clock.Now())
	require.NoError(t, err)
	for i := range accts {
		accts[i].Requests, accts[i].Grabs = 0, 0
	}
	b, err := json.Marshal(struct {
		R []release.Release
		A []newznab.Account
	}{rels, accts})
	require.NoError(t, err)
	return string(b)
}

func (e *apiEnv) account(t *testing.T, name string) newznab.Account {
	t.Helper()
	accts, err := e.store.Accounts(t.Context(), e.clock.Now())
	require.NoError(t, err)
	for _, a := range accts {
		if a.Name == name {
			return a
		}
	}
	t.Fatalf("no account %q", name)
	return newznab.Account{}
}

// get asks the handler for raw (a query string, or a whole URL).
func (e *apiEnv) get(t *testing.T, raw string) (*http.Response, []byte) {
	t.Helper()
	u := raw
	if !strings.HasPrefix(raw, "http") {
		u = e.srv.URL + "/api?" + raw
	}
	res, err := http.Get(u)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res, body
}

// apiError asks raw and checks that it answers error code.
func (e *apiEnv) apiError(t *testing.T, raw string, code int) newznab.ErrorDoc {
	t.Helper()
	res, body := e.get(t, raw)
	require.Equal(t, newznab.XMLType, res.Header.Get("Content-Type"), "%s", body)
	want := http.StatusOK
	if code == 900 {
		want = http.StatusInternalServerError
	}
	require.Equal(t, want, res.StatusCode)
	doc := newznab.Decode[newznab.ErrorDoc](t, body)
	require.Equal(t, strconv.Itoa(code), doc.Code, "%s: %s", raw, body)
	require.NotEmpty(t, doc.Description)
	e.docs = append(e.docs, body)
	return doc
}

// feed asks raw and checks that it answers a feed.
func (e *apiEnv) feed(t *testing.T, raw string) newznab.RSSDoc {
	t.Helper()
	res, body := e.get(t, raw)
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", body)
	require.Equal(t, newznab.FeedType, res.Header.Get("Content-Type"), "%s", body)
	require.Contains(t, string(body), `xmlns:newznab="`+newznab.Namespace+`"`)
	newznab.CheckAttrOrder(t, body)
	doc := newznab.Decode[newznab.RSSDoc](t, body)
	for _, it := range doc.Channel.Items {
		_, err := time.Parse(time.RFC1123Z, it.PubDate)
		require.NoError(t, err)
		require.Equal(t, nzb.ContentType, it.Enclosure.Type)
		require.Equal(t, "true", it.GUID.PermaLink)
	}
	e.docs = append(e.docs, body)
	return doc
}

func titles(d newznab.RSSDoc) []string {
	var out []string
	for _, it := range d.Channel.Items {
		out = append(out, it.Title)
	}
	return out
}

func TestAPI(t *testing.T) {
	t.Parallel()
	for _, b := range pgtest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			e := newAPIEnv(t, b)
			t.Run("cases", func(t *testing.T) { testCases(t, e) })
			t.Run("limits", func(t *testing.T) { testLimits(t, e) })
			t.Run("get", func(t *testing.T) { testGet(t, e) })
			t.Run("head", func(t *testing.T) { testHead(t, e) })
			t.Run("nocookie", func(t *testing.T) { testNoCookie(t, e) })
			t.Run("underapi", func(t *testing.T) { testUnderAPI(t, e) })
			newznab.XMLLint(t, e.docs...)
		})
	}
}

// testCases: every parameter missing, empty, negative, huge, non-numeric
// and repeated, unknown functions, garbage lists and hostile text answer
// the right error or a valid feed, and change nothing but counters.
func testCases(t *testing.T, e *apiEnv) {
	k := "&apikey=" + e.key
	all := len(postings)
	show, film, daily := "Show.Name.S01E02.720p.HDTV.x264-GRP", "Film.Title.2026.1080p.BluRay.x264-GRP", "Daily.Show.2026.11.29.720p.WEB"
	for _, c := range []struct {
		raw   string
		code  int      // an error; 0: a feed
		items int      // the feed's items, -1: any
		want  []string // and their titles, in order, when set
		// match, when set, is which releases the feed must hold (in any
		// order): by their category or episode, which the name rules give.
		match func(release.Release) bool
	}{
		{raw: "t=search" + k, items: all, want: []string{daily, show, film, nzb.Text(e.evil)}},
		{raw: "t=search&q=" + k, items: all},
		{raw: "t=search&q=show" + k, want: []string{daily, show}},
		{raw: "t=search&q=SHOW+name" + k, want: []string{show}},
		{raw: "t=search&q=film.title" + k, want: []string{film}},
		{raw: "t=search&q=evil+end" + k, want: []string{nzb.Text(e.evil)}},
		{raw: "t=search&q=nothing-like-it" + k, items: 0},
		{raw: "t=search&q=%00%01%02" + k, items: 0},
		{raw: "t=search&q=%ff%fe" + k, items: 0},
		{raw: "t=search&q=show%ff%00" + k, want: []string{daily, show}},
		{raw: "t=search&q=" + strings.Repeat("x", 10<<10) + k, code: 201},
		{raw: "t=search&q=" + strings.Repeat("ab+", 17) + k, items: 0}, // one word, repeated
		{raw: "t=search&q=a&q=b" + k, code: 201},
		{raw: "t=search&limit=1" + k, want: []string{daily}},
		{raw: "t=search&limit=1&offset=1" + k, want: []string{show}},
		{raw: "t=search&limit=1000" + k, items: all},
		{raw: "t=search&limit=99999999999999999999999999" + k, items: all},
		{raw: "t=search&limit=" + k, items: all},
		{raw: "t=search&limit=0" + k, code: 201},
		{raw: "t=search&limit=-1" + k, code: 201},
		{raw: "t=search&limit=ten" + k, code: 201},
		{raw: "t=search&limit=1&limit=2" + k, code: 201},
		{raw: "t=search&limit=1&limit=1" + k, items: 1},
		{raw: "t=search&offset=" + k, items: all},
		{raw: "t=search&offset=4" + k, items: 0},
		{raw: "t=search&offset=-1" + k, code: 201},
		{raw: "t=search&offset=10001" + k, code: 201},
		{raw: "t=search&offset=x" + k, code: 201},
		{raw: "t=search&maxage=1" + k, want: []string{daily, show}},
		{raw: "t=search&maxage=100000" + k, items: all},
		{raw: "t=search&maxage=-1" + k, code: 201},
		{raw: "t=search&maxage=1.5" + k, code: 201},
		{raw: "t=search&maxage=99999999999999999999" + k, code: 201},
		{raw: "t=search&minsize=999999999" + k, items: 0},
		{raw: "t=search&maxsize=1" + k, items: 0},
		{raw: "t=search&minsize=1&maxsize=99999999" + k, items: all},
		{raw: "t=search&minsize=-1" + k, code: 201},
		{raw: "t=search&maxsize=99999999999999999999" + k, code: 201},
		{raw: "t=search&cat=" + k, items: all},
		{raw: "t=search&cat=8000" + k, match: inCats(8000)},
		{raw: "t=search&cat=5000,2000,8000,5040" + k, match: inCats(5000, 2000, 8000)},
		{raw: "t=search&cat=1000" + k, match: inCats(1000)},
		{raw: "t=search&cat=tv" + k, code: 201},
		{raw: "t=search&cat=5000,%3Cscript%3E" + k, code: 201},
		{raw: "t=search&cat=-5000" + k, code: 201},
		{raw: "t=search&cat=99999" + k, code: 201},
		{raw: "t=search&cat=5000&cat=2000" + k, code: 201},
		{raw: "t=search&cat=" + strings.Repeat("5000,", 2000) + k, match: inCats(5000)},
		{raw: "t=search&extended=1&password=0&o=xml" + k, items: all},
		{raw: "t=search&password=1" + k, items: all},
		{raw: "t=search&extended=2" + k, code: 201},
		{raw: "t=search&password=x" + k, code: 201},
		{raw: "t=search&o=json" + k, code: 203},
		{raw: "t=search&imdbid=0133093" + k, items: 0},
		{raw: "t=tvsearch&q=show" + k, items: -1},
		{raw: "t=tvsearch&q=show&season=1&ep=2" + k, match: isEpisode(1, 2)},
		{raw: "t=tvsearch&season=S01&ep=E02" + k, match: isEpisode(1, 2)},
		{raw: "t=tvsearch&season=00" + k, match: isEpisode(0, 0)},
		{raw: "t=tvsearch&season=2026&ep=11/29" + k, match: isEpisode(2026, 1129)},
		{raw: "t=tvsearch&ep=2" + k, code: 200},
		{raw: "t=tvsearch&season=x" + k, code: 201},
		{raw: "t=tvsearch&season=-1" + k, code: 201},
		{raw: "t=tvsearch&season=99999" + k, code: 201},
		{raw: "t=tvsearch&season=1&ep=13/45" + k, code: 201},
		{raw: "t=tvsearch&tvdbid=81189" + k, items: 0},
		{raw: "t=tvsearch&q=show&rid=1" + k, items: 0},
		{raw: "t=tvsearch&tvmazeid=1&season=1&ep=2" + k, items: 0},
		{raw: "t=movie&q=film" + k, want: []string{film}},
		{raw: "t=movie&q=film&imdbid=0133093" + k, items: 0},
		{raw: "t=movie&tmdbid=603" + k, items: 0},
		{raw: "t=movie&traktid=1" + k, items: 0},
		{raw: "t=details&id=" + strconv.FormatInt(e.byName[film].ID, 10) + k, want: []string{film}},
		{raw: "t=details&id=999999" + k, code: 300},
		{raw: "t=details" + k, code: 200},
		{raw: "t=details&id=" + k, code: 200},
		{raw: "t=details&id=-1" + k, code: 201},
		{raw: "t=details&id=x" + k, code: 201},
		{raw: "t=get" + k, code: 200},
		{raw: "t=get&id=999999" + k, code: 300},
		{raw: "t=get&id=0" + k, code: 201},
		{raw: "t=get&id=99999999999999999999" + k, code: 201},
		{raw: "t=get&id=1&id=2" + k, code: 201},
		{raw: k[1:], code: 202},
		{raw: "t=" + k, code: 202},
		{raw: "t=register" + k, code: 202},
		{raw: "t=%3Cx%3E%00" + k, code: 202},
		{raw: "t=search&t=caps" + k, code: 201},
		{raw: "t=search&q=%zz" + k, code: 201},
		{raw: "t=search", code: 100},
		{raw: "t=search&apikey=", code: 100},
		{raw: "t=search&apikey=wrong", code: 100},
		{raw: "t=get&id=1&apikey=" + strings.Repeat("%00", 10), code: 100},
		{raw: "t=search&apikey=" + e.key + "&apikey=other", code: 201},
		{raw: "t=search&apikey=" + e.suspended, code: 101},
		{raw: "t=details&id=1&apikey=" + e.suspended, code: 101},
	} {
		name := c.raw
		if len(name) > 100 {
			name = name[:100]
		}
		t.Run(name, func(t *testing.T) {
			before := e.state(t)
			if c.code != 0 {
				e.apiError(t, c.raw, c.code)
			} else {
				d := e.feed(t, c.raw)
				got := titles(d)
				switch {
				case c.match != nil:
					var want []string
					for _, r := range e.byName {
						if c.match(r) {
							want = append(want, nzb.Text(r.Name))
						}
					}
					require.ElementsMatch(t, want, got)
				case c.want != nil:
					require.Equal(t, c.want, got)
				case c.items >= 0:
					require.Len(t, got, c.items, "%v", got)
				}
				total, err := strconv.Atoi(d.Channel.Response.Total)
				require.NoError(t, err)
				require.GreaterOrEqual(t, total, len(got))
				checkItems(t, e, d)
			}
			require.Equal(t, before, e.state(t), "nothing but counters changed")
		})
	}

	// A request that answers an error is counted only when its key is
	// checked: malformed ones are not.
	before := e.account(t, "alice").Requests
	e.apiError(t, "t=search&limit=-1"+k, 201)
	require.Equal(t, before, e.account(t, "alice").Requests)
	e.feed(t, "t=search"+k)
	require.Equal(t, before+1, e.account(t, "alice").Requests)

	// caps needs no key and counts nothing.
	res, body := e.get(t, "t=caps")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, newznab.XMLType, res.Header.Get("Content-Type"))
	caps := newznab.Decode[newznab.CapsDoc](t, body)
	require.Equal(t, "100", caps.Limits.Max)
	require.Equal(t, "50", caps.Limits.Default)
	require.Equal(t, e.srv.URL+"/", caps.Server.URL)
	e.docs = append(e.docs, body)

	// Another method answers an XML error too.
	res2, err := http.Post(e.srv.URL+"/api?t=search"+k, "text/plain", nil)
	require.NoError(t, err)
	body, err = io.ReadAll(res2.Body)
	res2.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusMethodNotAllowed, res2.StatusCode)
	require.Equal(t, newznab.XMLType, res2.Header.Get("Content-Type"))
	require.Equal(t, "202", newznab.Decode[newznab.ErrorDoc](t, body).Code)
}

// inCats matches the releases of categories ids or their subcategories.
func inCats(ids ...int) func(release.Release) bool {
	return func(r release.Release) bool {
		for _, id := range ids {
			if r.Category == id || (id%1000 == 0 && r.Category/1000*1000 == id) {
				return true
			}
		}
		return false
	}
}

// isEpisode matches the releases of a season (episode 0) or one episode.
func isEpisode(season, episode int) func(release.Release) bool {
	return func(r release.Release) bool {
		return r.Episode != nil && r.Episode.Season == season && (episode == 0 || r.Episode.Episode == episode)
	}
}

// checkItems checks each item of d against the release it names.
func checkItems(t *testing.T, e *apiEnv, d newznab.RSSDoc) {
	t.Helper()
	for _, it := range d.Channel.Items {
		a := newznab.ItemAttrs(it)
		require.Len(t, a["guid"], 1)
		id, err := strconv.ParseInt(a["guid"][0], 10, 64)
		require.NoError(t, err)
		r, err := e.store.ReleaseByID(t.Context(), id)
		require.NoError(t, err)
		require.Equal(t, nzb.Text(r.Name), it.Title)
		require.Equal(t, fmt.Sprintf("%s/details/%d", e.srv.URL, id), it.GUID.Value)
		require.Equal(t, it.GUID.Value+"#comments", it.Comments)
		require.Equal(t, it.Link, it.Enclosure.URL)
		require.Equal(t, strconv.FormatInt(r.Bytes, 10), it.Enclosure.Length)
		require.Equal(t, []string{strconv.FormatInt(r.Bytes, 10)}, a["size"])
		require.Equal(t, []string{strconv.Itoa(r.FilesSeen)}, a["files"])
		require.Equal(t, []string{nzb.Text(r.Poster)}, a["poster"])
		require.Equal(t, []string{r.Posted.Format(time.RFC1123Z)}, a["usenetdate"])
		require.Equal(t, r.Posted.Format(time.RFC1123Z), it.PubDate)
		require.Equal(t, newznab.CategoryName(r.Category), it.Category)
		require.Contains(t, a["category"], strconv.Itoa(r.Category))
		require.Equal(t, []string{"0"}, a["password"])
		var groups []string
		for _, g := range r.Groups {
			groups = append(groups, nzb.Text(g))
		}
		require.Equal(t, groups, a["group"])
		if ep := r.Episode; ep != nil {
			require.Equal(t, []string{strconv.Itoa(ep.Season)}, a["season"])
		} else {
			require.Nil(t, a["season"])
			require.Nil(t, a["episode"])
		}
		u, err := url.Parse(it.Enclosure.URL)
		require.NoError(t, err)
		require.Equal(t, "get", u.Query().Get("t"))
		require.Equal(t, a["guid"][0], u.Query().Get("id"))
		require.NotEmpty(t, u.Query().Get("apikey"))
	}
}

// testLimits: the request and grab limits answer 500 and 501 with the
// exact descriptions, and show in apilimits.
func testLimits(t *testing.T, e *apiEnv) {
	d := e.feed(t, "t=search&apikey="+e.reqLimited)
	require.Equal(t, "1", d.Channel.APILimits.APICurrent)
	require.Equal(t, "2", d.Channel.APILimits.APIMax)
	require.Equal(t, "0", d.Channel.APILimits.GrabCurrent)
	require.Empty(t, d.Channel.APILimits.GrabMax)
	d = e.feed(t, "t=search&apikey="+e.reqLimited)
	require.Equal(t, "2", d.Channel.APILimits.APICurrent)
	before := e.state(t)
	for range 2 {
		doc := e.apiError(t, "t=search&apikey="+e.reqLimited, 500)
		require.Equal(t, "Request limit reached", doc.Description)
	}
	require.Equal(t, int64(2), e.account(t, "req").Requests, "a refused request is not counted")
	require.Equal(t, before, e.state(t))
	// The next day counts again.
	e.clock.Advance(24 * time.Hour)
	e.feed(t, "t=search&apikey="+e.reqLimited)

	id := strconv.FormatInt(e.byName["Film.Title.2026.1080p.BluRay.x264-GRP"].ID, 10)
	res, _ := e.get(t, "t=get&id="+id+"&apikey="+e.grabLimited)
	require.Equal(t, nzb.ContentType, res.Header.Get("Content-Type"))
	d = e.feed(t, "t=search&apikey="+e.grabLimited)
	require.Equal(t, "1", d.Channel.APILimits.GrabCurrent)
	require.Equal(t, "1", d.Channel.APILimits.GrabMax)
	grabs := e.byName["Film.Title.2026.1080p.BluRay.x264-GRP"]
	r, err := e.store.ReleaseByID(t.Context(), grabs.ID)
	require.NoError(t, err)
	doc := e.apiError(t, "t=get&id="+id+"&apikey="+e.grabLimited, 501)
	require.Equal(t, "Download limit reached", doc.Description)
	again, err := e.store.ReleaseByID(t.Context(), grabs.ID)
	require.NoError(t, err)
	require.Equal(t, r.Grabs, again.Grabs, "a refused grab is not counted")
	require.Equal(t, int64(1), e.account(t, "grab").Grabs)
}

// testGet: get answers the NZB with its headers and counts a grab, and
// the enclosure URL of a feed, fetched as it stands, answers the same.
func testGet(t *testing.T, e *apiEnv) {
	ctx := context.Background()
	for _, name := range []string{"Show.Name.S01E02.720p.HDTV.x264-GRP", e.evil} {
		r, err := e.store.ReleaseByID(ctx, e.byName[name].ID)
		require.NoError(t, err)
		grabs := e.account(t, "alice").Grabs
		res, body := e.get(t, "t=get&id="+strconv.FormatInt(r.ID, 10)+"&apikey="+e.key)
		require.Equal(t, http.StatusOK, res.StatusCode, "%s", body)
		require.Equal(t, nzb.ContentType, res.Header.Get("Content-Type"))
		require.Equal(t, nzb.ContentDisposition(r.Name), res.Header.Get("Content-Disposition"))
		require.Equal(t, newznab.CategoryName(r.Category), res.Header.Get("X-DNZB-Category"))
		require.NotEmpty(t, res.Header.Get("X-DNZB-Name"))
		require.NotContains(t, res.Header.Get("X-DNZB-Name"), "\x01")
		var want bytes.Buffer
		require.NoError(t, nzb.Write(&want, r))
		require.Equal(t, want.String(), string(body))
		require.Equal(t, grabs+1, e.account(t, "alice").Grabs, "the user's grab is counted")
		after, err := e.store.ReleaseByID(ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, r.Grabs+1, after.Grabs, "the release's grab is counted")
		e.docs = append(e.docs, body)
	}

	d := e.feed(t, "t=search&q=film&apikey="+e.key)
	require.Len(t, d.Channel.Items, 1)
	res, body := e.get(t, d.Channel.Items[0].Enclosure.URL)
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", body)
	require.Equal(t, nzb.ContentType, res.Header.Get("Content-Type"))
	require.True(t, bytes.HasPrefix(body, []byte(nzb.Prolog)))
	e.docs = append(e.docs, body)

	// A grab of a release that is not there counts nothing.
	grabs := e.account(t, "alice").Grabs
	e.apiError(t, "t=get&id=424242&apikey="+e.key, 300)
	require.Equal(t, grabs, e.account(t, "alice").Grabs)
}
