package newznab_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/internal/pgtest"
	"github.com/edgeindex/edgeindex/internal/syncbuf"
	"github.com/edgeindex/edgeindex/newznab"
	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/sqlstore"
	"github.com/edgeindex/edgeindex/usenet"
)

// now is the tests' clock: release ages and the daily counts go by it.
var now = time.Date(2026, 6, 10, 12, 0, 0, 0, time.UTC)

// posting is one release as a test posts it to the results feed: files
// of parts of partBytes each, every part seen.
type posting struct {
	name      string // the set name; files are NAME.partN.rar
	poster    string
	age       time.Duration
	files     int
	parts     int
	partBytes int64
}

// evilName is a release name with markup, quotes and control bytes.
const evilName = "Evil.<script>document.title='pwned'</script>.&amp;.\x1b[31m.\x7f"

// pageWorld is a handler over a real store, with releases built from the
// results feed by release.Builder, and a user with a key.
type pageWorld struct {
	store  *sqlstore.Store
	srv    *httptest.Server
	key    string // alice's: no limits
	logs   *syncbuf.Buffer
	byName map[string]release.Release
}

// standardPostings are the releases most tests search: three named ones,
// a hostile name, and 55 of a series to page through.
func standardPostings() []posting {
	ps := []posting{
		{"Ocean.Documentary.2024.1080p.WEB.x264-GRP", "Alice <alice@example.test>", 3 * 24 * time.Hour, 2, 3, 400_000_000},
		{"Ocean.Drama.S01E02.720p.HDTV.x264-GRP", "Bob <bob@example.test>", 5 * time.Hour, 1, 2, 350_000_000},
		{"Desert.Movie.2023.2160p.UHD.BluRay-GRP", "Carol <carol@example.test>", 10 * 24 * time.Hour, 3, 2, 1_000_000_000},
		{evilName, "Mallory \"<script>alert(1)</script>\" <m@example.test>", 2 * time.Hour, 1, 1, 1000},
	}
	for i := 1; i <= 55; i++ {
		ps = append(ps, posting{fmt.Sprintf("Paging.Series.E%02d.480p", i), "Pat <pat@example.test>",
			time.Duration(20+i) * time.Hour, 1, 1, 100_000})
	}
	return ps
}

// newPageWorld opens a store at url, stores ps as a worker would, builds
// their releases and serves a handler over them.
func newPageWorld(t *testing.T, url string, ps []posting) *pageWorld {
	t.Helper()
	ctx := t.Context()
	s, err := sqlstore.Open(ctx, url, sqlstore.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })

	const group = "alt.binaries.pagetest"
	var bins []usenet.Binary
	article := int64(0)
	for _, p := range ps {
		date := now.Add(-p.age).Format(time.RFC1123Z)
		for f := 1; f <= p.files; f++ {
			sub, ok := usenet.ParseSubject(fmt.Sprintf(`[%d/%d] - "%s.part%d.rar" yEnc (1/%d)`, f, p.files, p.name, f, p.parts))
			require.True(t, ok, p.name)
			b := usenet.Binary{Subject: sub.Base, Name: sub.Name, Poster: p.poster, Group: group, Date: date,
				Total: p.parts, Complete: true}
			for n := 1; n <= p.parts; n++ {
				article++
				b.Parts = append(b.Parts, usenet.Part{N: n, Article: article,
					MessageID: fmt.Sprintf("<%d.page@example.test>", article), Bytes: p.partBytes})
			}
			bins = append(bins, b)
		}
	}
	require.Less(t, article, int64(1000))
	buildReleases(t, s, nil, group, "page-test", 1000, bins)

	w := &pageWorld{store: s, logs: &syncbuf.Buffer{}, byName: map[string]release.Release{}}
	w.key, err = newznab.NewKey()
	require.NoError(t, err)
	require.NoError(t, s.AddUser(ctx, newznab.User{Name: "alice", KeyHash: newznab.HashKey(w.key)}))
	for cursor := ""; ; {
		p, err := s.Releases(ctx, release.Query{After: cursor, Limit: 100})
		require.NoError(t, err)
		if len(p.Releases) == 0 {
			break
		}
		for _, r := range p.Releases {
			full, err := s.ReleaseByID(ctx, r.ID)
			require.NoError(t, err)
			w.byName[r.Name] = full
		}
		cursor = p.Next
	}
	require.Len(t, w.byName, len(ps), "one release per posting")

	h, err := newznab.New(newznab.Config{Store: s, Now: func() time.Time { return now },
		Logger: slog.New(slog.NewTextHandler(w.logs, nil))})
	require.NoError(t, err)
	w.srv = httptest.NewServer(h)
	t.Cleanup(w.srv.Close)
	return w
}

// release is the built release of set name.
func (w *pageWorld) release(t *testing.T, name string) release.Release {
	t.Helper()
	r, ok := w.byName[name]
	require.True(t, ok, "no release %q", name)
	return r
}

// get fetches path (with the key as ?apikey= when withKey) and returns
// the status and body.
func (w *pageWorld) get(t *testing.T, path string, withKey bool) (int, string) {
	t.Helper()
	u := w.srv.URL + path
	if withKey {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		u += sep + "apikey=" + w.key
	}
	res, err := http.Get(u)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, "text/html; charset=utf-8", res.Header.Get("Content-Type"), u)
	return res.StatusCode, string(body)
}

// requests is how many requests alice made today.
func (w *pageWorld) requests(t *testing.T) int64 {
	t.Helper()
	accounts, err := w.store.Accounts(t.Context(), now)
	require.NoError(t, err)
	for _, a := range accounts {
		if a.Name == "alice" {
			return a.Requests
		}
	}
	t.Fatal("no alice")
	return 0
}

var rowTitle = regexp.MustCompile(`<td class="title"><a href="[^"]*">([^<]*)</a>`)

// rowTitles lists the result rows' titles, unescaped as a browser shows them.
func rowTitles(body string) []string {
	var out []string
	for _, m := range rowTitle.FindAllStringSubmatch(body, -1) {
		out = append(out, htmlUnescape(m[1]))
	}
	return out
}

func htmlUnescape(s string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&#34;", `"`, "&#39;", "'", "&#43;", "+", "&amp;", "&").Replace(s)
}

// forBackends runs test on a fresh world of the standard postings on each
// backend.
func forBackends(t *testing.T, test func(t *testing.T, w *pageWorld)) {
	t.Parallel()
	for _, b := range pgtest.Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			test(t, newPageWorld(t, b.URL(t), standardPostings()))
		})
	}
}

func TestPageSearch(t *testing.T) {
	forBackends(t, func(t *testing.T, w *pageWorld) {
		before := w.requests(t)
		code, body := w.get(t, "/?q="+url.QueryEscape("ocean x264"), true)
		require.Equal(t, http.StatusOK, code, body)
		require.Equal(t, before+1, w.requests(t), "a page view is a request under the key")
		// Newest first: the drama is 5 hours old, the documentary 3 days.
		require.Equal(t, []string{"Ocean.Drama.S01E02.720p.HDTV.x264-GRP", "Ocean.Documentary.2024.1080p.WEB.x264-GRP"}, rowTitles(body))
		require.Contains(t, body, `1–2 of 2 releases`)

		doc := w.release(t, "Ocean.Documentary.2024.1080p.WEB.x264-GRP")
		row := rowOf(t, body, doc.ID)
		require.Contains(t, row, `<td class="category" data-label="Category">`+htmlEscape(categoryText(doc.Category))+`</td>`)
		require.Contains(t, row, `>2.4 GB</td>`, "2 files of 3 parts of 400 MB")
		require.Contains(t, row, `>3 days</td>`)
		require.Contains(t, row, `>2/2</td>`, "files seen/expected")
		require.Contains(t, row, `>100%</td>`)
		require.Contains(t, row, `>0</td>`, "grabs")
		// The page's NZB link with the key, since the key came in the URL.
		require.Contains(t, row, fmt.Sprintf(`href="/nzb/%d?apikey=%s"`, doc.ID, w.key))
		require.Contains(t, row, fmt.Sprintf(`href="/details/%d?apikey=%s"`, doc.ID, w.key))

		// A search no release matches says so.
		code, body = w.get(t, "/?q=nothing+matches+this", true)
		require.Equal(t, http.StatusOK, code)
		require.Empty(t, rowTitles(body))
		require.Contains(t, body, "No releases found for “nothing matches this”")
	})
}

// categoryText is how the page names a category: as the API does.
func categoryText(id int) string { return newznab.CategoryName(id) }

func htmlEscape(s string) string { return strings.NewReplacer(">", "&gt;", "<", "&lt;").Replace(s) }

// rowOf is the result row of release id.
func rowOf(t *testing.T, body string, id int64) string {
	t.Helper()
	start := strings.Index(body, fmt.Sprintf(`<tr class="release" data-id="%d">`, id))
	require.GreaterOrEqual(t, start, 0, "no row of release %d", id)
	end := strings.Index(body[start:], "</tr>")
	require.Greater(t, end, 0)
	return body[start : start+end]
}

func TestPageCategoryFilter(t *testing.T) {
	forBackends(t, func(t *testing.T, w *pageWorld) {
		// Whatever the categories the names get, the filter keeps exactly
		// the releases of the one asked, and of its subcategories for a
		// parent.
		doc := w.release(t, "Ocean.Documentary.2024.1080p.WEB.x264-GRP")
		for _, cat := range []int{doc.Category, doc.Category / 1000 * 1000} {
			var want []string
			for name, r := range w.byName {
				if r.Category == cat || (cat%1000 == 0 && r.Category/1000*1000 == cat) {
					if strings.Contains(name, "Ocean") {
						want = append(want, name)
					}
				}
			}
			code, body := w.get(t, fmt.Sprintf("/?q=ocean&cat=%d", cat), true)
			require.Equal(t, http.StatusOK, code)
			require.ElementsMatch(t, want, rowTitles(body), "cat=%d", cat)
			require.Contains(t, body, fmt.Sprintf(`<option value="%d" selected>`, cat), "the select keeps the choice")
		}
		// A category no release has lists nothing.
		used := map[int]bool{}
		for _, r := range w.byName {
			used[r.Category/1000*1000] = true
		}
		for _, parent := range []int{1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000} {
			if !used[parent] {
				code, body := w.get(t, fmt.Sprintf("/?cat=%d", parent), true)
				require.Equal(t, http.StatusOK, code)
				require.Empty(t, rowTitles(body), "cat=%d", parent)
				require.Contains(t, body, "No releases found")
				break
			}
		}
	})
}

var hrefOf = func(class string) *regexp.Regexp {
	return regexp.MustCompile(`class="` + class + `" href="([^"]*)"`)
}

func TestPagePaging(t *testing.T) {
	forBackends(t, func(t *testing.T, w *pageWorld) {
		code, body := w.get(t, "/?q=paging+series", true)
		require.Equal(t, http.StatusOK, code)
		got := rowTitles(body)
		require.Len(t, got, newznab.PageSize)
		require.Equal(t, "Paging.Series.E01.480p", got[0], "newest first")
		require.Contains(t, body, "1–50 of 55 releases")
		require.Contains(t, body, "Page 1 of 2")
		require.NotRegexp(t, hrefOf("prev"), body, "no previous page on the first")
		next := hrefOf("next").FindStringSubmatch(body)
		require.NotNil(t, next, "a next link")
		require.Equal(t, "/?apikey="+w.key+"&page=2&q=paging+series", htmlUnescape(next[1]))

		code, body = w.get(t, htmlUnescape(next[1]), false)
		require.Equal(t, http.StatusOK, code)
		got2 := rowTitles(body)
		require.Len(t, got2, 5)
		require.Equal(t, "Paging.Series.E55.480p", got2[4])
		require.Contains(t, body, "51–55 of 55 releases")
		require.NotRegexp(t, hrefOf("next"), body, "no next page on the last")
		prev := hrefOf("prev").FindStringSubmatch(body)
		require.NotNil(t, prev)
		require.Equal(t, "/?apikey="+w.key+"&q=paging+series", htmlUnescape(prev[1]))
		for _, title := range got2 {
			require.NotContains(t, got, title, "pages do not overlap")
		}

		// Past the last page: no rows, a notice, no error.
		code, body = w.get(t, "/?q=paging+series&page=9", true)
		require.Equal(t, http.StatusOK, code)
		require.Empty(t, rowTitles(body))
		require.Contains(t, body, "Page 9 is past the last page, 2.")
	})
}

// client is a browser-like client: it keeps cookies and does not follow
// redirects, so a test sees them.
func client(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func read(t *testing.T, res *http.Response) string {
	t.Helper()
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return string(b)
}

func TestPageLogin(t *testing.T) {
	forBackends(t, func(t *testing.T, w *pageWorld) {
		c := client(t)
		// Without a key the page is the key form.
		res, err := c.Get(w.srv.URL + "/")
		require.NoError(t, err)
		body := read(t, res)
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.Contains(t, body, `<form class="key card" method="post" action="/login">`)
		require.Contains(t, body, `name="apikey"`)
		require.Empty(t, rowTitles(body))

		// A wrong key: the form again, with why, and no cookie.
		before := w.requests(t)
		res, err = c.PostForm(w.srv.URL+"/login", url.Values{"apikey": {"0123456789abcdef0123456789abcdef"}})
		require.NoError(t, err)
		body = read(t, res)
		require.Equal(t, http.StatusForbidden, res.StatusCode)
		require.Contains(t, body, "That API key is not known here.")
		require.Contains(t, body, `action="/login"`)
		require.Empty(t, res.Cookies())
		for _, bad := range []string{"", strings.Repeat("a", 200), "a b;c"} {
			res, err = c.PostForm(w.srv.URL+"/login", url.Values{"apikey": {bad}})
			require.NoError(t, err)
			body = read(t, res)
			require.Equal(t, http.StatusBadRequest, res.StatusCode, "%q", bad)
			require.Contains(t, body, `action="/login"`)
			require.Empty(t, res.Cookies())
		}
		require.Equal(t, before, w.requests(t), "refused keys count nothing of alice's")

		// The right key: a 303 to the page and an HttpOnly, SameSite=Lax
		// cookie, not Secure over plain HTTP.
		res, err = c.PostForm(w.srv.URL+"/login", url.Values{"apikey": {w.key}})
		require.NoError(t, err)
		read(t, res)
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		require.Equal(t, "/", res.Header.Get("Location"))
		cookie := res.Header.Get("Set-Cookie")
		require.Contains(t, cookie, newznab.CookieName+"="+w.key)
		require.Contains(t, cookie, "HttpOnly")
		require.Contains(t, cookie, "SameSite=Lax")
		require.Contains(t, cookie, "Path=/")
		require.NotContains(t, cookie, "Secure")
		require.Equal(t, before+1, w.requests(t))

		// With the cookie the page searches, and its links carry no key:
		// the NZB link is a page route, which reads the cookie too.
		res, err = c.Get(w.srv.URL + "/?q=desert")
		require.NoError(t, err)
		body = read(t, res)
		require.Equal(t, http.StatusOK, res.StatusCode)
		desert := w.release(t, "Desert.Movie.2023.2160p.UHD.BluRay-GRP")
		require.Equal(t, []string{desert.Name}, rowTitles(body))
		require.Contains(t, body, fmt.Sprintf(`href="/nzb/%d?t=`, desert.ID))
		require.NotContains(t, body, w.key, "the key is nowhere in the page")
		require.Contains(t, body, `action="/logout"`)
		require.Contains(t, body, "alice")

		// A details page asked without a key returns there after the form.
		res, err = http.Get(fmt.Sprintf("%s/details/%d", w.srv.URL, desert.ID))
		require.NoError(t, err)
		body = read(t, res)
		require.Contains(t, body, fmt.Sprintf(`name="next" value="/details/%d"`, desert.ID))
		res, err = client(t).PostForm(w.srv.URL+"/login", url.Values{"apikey": {w.key}, "next": {fmt.Sprintf("/details/%d", desert.ID)}})
		require.NoError(t, err)
		read(t, res)
		require.Equal(t, fmt.Sprintf("/details/%d", desert.ID), res.Header.Get("Location"))
		res, err = client(t).PostForm(w.srv.URL+"/login", url.Values{"apikey": {w.key}, "next": {"//evil.example/"}})
		require.NoError(t, err)
		read(t, res)
		require.Equal(t, "/", res.Header.Get("Location"), "the form returns only to this site's pages")

		// Another site's form is refused.
		req, err := http.NewRequest(http.MethodPost, w.srv.URL+"/login", strings.NewReader("apikey="+w.key))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		res, err = http.DefaultClient.Do(req)
		require.NoError(t, err)
		read(t, res)
		require.Equal(t, http.StatusForbidden, res.StatusCode)
		require.Empty(t, res.Cookies())

		// Logout clears the cookie; the page is the form again.
		res, err = c.Post(w.srv.URL+"/logout", "application/x-www-form-urlencoded", nil)
		require.NoError(t, err)
		read(t, res)
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		require.Equal(t, "/", res.Header.Get("Location"))
		cookie = res.Header.Get("Set-Cookie")
		require.Contains(t, cookie, newznab.CookieName+"=;")
		require.Contains(t, cookie, "Max-Age=0")
		require.Contains(t, cookie, "HttpOnly")
		res, err = c.Get(w.srv.URL + "/")
		require.NoError(t, err)
		body = read(t, res)
		require.Contains(t, body, `action="/login"`)
	})
}

func TestPageLoginSecureOverTLS(t *testing.T) {
	t.Parallel()
	s, err := sqlstore.Open(t.Context(), pgtest.Backends[0].URL(t), sqlstore.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	key, err := newznab.NewKey()
	require.NoError(t, err)
	require.NoError(t, s.AddUser(t.Context(), newznab.User{Name: "tls", KeyHash: newznab.HashKey(key)}))
	h, err := newznab.New(newznab.Config{Store: s})
	require.NoError(t, err)
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	c := srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := c.PostForm(srv.URL+"/login", url.Values{"apikey": {key}})
	require.NoError(t, err)
	read(t, res)
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	cookie := res.Header.Get("Set-Cookie")
	require.Contains(t, cookie, "Secure")
	require.Contains(t, cookie, "HttpOnly")
	require.Contains(t, cookie, "SameSite=Lax")
}

func TestPageBadKeyAndLimits(t *testing.T) {
	forBackends(t, func(t *testing.T, w *pageWorld) {
		ctx := t.Context()
		// An unknown key in the URL: the form with why, not a 500.
		code, body := w.get(t, "/?apikey=0123456789abcdef0123456789abcdef", false)
		require.Equal(t, http.StatusForbidden, code)
		require.Contains(t, body, "That API key is not known here.")
		require.Contains(t, body, `action="/login"`)

		// A stale cookie is refused and cleared.
		req, err := http.NewRequest(http.MethodGet, w.srv.URL+"/", nil)
		require.NoError(t, err)
		req.AddCookie(&http.Cookie{Name: newznab.CookieName, Value: "feedfacefeedfacefeedfacefeedface"})
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body = read(t, res)
		require.Equal(t, http.StatusForbidden, res.StatusCode)
		require.Contains(t, body, "That API key is not known here.")
		require.Contains(t, res.Header.Get("Set-Cookie"), "Max-Age=0")

		// A key with a daily limit of 2: the third view says so.
		limited, err := newznab.NewKey()
		require.NoError(t, err)
		require.NoError(t, w.store.AddUser(ctx, newznab.User{Name: "bob", KeyHash: newznab.HashKey(limited), RequestLimit: 2}))
		for range 2 {
			code, _ := w.get(t, "/?apikey="+limited, false)
			require.Equal(t, http.StatusOK, code)
		}
		code, body = w.get(t, "/?apikey="+limited, false)
		require.Equal(t, http.StatusTooManyRequests, code)
		require.Contains(t, body, "This key has reached its daily request limit.")
		require.NotContains(t, body, limited, "links do not carry a refused key")

		// A suspended account.
		require.NoError(t, w.store.SuspendUser(ctx, "bob", true))
		code, body = w.get(t, "/?apikey="+limited, false)
		require.Equal(t, http.StatusForbidden, code)
		require.Contains(t, body, "suspended")
	})
}

func TestPageBadInput(t *testing.T) {
	forBackends(t, func(t *testing.T, w *pageWorld) {
		cases := map[string]string{
			"/?q=" + strings.Repeat("x", newznab.MaxSearchText+1):                   "at most 256 are allowed",
			"/?q=" + strings.Repeat("w+", 10) + "a+b+c+d+e+f+g+h+i+j+k+l+m+n+o+p+q": "has 18 words; at most 16",
			"/?q=" + strings.Repeat("y", release.MaxSearchWord+1):                   "A word of the search is 65 bytes long",
			"/?cat=garbage":                  `The category &#34;garbage&#34; is not one of the list.`,
			"/?cat=5041":                     "is not one of the list",
			"/?cat=-5000":                    "is not one of the list",
			"/?page=-1":                      "is not a number from 1 to 201",
			"/?page=0":                       "is not a number from 1 to 201",
			"/?page=202":                     "is not a number from 1 to 201",
			"/?page=1e3":                     "is not a number from 1 to 201",
			"/?page=99999999999999999999999": "is not a number from 1 to 201",
			"/details/abc":                   "is not a release id",
			"/details/-3":                    "is not a release id",
			"/details/0":                     "is not a release id",
		}
		for path, want := range cases {
			before := w.requests(t)
			code, body := w.get(t, path, true)
			require.Equal(t, http.StatusBadRequest, code, path)
			require.Contains(t, body, want, path)
			require.Contains(t, body, `class="message error"`, path)
			require.Equal(t, before, w.requests(t), "a bad query counts nothing: %s", path)
		}
		// The bad search is echoed back, escaped, in the search box.
		code, body := w.get(t, "/?q=%3Cb%3E&cat=garbage", true)
		require.Equal(t, http.StatusBadRequest, code)
		require.Contains(t, body, `value="&lt;b&gt;"`)
	})
}

func TestPageHostileNames(t *testing.T) {
	forBackends(t, func(t *testing.T, w *pageWorld) {
		evil := w.release(t, evilName)
		code, body := w.get(t, "/?q=evil+script", true)
		require.Equal(t, http.StatusOK, code)
		require.Len(t, rowTitles(body), 1)
		code, details := w.get(t, fmt.Sprintf("/details/%d", evil.ID), true)
		require.Equal(t, http.StatusOK, code)
		for _, page := range []string{body, details} {
			require.NotContains(t, page, "<script", "markup stays text")
			require.Contains(t, page, "Evil.&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;.&amp;amp;.")
			require.NotContains(t, page, "\x1b")
			require.NotContains(t, page, "\x7f")
			require.Contains(t, page, "\uFFFD[31m.\uFFFD", "control bytes show as U+FFFD")
		}
		require.Contains(t, details, "Mallory &#34;&lt;script&gt;alert(1)&lt;/script&gt;&#34; &lt;m@example.test&gt;")
		// The rest of the page is whole: a script never ran or was cut in.
		require.Contains(t, details, "</html>")
	})
}

func TestPageDetails(t *testing.T) {
	forBackends(t, func(t *testing.T, w *pageWorld) {
		desert := w.release(t, "Desert.Movie.2023.2160p.UHD.BluRay-GRP")
		code, body := w.get(t, fmt.Sprintf("/details/%d", desert.ID), true)
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, `<h1 class="name">Desert.Movie.2023.2160p.UHD.BluRay-GRP</h1>`)
		require.Contains(t, body, `<dd class="category">`+htmlEscape(categoryText(desert.Category))+`</dd>`)
		require.Contains(t, body, `<dd class="size">6.0 GB`, "3 files of 2 parts of 1 GB")
		require.Contains(t, body, `<dd class="posted">2026-05-31 12:00 UTC (10 days ago)</dd>`)
		require.Contains(t, body, `<dd class="poster">Carol &lt;carol@example.test&gt;</dd>`)
		require.Contains(t, body, `<li class="group">alt.binaries.pagetest</li>`)
		require.Contains(t, body, `<dd class="files">3/3</dd>`)
		require.Contains(t, body, `<dd class="parts">6/6`)
		for i := 1; i <= 3; i++ {
			require.Contains(t, body, fmt.Sprintf(`<td class="title">Desert.Movie.2023.2160p.UHD.BluRay-GRP.part%d.rar</td>`, i))
		}
		require.Equal(t, 3, strings.Count(body, `<td class="num size" data-label="Size">2.0 GB</td>`))
		require.Equal(t, 3, strings.Count(body, `data-label="Parts">2/2</td>`))
		require.Contains(t, body, fmt.Sprintf(`href="/nzb/%d?apikey=%s"`, desert.ID, w.key))

		// An unknown id is a 404 page in HTML.
		code, body = w.get(t, "/details/987654321", true)
		require.Equal(t, http.StatusNotFound, code)
		require.Contains(t, body, "There is no release 987654321.")
		require.Contains(t, body, "</html>")
	})
}

func TestPageInternalError(t *testing.T) {
	forBackends(t, func(t *testing.T, w *pageWorld) {
		require.NoError(t, w.store.Close())
		code, body := w.get(t, "/?q=ocean", true)
		require.Equal(t, http.StatusInternalServerError, code)
		require.Contains(t, body, "Something went wrong on the server.")
		require.NotContains(t, body, "closed", "the cause is logged, not shown")
		require.Contains(t, w.logs.String(), "newznab page")
	})
}
