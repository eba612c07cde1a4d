package newznab_test

import (
	"context"
	"fmt"
	"html"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/internal/syncbuf"
	"github.com/edgeindex/edgeindex/newznab"
	"github.com/edgeindex/edgeindex/release"
)

var nzbHref = regexp.MustCompile(`class="nzb" href="([^"]+)"`)

// nzbLink is the NZB link the details page of release id shows to a
// browser whose cookie holds key, as an absolute URL.
func (w *pageWorld) nzbLink(t *testing.T, key string, id int64) string {
	t.Helper()
	res, body := do(t, http.MethodGet, w.srv.URL+"/details/"+strconv.FormatInt(id, 10), key)
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", body)
	m := nzbHref.FindSubmatch(body)
	require.NotNil(t, m, "the details page has an NZB link")
	return w.srv.URL + html.UnescapeString(string(m[1]))
}

// TestPageNZBToken: over plain HTTP a browser may send no Fetch Metadata,
// Origin or Referer with a link another site made, so a key from the
// cookie needs the token of the page's own link; without it, or with a
// wrong one, /nzb/{id} answers 403 and counts nothing. ?apikey= needs no
// token: that link carries the key itself.
func TestPageNZBToken(t *testing.T) {
	forBackends(t, func(t *testing.T, w *pageWorld) {
		desert := w.release(t, "Desert.Movie.2023.2160p.UHD.BluRay-GRP")
		ocean := w.release(t, "Ocean.Documentary.2024.1080p.WEB.x264-GRP")
		link := w.srv.URL + "/nzb/" + strconv.FormatInt(desert.ID, 10)
		own := w.nzbLink(t, w.key, desert.ID)
		require.Regexp(t, `^`+regexp.QuoteMeta(link)+`\?t=[0-9a-f]{32}$`, own)
		token := strings.TrimPrefix(own, link+"?t=")
		oceanToken := strings.TrimPrefix(w.nzbLink(t, w.key, ocean.ID), w.srv.URL+"/nzb/"+strconv.FormatInt(ocean.ID, 10)+"?t=")
		require.NotEqual(t, token, oceanToken, "each release has its own token")

		other, err := newznab.NewKey()
		require.NoError(t, err)
		require.NoError(t, w.store.AddUser(t.Context(), newznab.User{Name: "bob", KeyHash: newznab.HashKey(other)}))
		require.NotEqual(t, own, w.nzbLink(t, other, desert.ID), "each key has its own token")

		for _, u := range []string{
			link,                       // a plain link from anywhere
			link + "?t=",               // empty
			link + "?t=" + oceanToken,  // another release's
			link + "?t=" + token[:31],  // cut short
			link + "?t=" + token + "0", // too long
			link + "?t=" + strings.ToUpper(token),
			link + "?t=" + strings.Repeat("0", 32),
		} {
			for _, method := range []string{http.MethodGet, http.MethodHead} {
				reqs, grabs := w.requests(t), w.grabs(t)
				res, body := do(t, method, u, w.key)
				require.Equal(t, http.StatusForbidden, res.StatusCode, "%s %s", method, u)
				if method == http.MethodGet {
					require.Contains(t, string(body), "NZB links work only from this site")
					require.NotContains(t, string(body), w.key)
				}
				require.Equal(t, reqs, w.requests(t), "%s %s: nothing counted", method, u)
				require.Equal(t, grabs, w.grabs(t), "%s %s: nothing counted", method, u)
			}
		}

		// The page's own link works, with no Fetch Metadata at all, as
		// over plain HTTP to a LAN address.
		reqs, grabs := w.requests(t), w.grabs(t)
		res, body := do(t, http.MethodGet, own, w.key)
		require.Equal(t, http.StatusOK, res.StatusCode, "%s", body)
		require.Equal(t, "application/x-nzb", res.Header.Get("Content-Type"))
		require.Equal(t, reqs+1, w.requests(t))
		require.Equal(t, grabs+1, w.grabs(t))
		// Another key's cookie with alice's link: refused.
		res, _ = do(t, http.MethodGet, own, other)
		require.Equal(t, http.StatusForbidden, res.StatusCode)

		// ?apikey= needs no token, and takes precedence over the cookie.
		res, _ = do(t, http.MethodGet, link+"?apikey="+w.key, "")
		require.Equal(t, http.StatusOK, res.StatusCode)
		res, _ = do(t, http.MethodGet, link+"?apikey="+w.key, other)
		require.Equal(t, http.StatusOK, res.StatusCode)
	})
}

// TestPageReferrerPolicy: the page tells the browser to send its origin
// within the site (so its own form carries a real Origin) and nothing to
// another site.
func TestPageReferrerPolicy(t *testing.T) {
	forBackends(t, func(t *testing.T, w *pageWorld) {
		res, body := do(t, http.MethodGet, w.srv.URL+"/", "")
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.Equal(t, "same-origin", res.Header.Get("Referrer-Policy"))
		require.Contains(t, string(body), `<meta name="referrer" content="same-origin">`)
	})
}

// timeoutStore is the real store but for SearchReleases, which fails at
// once as PostgreSQL's statement timeout (sqlstore.SearchTimeout) makes
// it fail: an error that is context.DeadlineExceeded while the request's
// own context is still live.
type timeoutStore struct {
	newznab.Store
}

func (s timeoutStore) SearchReleases(ctx context.Context, q release.Search) (release.Found, error) {
	return release.Found{}, fmt.Errorf("search: %w: %w", context.DeadlineExceeded,
		&pgconn.PgError{Code: "57014", Message: "canceling statement due to statement timeout"})
}

// TestStoreDeadline: the store's own deadline is a timeout as
// Config.Timeout is: a warning, 900 from the API and 503 from the page,
// never an error in the log. The request stays counted: it was checked
// and keyed before the store was asked.
func TestStoreDeadline(t *testing.T) {
	forBackends(t, func(t *testing.T, w *pageWorld) {
		for _, path := range []string{"/api?t=search&q=ocean&apikey=" + w.key, "/?q=ocean&apikey=" + w.key} {
			logs := &syncbuf.Buffer{}
			h, err := newznab.New(newznab.Config{Store: timeoutStore{w.store}, Now: func() time.Time { return now },
				Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
			require.NoError(t, err)
			srv := httptest.NewServer(h)
			t.Cleanup(srv.Close)
			reqs := w.requests(t)
			res, body := do(t, http.MethodGet, srv.URL+path, "")
			if strings.HasPrefix(path, "/api") {
				require.Equal(t, http.StatusInternalServerError, res.StatusCode)
				require.Equal(t, "900", newznab.Decode[newznab.ErrorDoc](t, body).Code)
			} else {
				require.Equal(t, http.StatusServiceUnavailable, res.StatusCode, "%s", body)
				require.Contains(t, string(body), "took too long")
			}
			require.Contains(t, logs.String(), "level=WARN", path)
			require.Contains(t, logs.String(), "deadline passed", path)
			require.NotContains(t, logs.String(), "level=ERROR", path)
			require.Equal(t, reqs+1, w.requests(t), "a request counts once checked and keyed: %s", path)
		}
	})
}

// TestCrossSiteSignedOut: GET / and /details/{id} with the page's cookie,
// sent by another site (however the request shows it), are signed out:
// the key form, counting nothing and showing nothing of the user's, with
// a link back to the same page. The same requests from this site, and a
// key given as ?apikey= from anywhere, are signed in and counted.
func TestCrossSiteSignedOut(t *testing.T) {
	forBackends(t, func(t *testing.T, w *pageWorld) {
		id := strconv.FormatInt(w.release(t, "Desert.Movie.2023.2160p.UHD.BluRay-GRP").ID, 10)
		host := strings.TrimPrefix(w.srv.URL, "http://")
		for _, path := range []string{"/?q=desert", "/details/" + id} {
			for _, headers := range [][]string{
				{"Sec-Fetch-Site", "cross-site"},
				{"Sec-Fetch-Site", "same-site"},
				{"Referer", "https://evil.example/page"},
				{"Origin", "null"},
				{"Sec-Fetch-Site", "same-origin", "Referer", "http://" + host + ".evil.example/"},
			} {
				before := w.requests(t)
				res, body := do(t, http.MethodGet, w.srv.URL+path, w.key, headers...)
				require.Equal(t, http.StatusOK, res.StatusCode, "%s %v", path, headers)
				require.Contains(t, string(body), `action="/login"`, "the key form")
				require.Contains(t, string(body), "opened from another site")
				require.Contains(t, string(body), `id="continue" href="`+path+`"`)
				require.NotContains(t, string(body), "Desert.Movie", "nothing of the results")
				require.NotContains(t, string(body), "alice")
				require.Empty(t, res.Cookies(), "the cookie is kept")
				require.Equal(t, before, w.requests(t), "%s %v: nothing counted", path, headers)
			}
			before := w.requests(t)
			for _, headers := range [][]string{{"Sec-Fetch-Site", "same-origin", "Referer", w.srv.URL + "/"}, {"Sec-Fetch-Site", "none"}, nil} {
				res, body := do(t, http.MethodGet, w.srv.URL+path, w.key, headers...)
				require.Equal(t, http.StatusOK, res.StatusCode)
				require.Contains(t, string(body), "Desert.Movie", "%s %v: signed in", path, headers)
			}
			res, body := do(t, http.MethodGet, w.srv.URL+path+sepFor(path)+"apikey="+w.key, "", "Sec-Fetch-Site", "cross-site")
			require.Equal(t, http.StatusOK, res.StatusCode)
			require.Contains(t, string(body), "Desert.Movie", "a key in the link needs no cookie")
			require.Equal(t, before+4, w.requests(t))
		}
	})
}

func sepFor(path string) string {
	if strings.Contains(path, "?") {
		return "&"
	}
	return "?"
}
