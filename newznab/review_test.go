package newznab_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/internal/pgtest"
	"github.com/edgeindex/edgeindex/internal/syncbuf"
	"github.com/edgeindex/edgeindex/newznab"
	"github.com/edgeindex/edgeindex/nzb"
	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// do sends a request of method to u with headers (name, value pairs) and
// a cookie value (none when ""), and returns the response and its body.
func do(t *testing.T, method, u, cookie string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: newznab.CookieName, Value: cookie})
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res, body
}

// testHead: HEAD of t=get answers the NZB's headers and counts no grab,
// so a grab limit of 1 still lets the GET after it through.
func testHead(t *testing.T, e *apiEnv) {
	k, err := newznab.NewKey()
	require.NoError(t, err)
	require.NoError(t, e.store.AddUser(t.Context(), newznab.User{Name: "head", KeyHash: newznab.HashKey(k), GrabLimit: 1}))
	r := e.byName["Film.Title.2026.1080p.BluRay.x264-GRP"]
	u := e.srv.URL + "/api?t=get&id=" + strconv.FormatInt(r.ID, 10) + "&apikey=" + k
	before, err := e.store.ReleaseByID(t.Context(), r.ID)
	require.NoError(t, err)

	head, body := do(t, http.MethodHead, u, "")
	require.Equal(t, http.StatusOK, head.StatusCode)
	require.Empty(t, body)
	require.Equal(t, nzb.ContentType, head.Header.Get("Content-Type"))
	require.Equal(t, nzb.ContentDisposition(r.Name), head.Header.Get("Content-Disposition"))
	require.Zero(t, e.account(t, "head").Grabs, "a HEAD counts no grab")
	after, err := e.store.ReleaseByID(t.Context(), r.ID)
	require.NoError(t, err)
	require.Equal(t, before.Grabs, after.Grabs)

	res, body := do(t, http.MethodGet, u, "")
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", body)
	require.Equal(t, nzb.ContentType, res.Header.Get("Content-Type"))
	require.Equal(t, head.Header.Get("Content-Disposition"), res.Header.Get("Content-Disposition"))
	require.Equal(t, head.Header.Get("X-DNZB-Name"), res.Header.Get("X-DNZB-Name"))
	require.Empty(t, head.Header.Get("Content-Length"), "a HEAD builds no NZB to measure")
	require.Equal(t, int64(1), e.account(t, "head").Grabs)

	// The day's grab is used: HEAD says so as GET does, counting nothing.
	res, body = do(t, http.MethodHead, u, "")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, newznab.XMLType, res.Header.Get("Content-Type"))
	require.Empty(t, body)
	e.apiError(t, u, 501)
	require.Equal(t, int64(1), e.account(t, "head").Grabs)
}

// testNoCookie: /api reads only ?apikey=, never the page's cookie, so a
// link from another site spends nothing and no feed carries the cookie's
// key.
func testNoCookie(t *testing.T, e *apiEnv) {
	before := e.account(t, "alice")
	id := strconv.FormatInt(e.byName["Film.Title.2026.1080p.BluRay.x264-GRP"].ID, 10)
	for _, q := range []string{"t=get&id=" + id, "t=search"} {
		res, body := do(t, http.MethodGet, e.srv.URL+"/api?"+q, e.key)
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.Equal(t, "100", newznab.Decode[newznab.ErrorDoc](t, body).Code, q)
		require.NotContains(t, string(body), e.key)
	}
	after := e.account(t, "alice")
	require.Equal(t, before.Requests, after.Requests)
	require.Equal(t, before.Grabs, after.Grabs)
}

// testUnderAPI: every path under /api/ answers an XML error, 404.
func testUnderAPI(t *testing.T, e *apiEnv) {
	for _, path := range []string{"/api/", "/api/?t=caps", "/api/x/y?t=search&apikey=" + e.key} {
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			res, body := do(t, method, e.srv.URL+path, "")
			require.Equal(t, http.StatusNotFound, res.StatusCode, path)
			require.Equal(t, newznab.XMLType, res.Header.Get("Content-Type"), path)
			require.Equal(t, "202", newznab.Decode[newznab.ErrorDoc](t, body).Code, path)
		}
	}
}

// grabs is how many NZBs alice grabbed today.
func (w *pageWorld) grabs(t *testing.T) int64 {
	t.Helper()
	accounts, err := w.store.Accounts(t.Context(), now)
	require.NoError(t, err)
	for _, a := range accounts {
		if a.Name == "alice" {
			return a.Grabs
		}
	}
	t.Fatal("no alice")
	return 0
}

// TestPageNZB: the page's NZB link answers what t=get does, with the
// cookie or ?apikey=, and refuses what another site sent.
func TestPageNZB(t *testing.T) {
	forBackends(t, func(t *testing.T, w *pageWorld) {
		desert := w.release(t, "Desert.Movie.2023.2160p.UHD.BluRay-GRP")
		id := strconv.FormatInt(desert.ID, 10)
		link := w.srv.URL + "/nzb/" + id
		host := strings.TrimPrefix(w.srv.URL, "http://")

		// The API's answer, for comparison (a request and a grab).
		api, want := do(t, http.MethodGet, w.srv.URL+"/api?t=get&id="+id+"&apikey="+w.key, "")
		require.Equal(t, http.StatusOK, api.StatusCode)
		own := w.nzbLink(t, w.key, desert.ID) // the page's link, with its token

		for _, c := range []struct {
			name, u, cookie string
			headers         []string
		}{
			{"cookie", own, w.key, nil},
			{"apikey", link + "?apikey=" + w.key, "", nil},
			{"same-origin", own, w.key, []string{"Sec-Fetch-Site", "same-origin", "Referer", w.srv.URL + "/?q=desert"}},
			{"typed", own, w.key, []string{"Sec-Fetch-Site", "none"}},
		} {
			reqs, grabs := w.requests(t), w.grabs(t)
			res, body := do(t, http.MethodGet, c.u, c.cookie, c.headers...)
			require.Equal(t, http.StatusOK, res.StatusCode, "%s: %s", c.name, body)
			require.Equal(t, string(want), string(body), c.name)
			for _, h := range []string{"Content-Type", "Content-Disposition", "X-DNZB-Name", "X-DNZB-Category", "Content-Length"} {
				require.Equal(t, api.Header.Get(h), res.Header.Get(h), "%s: %s", c.name, h)
			}
			require.Equal(t, reqs+1, w.requests(t), c.name)
			require.Equal(t, grabs+1, w.grabs(t), c.name)
		}

		// HEAD: the headers, a request, no grab.
		reqs, grabs := w.requests(t), w.grabs(t)
		res, body := do(t, http.MethodHead, own, w.key)
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.Empty(t, body)
		require.Equal(t, api.Header.Get("Content-Disposition"), res.Header.Get("Content-Disposition"))
		require.Equal(t, reqs+1, w.requests(t))
		require.Equal(t, grabs, w.grabs(t), "a HEAD counts no grab")

		// Another site's link, however it shows, is refused and counts
		// nothing.
		for _, headers := range [][]string{
			{"Sec-Fetch-Site", "cross-site"},
			{"Sec-Fetch-Site", "same-site"},
			{"Origin", "https://evil.example"},
			{"Origin", "null"},
			{"Referer", "https://evil.example/page"},
			{"Sec-Fetch-Site", "same-origin", "Referer", "http://" + host + ".evil.example/"},
		} {
			reqs, grabs := w.requests(t), w.grabs(t)
			for _, u := range []string{own, link + "?apikey=" + w.key} {
				res, body := do(t, http.MethodGet, u, w.key, headers...)
				require.Equal(t, http.StatusForbidden, res.StatusCode, "%v", headers)
				require.Equal(t, "text/html; charset=utf-8", res.Header.Get("Content-Type"))
				require.Contains(t, string(body), "NZB links work only from this site")
				require.NotContains(t, string(body), w.key)
			}
			require.Equal(t, reqs, w.requests(t), "%v", headers)
			require.Equal(t, grabs, w.grabs(t), "%v", headers)
		}

		// No key: the form, which returns to the release. A bad id: 400,
		// nothing counted. An unknown one: 404.
		res, body = do(t, http.MethodGet, link, "")
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.Contains(t, string(body), `name="next" value="/details/`+id+`"`)
		reqs = w.requests(t)
		for _, bad := range []string{"0", "abc", "-1", "99999999999999999999"} {
			res, body = do(t, http.MethodGet, w.srv.URL+"/nzb/"+bad, w.key)
			require.Equal(t, http.StatusBadRequest, res.StatusCode, bad)
			require.Contains(t, string(body), "is not a release id")
		}
		require.Equal(t, reqs, w.requests(t), "a bad id counts nothing")
		res, body = do(t, http.MethodGet, w.srv.URL+"/nzb/987654321?apikey="+w.key, "")
		require.Equal(t, http.StatusNotFound, res.StatusCode)
		require.Contains(t, string(body), "There is no release 987654321.")

		// A grab limit reached is a 429 page.
		limited, err := newznab.NewKey()
		require.NoError(t, err)
		require.NoError(t, w.store.AddUser(t.Context(), newznab.User{Name: "one", KeyHash: newznab.HashKey(limited), GrabLimit: 1}))
		limitedLink := w.nzbLink(t, limited, desert.ID)
		res, _ = do(t, http.MethodHead, limitedLink, limited)
		require.Equal(t, http.StatusOK, res.StatusCode)
		res, _ = do(t, http.MethodGet, limitedLink, limited)
		require.Equal(t, http.StatusOK, res.StatusCode, "the HEAD before spent no grab")
		res, body = do(t, http.MethodGet, limitedLink, limited)
		require.Equal(t, http.StatusTooManyRequests, res.StatusCode)
		require.Contains(t, string(body), "daily download limit")
	})
}

// TestPageLoginOrigin: login and logout refuse a form another site sent,
// whether the browser says so with Sec-Fetch-Site or only with Origin or
// Referer.
func TestPageLoginOrigin(t *testing.T) {
	forBackends(t, func(t *testing.T, w *pageWorld) {
		form := "apikey=" + w.key
		post := func(path, cookie string, headers ...string) *http.Response {
			req, err := http.NewRequest(http.MethodPost, w.srv.URL+path, strings.NewReader(form))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			for i := 0; i+1 < len(headers); i += 2 {
				req.Header.Set(headers[i], headers[i+1])
			}
			if cookie != "" {
				req.AddCookie(&http.Cookie{Name: newznab.CookieName, Value: cookie})
			}
			res, err := client(t).Do(req)
			require.NoError(t, err)
			read(t, res)
			return res
		}
		for _, headers := range [][]string{
			{"Origin", "https://evil.example"},
			{"Referer", "https://evil.example/login.html"},
			{"Origin", "null"},
			{"Sec-Fetch-Site", "same-site"},
			{"Sec-Fetch-Site", "cross-site"},
		} {
			before := w.requests(t)
			res := post("/login", "", headers...)
			require.Equal(t, http.StatusForbidden, res.StatusCode, "%v", headers)
			require.Empty(t, res.Cookies(), "%v", headers)
			require.Equal(t, before, w.requests(t))
			res = post("/logout", w.key, headers...)
			require.Equal(t, http.StatusForbidden, res.StatusCode, "%v", headers)
			require.Empty(t, res.Cookies(), "the cookie stays: %v", headers)
		}
		// This site's own form, as a browser sends it: with its Origin
		// (the page's referrer policy is same-origin), and with
		// Sec-Fetch-Site only on HTTPS or localhost.
		res := post("/login", "", "Origin", w.srv.URL, "Sec-Fetch-Site", "same-origin")
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		require.NotEmpty(t, res.Cookies())
		// Over plain HTTP to a LAN address: no Fetch Metadata at all.
		res = post("/login", "", "Origin", w.srv.URL)
		require.Equal(t, http.StatusSeeOther, res.StatusCode, "a same-origin form without Sec-Fetch-Site")
		require.NotEmpty(t, res.Cookies())
		// Origin: null is an opaque origin (a sandboxed frame, a data:
		// URL), never the page's own form: refused, whatever else the
		// request says.
		for _, headers := range [][]string{{"Origin", "null"}, {"Origin", "null", "Sec-Fetch-Site", "same-origin"}} {
			before := w.requests(t)
			res = post("/login", "", headers...)
			require.Equal(t, http.StatusForbidden, res.StatusCode, "%v", headers)
			require.Empty(t, res.Cookies(), "%v", headers)
			require.Equal(t, before, w.requests(t), "%v", headers)
		}
		res = post("/logout", w.key, "Origin", w.srv.URL, "Sec-Fetch-Site", "same-origin")
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
	})
}

// blockingStore is the real store but for SearchReleases and
// ReleaseDetails, which, when asked to, wait for their context to end: a
// store slower than any deadline. entered is closed when one starts
// waiting.
type blockingStore struct {
	*sqlstore.Store
	search, byID bool
	entered      chan struct{}
	hadDeadline  chan bool
}

func (s *blockingStore) wait(ctx context.Context) {
	_, ok := ctx.Deadline()
	s.hadDeadline <- ok
	close(s.entered)
	<-ctx.Done()
}

func (s *blockingStore) SearchReleases(ctx context.Context, q release.Search) (release.Found, error) {
	if s.search {
		s.wait(ctx)
		return release.Found{}, fmt.Errorf("search: %w", ctx.Err())
	}
	return s.Store.SearchReleases(ctx, q)
}

func (s *blockingStore) ReleaseDetails(ctx context.Context, id int64, files int) (release.Release, error) {
	if s.byID {
		s.wait(ctx)
		// The store finished just as the client left.
		return s.Store.ReleaseDetails(context.WithoutCancel(ctx), id, files)
	}
	return s.Store.ReleaseDetails(ctx, id, files)
}

// slowWorld serves a handler over w's store behind a blockingStore, with
// its log in logs; done receives once per request the handler finished.
func slowWorld(t *testing.T, w *pageWorld, s *blockingStore, timeout time.Duration) (srv *httptest.Server, logs *syncbuf.Buffer, done chan struct{}) {
	t.Helper()
	s.Store, s.entered, s.hadDeadline = w.store, make(chan struct{}), make(chan bool, 1)
	logs = &syncbuf.Buffer{}
	h, err := newznab.New(newznab.Config{Store: s, Now: func() time.Time { return now }, Timeout: timeout,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	require.NoError(t, err)
	done = make(chan struct{}, 10)
	srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		defer func() { done <- struct{}{} }()
		h.ServeHTTP(rw, r)
	}))
	t.Cleanup(srv.Close)
	return srv, logs, done
}

// TestDeadline: a search the store does not finish within Config.Timeout
// answers 900 (a 503 page) and logs a warning, not an error, that names
// the user and the query's shape but neither the key nor the words.
func TestDeadline(t *testing.T) {
	forBackends(t, func(t *testing.T, w *pageWorld) {
		for _, path := range []string{"/api?t=search&q=ocean&apikey=" + w.key, "/?q=ocean&apikey=" + w.key} {
			s := &blockingStore{search: true}
			srv, logs, _ := slowWorld(t, w, s, 50*time.Millisecond)
			res, body := do(t, http.MethodGet, srv.URL+path, "")
			require.True(t, <-s.hadDeadline, "the store's context has a deadline")
			if strings.HasPrefix(path, "/api") {
				require.Equal(t, http.StatusInternalServerError, res.StatusCode)
				require.Equal(t, "900", newznab.Decode[newznab.ErrorDoc](t, body).Code)
			} else {
				require.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
				require.Contains(t, string(body), "took too long")
			}
			require.Contains(t, logs.String(), "level=WARN")
			require.Contains(t, logs.String(), "deadline passed")
			require.Contains(t, logs.String(), "user=alice", "the log names the user")
			require.NotContains(t, logs.String(), w.key, "never the key")
			require.NotContains(t, logs.String(), "ocean", "nor the words")
			if strings.HasPrefix(path, "/api") {
				require.Contains(t, logs.String(), `query="q t=search"`)
			} else {
				require.Contains(t, logs.String(), `query=q `)
			}
			require.NotContains(t, logs.String(), "level=ERROR")
		}
		_, err := newznab.New(newznab.Config{Store: w.store, Timeout: -time.Second})
		require.Error(t, err)
	})
}

// TestClientLeaves: a client that leaves mid-request is no internal
// error: nothing is logged as one, and nothing more is counted.
func TestClientLeaves(t *testing.T) {
	forBackends(t, func(t *testing.T, w *pageWorld) {
		desert := w.release(t, "Desert.Movie.2023.2160p.UHD.BluRay-GRP")
		id := strconv.FormatInt(desert.ID, 10)
		for _, c := range []struct {
			path string
			s    *blockingStore
		}{
			{"/api?t=search&q=ocean&apikey=" + w.key, &blockingStore{search: true}},
			{"/api?t=get&id=" + id + "&apikey=" + w.key, &blockingStore{byID: true}},
			{"/?q=ocean&apikey=" + w.key, &blockingStore{search: true}},
			{"/nzb/" + id + "?apikey=" + w.key, &blockingStore{byID: true}},
		} {
			srv, logs, done := slowWorld(t, w, c.s, time.Minute)
			reqs, grabs := w.requests(t), w.grabs(t)
			ctx, cancel := context.WithCancel(t.Context())
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+c.path, nil)
			require.NoError(t, err)
			go func() { <-c.s.entered; cancel() }()
			_, err = http.DefaultClient.Do(req)
			require.ErrorIs(t, err, context.Canceled)
			<-done
			require.Equal(t, reqs+1, w.requests(t), "the request was counted before the client left: %s", c.path)
			require.Equal(t, grabs, w.grabs(t), "no grab after the client left: %s", c.path)
			require.NotContains(t, logs.String(), "level=ERROR", c.path)
			require.Contains(t, logs.String(), "the client left", c.path)
		}
	})
}

// TestPageCountsAfterCheck: a page request is counted only once its query
// is checked, as the API's are.
func TestPageCountsAfterCheck(t *testing.T) {
	t.Parallel()
	w := newPageWorld(t, pgtest.Backends[0].URL(t), standardPostings()[:1])
	for _, path := range []string{"/?page=abc", "/?q=" + strings.Repeat("x", 300), "/?cat=12345", "/details/abc", "/details/0", "/nzb/0"} {
		before := w.requests(t)
		code, _ := w.get(t, path, true)
		require.Equal(t, http.StatusBadRequest, code, path)
		require.Equal(t, before, w.requests(t), path)
	}
	code, _ := w.get(t, "/?q=ocean", true)
	require.Equal(t, http.StatusOK, code)
}
