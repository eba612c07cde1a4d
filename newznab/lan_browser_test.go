package newznab_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/internal/pgtest"
)

// lanAddress is an IPv4 address of this machine other than loopback, or
// "" when it has none.
func lanAddress(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	require.NoError(t, err)
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	return ""
}

// TestSearchPageBrowserLAN: served over plain HTTP on an address other
// than loopback, where Chromium sends no Sec-Fetch-Site, a person can
// still log in and download an NZB from the page; and a link to /nzb/{id}
// on another site, made to carry neither Origin nor Referer, spends
// nothing.
func TestSearchPageBrowserLAN(t *testing.T) {
	t.Parallel()
	ip := lanAddress(t)
	if ip == "" {
		t.Skip("this machine has no IPv4 address but loopback")
	}
	bctx := browser(t)
	w := newPageWorld(t, pgtest.Backends[0].URL(t), standardPostings())
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	require.NoError(t, err)
	lan := httptest.NewUnstartedServer(w.srv.Config.Handler)
	lan.Listener.Close()
	lan.Listener = ln
	lan.Start()
	t.Cleanup(lan.Close)

	ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
	defer cancel()
	b := tab{t, ctx}
	_, err = chromedp.Call(ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
		Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllow, DownloadPath: t.TempDir()})
	require.NoError(t, err)

	// The key form, sent from the page itself over plain HTTP.
	b.login(lan.URL, w.key)
	require.NotNil(t, b.cookie(lan.URL), "the form set the cookie")

	desert := w.release(t, "Desert.Movie.2023.2160p.UHD.BluRay-GRP")
	id := strconv.FormatInt(desert.ID, 10)

	// Another site links to the NZB, with no referrer: refused, nothing
	// counted, though the SameSite=Lax cookie rides along.
	evil := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(rw, `<!doctype html><a id="evil" referrerpolicy="no-referrer" href="%s/nzb/%s">free stuff</a>`, lan.URL, id)
	}))
	t.Cleanup(evil.Close)
	reqs, grabs := w.requests(t), w.grabs(t)
	b.do(chromedp.Navigate(evil.URL + "/"))
	b.load(chromedp.Click(chromedp.CSS(`#evil`)))
	require.Equal(t, lan.URL+"/nzb/"+id, b.location())
	require.Contains(t, b.text(`#message`), "NZB links work only from this site")
	require.Equal(t, reqs, w.requests(t), "another site's link counts no request")
	require.Equal(t, grabs, w.grabs(t), "another site's link counts no grab")

	// The page's own link downloads the NZB and counts the grab.
	b.do(chromedp.Navigate(lan.URL + "/details/" + id))
	reqs, grabs = w.requests(t), w.grabs(t)
	b.do(chromedp.Click(chromedp.CSS(`a.nzb`)))
	deadline := time.Now().Add(30 * time.Second)
	for w.grabs(t) == grabs {
		require.True(t, time.Now().Before(deadline), "the click grabbed nothing")
		time.Sleep(20 * time.Millisecond)
	}
	require.Equal(t, grabs+1, w.grabs(t))
	require.Equal(t, reqs+1, w.requests(t))
}
