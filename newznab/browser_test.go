package newznab_test

import (
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/internal/browsertest"

	"github.com/edgeindex/edgeindex/internal/pgtest"
	"github.com/edgeindex/edgeindex/newznab"
)

// browser starts headless Chromium for the test (browsertest.Start).
func browser(t *testing.T) context.Context {
	t.Helper()
	return browsertest.Start(t, 1280, 900)
}

// tab is one browser tab and the test's helpers over it.
type tab struct {
	t   *testing.T
	ctx context.Context
}

// load runs trigger (a click, a submit) and waits until the page it
// leads to has loaded.
func (b tab) load(trigger chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	_, err := chromedp.Run(b.ctx, chromedp.WaitEvent(page.LoadEventFired, nil, trigger))
	require.NoError(b.t, err)
}

func (b tab) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	require.NoError(b.t, chromedp.Do(b.ctx, steps...))
}

// text is the text of the first element sel matches.
func (b tab) text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.TextContent(chromedp.CSS(sel)))
	require.NoError(b.t, err, sel)
	return strings.TrimSpace(s)
}

// texts are the texts of every element sel matches.
func (b tab) texts(sel string) []string {
	b.t.Helper()
	out, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]string](
		fmt.Sprintf(`Array.from(document.querySelectorAll(%q), e => e.textContent.trim())`, sel)))
	require.NoError(b.t, err, sel)
	return out
}

func (b tab) attr(sel, name string) string {
	b.t.Helper()
	r, err := chromedp.Run(b.ctx, chromedp.AttributeValue(chromedp.CSS(sel), name))
	require.NoError(b.t, err, sel)
	require.True(b.t, r.Exists, "%s has no %s", sel, name)
	return r.Value
}

func (b tab) count(sel string) int {
	b.t.Helper()
	nodes, err := chromedp.Run(b.ctx, chromedp.Nodes(chromedp.CSSAll(sel), chromedp.AtLeast(0)))
	require.NoError(b.t, err, sel)
	return len(nodes)
}

func (b tab) location() string {
	b.t.Helper()
	u, err := chromedp.Run(b.ctx, chromedp.Location())
	require.NoError(b.t, err)
	return u
}

// login opens the page, which is the key form, and sends it with key.
func (b tab) login(base, key string) {
	b.t.Helper()
	b.do(chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS(`form.key`)))
	require.Zero(b.t, b.count(`form.search`), "no search before the key")
	b.do(chromedp.SendKeys(chromedp.CSS(`#apikey`), key))
	b.load(chromedp.Click(chromedp.CSS(`form.key button[type=submit]`)))
	b.do(chromedp.WaitVisible(chromedp.CSS(`form.search`)))
	require.Equal(b.t, base+"/", b.location(), "the form redirects to the page")
}

// search types words into the search box and sends the form.
func (b tab) search(words string) {
	b.t.Helper()
	b.do(chromedp.Clear(chromedp.CSS(`form.search input[name=q]`)),
		chromedp.SendKeys(chromedp.CSS(`form.search input[name=q]`), words))
	b.load(chromedp.Click(chromedp.CSS(`form.search button[type=submit]`)))
}

// cookieKey is the key cookie the browser holds for base.
func (b tab) cookie(base string) *network.Cookie {
	b.t.Helper()
	res, err := chromedp.Call(b.ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{base + "/"}})
	require.NoError(b.t, err)
	for _, c := range res.Cookies {
		if c.Name == newznab.CookieName {
			return c
		}
	}
	return nil
}

// screenshot writes a full-page PNG to EDGEINDEX_SCREENSHOT, or to a
// temporary file, for a person to look at; a suffix ("-phone") goes
// before the extension.
func (b tab) screenshot(suffix string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	require.NoError(b.t, err)
	path := os.Getenv("EDGEINDEX_SCREENSHOT")
	if path == "" {
		path = filepath.Join(b.t.TempDir(), "newznab-page.png")
	}
	path = strings.TrimSuffix(path, ".png") + suffix + ".png"
	require.NoError(b.t, os.WriteFile(path, png, 0o644))
	b.t.Logf("screenshot: %s", path)
}

func TestSearchPageBrowser(t *testing.T) {
	t.Parallel()
	bctx := browser(t)
	w := newPageWorld(t, pgtest.Backends[0].URL(t), standardPostings())
	ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
	defer cancel()
	b := tab{t, ctx}

	b.login(w.srv.URL, w.key)
	c := b.cookie(w.srv.URL)
	require.NotNil(t, c, "the form set the cookie")
	require.Equal(t, w.key, c.Value)
	require.True(t, c.HTTPOnly)
	jsCookie, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.cookie`))
	require.NoError(t, err)
	require.Empty(t, jsCookie, "a script cannot read the key")
	// The first page lists the newest releases: what a person sees first.
	require.Equal(t, newznab.PageSize, b.count(`tr.release`))
	b.screenshot("")

	// Two words: the two Ocean releases, newest first.
	b.search("ocean x264")
	require.Equal(t, 2, b.count(`tr.release`))
	doc := w.release(t, "Ocean.Documentary.2024.1080p.WEB.x264-GRP")
	row := fmt.Sprintf(`tr.release[data-id="%d"]`, doc.ID)
	require.Equal(t, doc.Name, b.text(row+` td.title a`))
	require.Equal(t, categoryText(doc.Category), b.text(row+` td.category`))
	require.Equal(t, "2.4 GB", b.text(row+` td.size`))
	require.Equal(t, "3 days", b.text(row+` td.age`))
	require.Equal(t, "100%", b.text(row+` td.completion`))
	require.Equal(t, "ocean x264", b.attr(`form.search input[name=q]`, "value"), "the box keeps the search")
	nzbHref := b.attr(row+` a.nzb`, "href")
	require.Regexp(t, fmt.Sprintf(`^/nzb/%d\?t=[0-9a-f]{32}$`, doc.ID), nzbHref, "the cookie carries the key; the link a token")

	// The category filter: the select's choice is sent and kept.
	b.do(chromedp.SetValue(chromedp.CSS(`select[name=cat]`), fmt.Sprint(doc.Category)))
	b.load(chromedp.Click(chromedp.CSS(`form.search button[type=submit]`)))
	require.Equal(t, fmt.Sprint(doc.Category), b.attr(`select[name=cat] option[selected]`, "value"))
	require.GreaterOrEqual(t, b.count(`tr.release`), 1)
	for _, cat := range b.texts(`tr.release td.category`) {
		require.Equal(t, categoryText(doc.Category), cat)
	}
	b.do(chromedp.SetValue(chromedp.CSS(`select[name=cat]`), ""))

	// The hostile name is text; no script of it ran.
	b.search("evil")
	require.Contains(t, b.text(`tr.release td.title a`), "<script>document.title='pwned'</script>")
	title, err := chromedp.Run(ctx, chromedp.Title())
	require.NoError(t, err)
	require.Equal(t, "evil · edgeindex", title)
	require.Zero(t, b.count(`script`))

	// Paging: 55 releases of the series, 50 a page.
	b.search("paging series")
	require.Equal(t, newznab.PageSize, b.count(`tr.release`))
	require.Equal(t, "1–50 of 55 releases", b.text(`#summary`))
	require.Zero(t, b.count(`a.prev`))
	b.load(chromedp.Click(chromedp.CSS(`a.next`)))
	require.Equal(t, 5, b.count(`tr.release`))
	require.Equal(t, "51–55 of 55 releases", b.text(`#summary`))
	require.Equal(t, "Page 2 of 2", b.text(`nav.pages .page`))
	require.Zero(t, b.count(`a.next`))
	b.load(chromedp.Click(chromedp.CSS(`a.prev`)))
	require.Equal(t, newznab.PageSize, b.count(`tr.release`))

	// Details of the documentary, from its row.
	b.search("ocean documentary")
	b.load(chromedp.Click(chromedp.CSS(row + ` td.title a`)))
	require.Equal(t, fmt.Sprintf("%s/details/%d", w.srv.URL, doc.ID), b.location())
	require.Equal(t, doc.Name, b.text(`h1.name`))
	require.Equal(t, 2, b.count(`tr.file`))
	require.Equal(t, doc.Name+".part1.rar", b.text(`tr.file td.title`))
	require.Equal(t, "Alice <alice@example.test>", b.text(`dd.poster`))
	require.Equal(t, "alt.binaries.pagetest", b.text(`li.group`))

	href := b.attr(`a.nzb`, "href")
	require.Equal(t, nzbHref, href)

	// On a phone's width nothing is wider than the screen, not even the
	// long hostile name.
	b.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	for _, path := range []string{"/", "/?q=ocean", fmt.Sprintf("/details/%d", w.release(t, evilName).ID)} {
		b.do(chromedp.Navigate(w.srv.URL + path))
		width, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
		require.NoError(t, err)
		require.LessOrEqual(t, width, 390, path)
	}
	b.screenshot("-phone")
	b.do(chromedp.EmulateViewport(1280, 900))

	// Logout: the form again, and the cookie is gone.
	b.load(chromedp.Click(chromedp.CSS(`header form button`)))
	b.do(chromedp.WaitVisible(chromedp.CSS(`form.key`)))
	require.Nil(t, b.cookie(w.srv.URL))

	// The NZB link's target is an NZB, fetched with the cookie the
	// browser held (the key itself still works after logout).
	req, err := http.NewRequest(http.MethodGet, w.srv.URL+href, nil)
	require.NoError(t, err)
	req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", body)
	require.Equal(t, "application/x-nzb", res.Header.Get("Content-Type"))
	var nzb struct {
		XMLName xml.Name
		Files   []struct {
			Subject string `xml:"subject,attr"`
		} `xml:"file"`
	}
	require.NoError(t, xml.Unmarshal(body, &nzb))
	require.Equal(t, "nzb", nzb.XMLName.Local)
	require.Len(t, nzb.Files, 2)
}

// TestSearchPageBrowserNoScript: with JavaScript off the page works all
// the same: it never needed any.
func TestSearchPageBrowserNoScript(t *testing.T) {
	t.Parallel()
	bctx := browser(t)
	w := newPageWorld(t, pgtest.Backends[0].URL(t), standardPostings())
	ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
	defer cancel()
	b := tab{t, ctx}
	_, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
	require.NoError(t, err)

	b.login(w.srv.URL, w.key)
	b.search("desert")
	desert := w.release(t, "Desert.Movie.2023.2160p.UHD.BluRay-GRP")
	require.Equal(t, 1, b.count(`tr.release`))
	require.Equal(t, desert.Name, b.text(`tr.release td.title a`))
	require.Equal(t, "6.0 GB", b.text(`tr.release td.size`))
	b.search("paging series")
	b.load(chromedp.Click(chromedp.CSS(`a.next`)))
	require.Equal(t, 5, b.count(`tr.release`))
	b.load(chromedp.Click(chromedp.CSS(`tr.release td.title a`)))
	require.Contains(t, b.location(), "/details/")
	require.Equal(t, 1, b.count(`tr.file`))
	b.load(chromedp.Click(chromedp.CSS(`header form button`)))
	b.do(chromedp.WaitVisible(chromedp.CSS(`form.key`)))
}
