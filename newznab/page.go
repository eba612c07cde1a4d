package newznab

import (
	"bytes"
	"crypto/hmac"
	_ "embed" // the page's templates
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/nzb"
	"github.com/edgeindex/edgeindex/release"
)

// The search page: server-rendered HTML over the Store, for people. It
// needs no JavaScript and sends none: every value goes through
// html/template, and the Content-Security-Policy forbids scripts anyway.
// The key is typed once into a form that keeps it in an HttpOnly cookie;
// ?apikey= works too, and then every link of the page carries it.

// Bounds of what the page is asked.
const (
	// PageSize is how many releases one page of results lists.
	PageSize = 50
	// MaxSearchText is the longest search text, in bytes.
	MaxSearchText = 256
	// maxKey is the longest key the form takes, in bytes; NewKey's are 32.
	maxKey = 128
	// maxForm bounds the body of POST /login.
	maxForm = 4 << 10
	// maxPage is the last page a search can show (release.MaxSearchOffset).
	maxPage = release.MaxSearchOffset/PageSize + 1
	// cookieAge is how long the key cookie lasts.
	cookieAge = 365 * 24 * time.Hour
)

//go:embed page.html
var pageHTML string

var pageTemplate = template.Must(template.New("page.html").Parse(pageHTML))

// pageView is what the template renders: one of Search, Release, Form or
// only Message.
type pageView struct {
	Title   string // the indexer's name
	Heading string // the page's name, in <title>
	Base    string // the prefix of every link
	Message string // why the request was refused, or a notice
	Error   bool   // Message is a refusal
	// Form shows the key form; Next is where it returns to.
	Form bool
	Next string
	// Key is the key when it came as ?apikey=: the links carry it.
	// Cookie says the key came in the cookie: the page offers logout,
	// and its NZB links carry a token of cookieKey (nzbToken).
	Key       string
	Cookie    bool
	cookieKey string
	Account   *Account
	// Continue links to the page asked for when its cookie was not read
	// (the request came from another site).
	Continue string
	// leave lets the request go from the Handler's gate (admit) once
	// authorize admitted it.
	leave   func()
	Search  *searchView
	Release *detailView
}

type searchView struct {
	Q          string
	Cat        int
	Categories []categoryOption
	Rows       []rowView
	// Total counts the matches, TotalText as shown ("10000+" at
	// release.MaxSearchTotal); From and To number the rows shown.
	Total            int
	TotalText        string
	Page, Pages      int
	From, To         int
	Prev, Next, Self string // links; empty when there is none
}

type categoryOption struct {
	ID       int
	Name     string
	Sub      bool
	Selected bool
}

// rowView is one release as the results list it.
type rowView struct {
	ID         int64
	Title      string
	Category   string
	Size       string
	Bytes      int64
	Age        string
	Posted     string // UTC, to the minute
	FileCount  string // seen/expected
	Completion string // percent
	Complete   bool
	Grabs      int64
	Details    string // link
	NZB        string // link
	// Password is the password attr in words ("" for none); HasNFO says
	// the release has an NFO.
	Password string
	HasNFO   bool
}

type detailView struct {
	rowView
	Poster string
	Groups []string
	Parts  string // seen/expected
	Files  []fileView
	// MoreGroups and MoreFiles count those past MaxGroups and MaxFiles,
	// which the page does not list.
	MoreGroups, MoreFiles int
	// NFO is the release's NFO text; PostProc how far post-processing
	// got, in words.
	NFO      string
	PostProc string
}

type fileView struct {
	Name     string
	PostedAs string // the posted name, when post-processing found the real one
	Size     string
	Parts    string // seen/total
	Complete bool
}

// servePage answers GET /: the key form, or a search and its results.
// The query is checked before the key is counted: a bad one answers 400
// and counts nothing.
func (h *Handler) servePage(w http.ResponseWriter, r *http.Request) {
	v, ok := h.needKey(w, r, "/")
	if !ok {
		return
	}
	q, sv, bad := h.parseSearch(r.URL.Query())
	if bad != "" {
		v.Search, v.Heading = sv, "Search"
		h.pageFail(w, r, v, http.StatusBadRequest, bad)
		return
	}
	if !h.authorize(w, r, v, "/") {
		return
	}
	defer v.leave()
	sv.Categories = categoryOptions(sv.Cat)
	v.Search = sv
	found, err := h.cfg.Store.SearchReleases(r.Context(), q)
	if err != nil {
		h.storeFailed(w, r, v, err)
		return
	}
	now := h.cfg.Now()
	for _, rel := range found.Releases {
		sv.Rows = append(sv.Rows, h.row(v, rel, now))
	}
	sv.Total, sv.TotalText = found.Total, strconv.Itoa(found.Total)
	if found.Total >= release.MaxSearchTotal {
		sv.TotalText += "+"
	}
	sv.Pages = max(1, min(maxPage, (found.Total+PageSize-1)/PageSize))
	sv.From, sv.To = q.Offset+1, q.Offset+len(found.Releases)
	if sv.Page > 1 {
		sv.Prev = h.searchLink(v, sv.Q, sv.Cat, sv.Page-1)
	}
	if sv.Page < sv.Pages {
		sv.Next = h.searchLink(v, sv.Q, sv.Cat, sv.Page+1)
	}
	if len(found.Releases) == 0 && found.Total > 0 {
		v.Message = fmt.Sprintf("Page %d is past the last page, %d.", sv.Page, sv.Pages)
	}
	v.Heading = "Search"
	if sv.Q != "" {
		v.Heading = sv.Q
	}
	h.render(w, r, v, http.StatusOK)
}

// parseSearch reads the page's parameters q, cat and page into a Search.
// The view it returns echoes them back; bad says what is wrong with them,
// "" when nothing is.
func (h *Handler) parseSearch(p url.Values) (q release.Search, sv *searchView, bad string) {
	sv = &searchView{Q: cleanText(p.Get("q")), Page: 1}
	sv.Categories = categoryOptions(0)
	q = release.Search{MinCompletion: h.cfg.MinCompletion, Limit: PageSize}
	text := p.Get("q")
	if len(text) > MaxSearchText {
		sv.Q = ""
		return q, sv, fmt.Sprintf("The search is %d bytes long; at most %d are allowed.", len(text), MaxSearchText)
	}
	q.Words = release.SearchWords(text)
	if len(q.Words) > release.MaxSearchWords {
		return q, sv, fmt.Sprintf("The search has %d words; at most %d are allowed.", len(q.Words), release.MaxSearchWords)
	}
	for _, word := range q.Words {
		if len(word) > release.MaxSearchWord {
			return q, sv, fmt.Sprintf("A word of the search is %d bytes long; at most %d are allowed.", len(word), release.MaxSearchWord)
		}
	}
	if c := p.Get("cat"); c != "" && c != "0" {
		id, err := strconv.Atoi(c)
		if err != nil || !knownCategory(id) {
			return q, sv, fmt.Sprintf("The category %q is not one of the list.", cleanText(shorten(c, 20)))
		}
		sv.Cat = id
		q.Categories = []int{id}
	}
	if s := p.Get("page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxPage {
			return q, sv, fmt.Sprintf("The page %q is not a number from 1 to %d.", cleanText(shorten(s, 20)), maxPage)
		}
		sv.Page = n
	}
	q.Offset = (sv.Page - 1) * PageSize
	return q, sv, ""
}

// serveDetails answers GET /details/{id}: one release with its files. It
// is the permalink of the API's guid. The id is checked before the key is
// counted.
func (h *Handler) serveDetails(w http.ResponseWriter, r *http.Request) {
	id, v, ok := h.pageID(w, r, false)
	if !ok {
		return
	}
	defer v.leave()
	rel, err := h.cfg.Store.ReleaseDetails(r.Context(), id, MaxFiles)
	if errors.Is(err, edgeindex.ErrNotFound) {
		h.pageFail(w, r, v, http.StatusNotFound, fmt.Sprintf("There is no release %d.", id))
		return
	}
	if err != nil {
		h.storeFailed(w, r, v, err)
		return
	}
	v.Release = h.details(v, rel)
	v.Heading = v.Release.Title
	h.render(w, r, v, http.StatusOK)
}

// pageID reads the id of /details/{id} or /nzb/{id}, then checks and
// counts the key: without a key it renders the key form (which returns
// to the release's details), with a bad id a 400, both counting nothing.
// With token (the NZB link), a key from the cookie needs the link's
// token t (nzbToken), or the answer is a 403 counting nothing. It
// returns the id and the view to fill, whose leave the caller calls once
// done, or false when it has answered.
func (h *Handler) pageID(w http.ResponseWriter, r *http.Request, token bool) (int64, *pageView, bool) {
	s := r.PathValue("id")
	id, err := strconv.ParseInt(s, 10, 64)
	next := "/"
	if err == nil && id > 0 {
		next = "/details/" + strconv.FormatInt(id, 10)
	}
	v, ok := h.needKey(w, r, next)
	if !ok {
		return 0, nil, false
	}
	v.Heading = "Release"
	if err != nil || id < 1 {
		h.pageFail(w, r, v, http.StatusBadRequest, fmt.Sprintf("%q is not a release id: ids are whole numbers from 1.", cleanText(shorten(s, 24))))
		return 0, nil, false
	}
	if token && v.Cookie && !hmac.Equal([]byte(r.URL.Query().Get("t")), []byte(nzbToken(v.cookieKey, id))) {
		v.Heading = "NZB"
		h.pageFail(w, r, v, http.StatusForbidden, "NZB links work only from this site's own pages: open the release here and follow its link.")
		return 0, nil, false
	}
	if !h.authorize(w, r, v, next) {
		return 0, nil, false
	}
	return id, v, true
}

// details formats a release for its page: every text capped at MaxField
// bytes, at most MaxGroups groups and MaxFiles files, and how many more
// there are.
func (h *Handler) details(v *pageView, rel release.Release) *detailView {
	d := &detailView{rowView: h.row(v, rel, h.cfg.Now()), Poster: pageText(rel.Poster),
		Parts: fmt.Sprintf("%d/%d", rel.PartsSeen, rel.PartsExpected)}
	for _, g := range rel.Groups[:min(len(rel.Groups), MaxGroups)] {
		d.Groups = append(d.Groups, pageText(g))
	}
	d.MoreGroups = len(rel.Groups) - len(d.Groups)
	for _, f := range rel.Files[:min(len(rel.Files), MaxFiles)] {
		name := f.Name
		if name == "" {
			name = f.Subject
		}
		v := fileView{Name: pageText(name), Size: humanBytes(f.Bytes), Parts: fmt.Sprintf("%d/%d", f.Seen, f.Total), Complete: f.Complete}
		if f.RealName != "" {
			v.Name, v.PostedAs = pageText(f.RealName), v.Name
		}
		d.Files = append(d.Files, v)
	}
	d.MoreFiles = max(rel.FilesSeen, len(rel.Files)) - len(d.Files)
	d.NFO, d.PostProc = rel.PostProc.NFO, pageText(postProcText(rel.PostProc))
	return d
}

// serveNZB answers GET /nzb/{id}: the page's NZB link, with the key of
// the cookie or of ?apikey=. It answers what t=get answers, with the same
// headers, and counts a request and a grab as the API does (a HEAD counts
// no grab). Since the cookie rides along on a link from any site, a
// request another site sent (by Sec-Fetch-Site, Origin or Referer) is
// refused with a 403 page, counting nothing; and since over plain HTTP a
// browser may send none of those headers, a key from the cookie also
// needs the token the page puts in its links (nzbToken), which another
// site cannot know.
func (h *Handler) serveNZB(w http.ResponseWriter, r *http.Request) {
	if h.foreign(r) {
		v := h.view(r)
		v.Heading, v.Key = "NZB", ""
		h.pageFail(w, r, v, http.StatusForbidden, "NZB links work only from this site's own pages: open the release here and follow its link.")
		return
	}
	id, v, ok := h.pageID(w, r, true)
	if !ok {
		return
	}
	defer v.leave()
	started, err := h.grab(w, r, *v.Account, id)
	switch {
	case err == nil:
	case started:
		h.abort(r, err)
	case errors.Is(err, nzb.ErrEmpty):
		h.pageFail(w, r, v, http.StatusNotFound, fmt.Sprintf("Release %d has nothing to download yet.", id))
	case errors.Is(err, edgeindex.ErrNotFound):
		h.pageFail(w, r, v, http.StatusNotFound, fmt.Sprintf("There is no release %d.", id))
	case errors.Is(err, ErrGrabLimit):
		h.pageFail(w, r, v, http.StatusTooManyRequests, "This key has reached its daily download limit. It can be used again after midnight UTC.")
	default:
		h.storeFailed(w, r, v, err)
	}
}

// storeFailed answers an error of the store: bad input a 400 with its
// sentence; the deadline passing a 503; anything else is logged (failure)
// and the user sees a short 500.
func (h *Handler) storeFailed(w http.ResponseWriter, r *http.Request, v *pageView, err error) {
	if errors.Is(err, edgeindex.ErrInvalid) {
		h.pageFail(w, r, v, http.StatusBadRequest, "The search was refused: "+cleanText(err.Error()))
		return
	}
	timedOut := h.failure(r, "newznab page", err)
	v.Search, v.Release, v.Form = nil, nil, false
	if timedOut {
		h.pageFail(w, r, v, http.StatusServiceUnavailable, "The server took too long to answer. Try again in a moment.")
		return
	}
	h.pageFail(w, r, v, http.StatusInternalServerError, "Something went wrong on the server. Try again in a moment.")
}

// pageFail renders v with message as a refusal, under status.
func (h *Handler) pageFail(w http.ResponseWriter, r *http.Request, v *pageView, status int, message string) {
	v.Message, v.Error = message, true
	if v.Heading == "" {
		v.Heading = http.StatusText(status)
	}
	h.render(w, r, v, status)
}

// render writes v as the page, under status. The page is rendered whole
// before anything is written, so a template error is a clean 500.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, v *pageView, status int) {
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, v); err != nil {
		h.cfg.Logger.Error("newznab page: render", "path", r.URL.Path, "err", err)
		http.Error(w, "Something went wrong on the server.", http.StatusInternalServerError)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	// No script runs, nothing is framed, and the key in a link's URL is
	// neither cached nor sent to another site as a referrer. Within the
	// site the browser sends the Referer and a real Origin (under
	// no-referrer its own form would say Origin: null), which foreign
	// reads.
	hd.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; frame-ancestors 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// view starts the view of request r. A cookie on a request another site
// sent (foreign) is not read: the request is signed out, so a page
// elsewhere that keeps navigating here spends none of the user's
// requests. The view offers a link back to the same page, which, followed
// from this site, is signed in.
func (h *Handler) view(r *http.Request) *pageView {
	v := &pageView{Title: h.cfg.Title, Base: h.pageBase()}
	if k := r.URL.Query().Get("apikey"); k != "" {
		if len(k) <= maxKey {
			v.Key = k // an over-long key is refused, and never echoed
		}
	} else if c, err := r.Cookie(CookieName); err == nil && c.Value != "" {
		if h.foreign(r) {
			v.Continue = v.Base + r.URL.Path
			if r.URL.RawQuery != "" {
				v.Continue += "?" + r.URL.RawQuery
			}
			v.Message = "This page was opened from another site, so the key kept in this browser was not used and nothing was counted."
		} else {
			v.Cookie, v.cookieKey = true, c.Value
		}
	}
	return v
}

// row formats one release for the results and the details.
func (h *Handler) row(v *pageView, rel release.Release, now time.Time) rowView {
	files := strconv.Itoa(rel.FilesSeen)
	if rel.FilesExpected > 0 {
		files += "/" + strconv.Itoa(rel.FilesExpected)
	}
	id := strconv.FormatInt(rel.ID, 10)
	nzbLink := v.Base + "/nzb/" + id
	details := v.Base + "/details/" + id
	if v.Key != "" {
		q := "?" + url.Values{"apikey": {v.Key}}.Encode()
		nzbLink, details = nzbLink+q, details+q
	} else if v.Cookie {
		nzbLink += "?t=" + nzbToken(v.cookieKey, rel.ID)
	}
	return rowView{
		ID: rel.ID, Title: pageText(rel.Name), Category: CategoryName(rel.Category),
		Size: humanBytes(rel.Bytes), Bytes: rel.Bytes, Age: humanAge(now.Sub(rel.Posted)),
		Posted: rel.Posted.UTC().Format("2006-01-02 15:04 UTC"), FileCount: files,
		Completion: percent(rel.PartsSeen, rel.PartsExpected), Complete: rel.Complete, Grabs: rel.Grabs,
		Details: details, NZB: nzbLink, Password: passwordText(rel.PostProc.Password), HasNFO: rel.PostProc.HasNFO,
	}
}

// passwordText is the password attr in words, "" for none.
func passwordText(p int) string {
	switch p {
	case 1:
		return "Passworded"
	case 2:
		return "Maybe passworded"
	}
	return ""
}

// postProcText says how far a release's post-processing got.
func postProcText(p release.PostProc) string {
	switch p.State {
	case release.PostDone:
		return "done"
	case release.PostFailed:
		return "failed: " + p.Reason
	}
	if p.Attempts > 0 {
		return fmt.Sprintf("pending (%d tries; %s)", p.Attempts, p.Reason)
	}
	return "pending"
}

// searchLink is the link to page n of a search.
func (h *Handler) searchLink(v *pageView, q string, cat, n int) string {
	p := url.Values{}
	if q != "" {
		p.Set("q", q)
	}
	if cat != 0 {
		p.Set("cat", strconv.Itoa(cat))
	}
	if n > 1 {
		p.Set("page", strconv.Itoa(n))
	}
	if v.Key != "" {
		p.Set("apikey", v.Key)
	}
	if len(p) == 0 {
		return v.Base + "/"
	}
	return v.Base + "/?" + p.Encode()
}

// pageBase is the prefix of the page's links: Config.URL, or nothing, so
// that links are relative to the host the browser asked.
func (h *Handler) pageBase() string { return h.cfg.URL }
