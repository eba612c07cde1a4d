package newznab

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The page's key: the login form and its cookie, the check of each
// request's key, and the refusal of requests other sites sent.

// serveLogin answers POST /login: it checks the form's key, keeps it in
// the cookie and sends the browser back to the page (303).
func (h *Handler) serveLogin(w http.ResponseWriter, r *http.Request) {
	v := h.view(r)
	v.Heading = "API key"
	v.Form = true
	if h.foreign(r) {
		h.pageFail(w, r, v, http.StatusForbidden, "The key form must be sent from this site's own page.")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		h.pageFail(w, r, v, http.StatusBadRequest, "The form could not be read: it is malformed or too large.")
		return
	}
	v.Next = safeNext(r.PostForm.Get("next"))
	k := strings.TrimSpace(r.PostForm.Get("apikey"))
	c := &http.Cookie{Name: CookieName, Value: k, Path: h.cookiePath(), MaxAge: int(cookieAge / time.Second),
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: h.secure(r)}
	switch {
	case k == "":
		h.pageFail(w, r, v, http.StatusBadRequest, "Enter your API key.")
		return
	case len(k) > maxKey || c.Valid() != nil:
		h.pageFail(w, r, v, http.StatusBadRequest, "That is not an API key: a key is 32 hexadecimal digits.")
		return
	}
	acc, err := h.use(r.Context(), k)
	if err != nil {
		h.refuse(w, r, v, err)
		return
	}
	h.cfg.Logger.Debug("newznab page login", "user", acc.Name)
	http.SetCookie(w, c)
	http.Redirect(w, r, h.pageBase()+v.Next, http.StatusSeeOther)
}

// serveLogout answers POST /logout: it clears the cookie and sends the
// browser back to the page (303).
func (h *Handler) serveLogout(w http.ResponseWriter, r *http.Request) {
	if h.foreign(r) {
		v := h.view(r)
		h.pageFail(w, r, v, http.StatusForbidden, "Logging out must be asked from this site's own page.")
		return
	}
	http.SetCookie(w, h.clearCookie(r))
	http.Redirect(w, r, h.pageBase()+"/", http.StatusSeeOther)
}

// key returns the API key page request r carries: its apikey parameter,
// else the cookie's when view read it; "" when it has neither.
func (v *pageView) key(r *http.Request) string {
	if k := r.URL.Query().Get("apikey"); k != "" {
		return k
	}
	return v.cookieKey
}

// needKey starts the view of page request r. Without a key it renders
// the key form, which returns to next, and returns false.
func (h *Handler) needKey(w http.ResponseWriter, r *http.Request, next string) (*pageView, bool) {
	v := h.view(r)
	if v.key(r) == "" {
		v.Form, v.Next, v.Heading = true, next, "API key"
		h.render(w, r, v, http.StatusOK)
		return nil, false
	}
	return v, true
}

// authorize admits request r through the Handler's gate (admit), then
// checks and counts its key (use), once its query is checked. With a
// refused key it renders the form and why. It fills v's Account and
// leave, which the caller calls once done, and returns false when it has
// answered already.
func (h *Handler) authorize(w http.ResponseWriter, r *http.Request, v *pageView, next string) bool {
	k := v.key(r)
	var acc Account
	err := ErrBadKey
	if len(k) <= maxKey {
		v.leave, err = h.admit(w, r, k)
	}
	if err == nil {
		acc, err = h.use(r.Context(), k)
		if err != nil {
			v.leave()
		}
	}
	if err != nil {
		v.Form, v.Next, v.Heading, v.Key = true, next, "API key", "" // links carry no refused key
		v.Search, v.Release = nil, nil
		if v.Cookie && (errors.Is(err, ErrBadKey) || errors.Is(err, ErrSuspended)) {
			http.SetCookie(w, h.clearCookie(r)) // it will not work again
			v.Cookie = false
		}
		h.refuse(w, r, v, err)
		return false
	}
	v.Account = &acc
	return true
}

// refuse renders why the key was refused: the form again for a wrong or
// suspended key, a notice for a limit, a short 500 for anything else.
func (h *Handler) refuse(w http.ResponseWriter, r *http.Request, v *pageView, err error) {
	switch {
	case errors.Is(err, ErrBadKey):
		h.pageFail(w, r, v, http.StatusForbidden, "That API key is not known here. Check it and enter it again.")
	case errors.Is(err, ErrSuspended):
		h.pageFail(w, r, v, http.StatusForbidden, "The account of that API key is suspended.")
	case errors.Is(err, ErrBusy):
		v.Form = false
		h.pageFail(w, r, v, http.StatusServiceUnavailable, "Too many requests are under way. Try again in a moment.")
	case errors.Is(err, ErrRequestLimit):
		v.Form = false
		h.pageFail(w, r, v, http.StatusTooManyRequests, "This key has reached its daily request limit. It can be used again after midnight UTC.")
	default:
		h.storeFailed(w, r, v, err)
	}
}

// nzbToken is the token t of the NZB link of release id under key:
// HMAC-SHA256 of "nzb:" and the id, keyed by the key's hash, as 32 hex
// digits. Only a holder of the key can make it, so a link to /nzb/{id}
// that another site made spends nothing of the cookie's key.
func nzbToken(key string, id int64) string {
	m := hmac.New(sha256.New, []byte(HashKey(key)))
	m.Write([]byte("nzb:" + strconv.FormatInt(id, 10)))
	return hex.EncodeToString(m.Sum(nil))[:32]
}

// cookiePath is the path of Config.URL, or "/".
func (h *Handler) cookiePath() string {
	if u, err := url.Parse(h.cfg.URL); err == nil && u.Path != "" {
		return u.Path
	}
	return "/"
}

// secure reports whether the cookie must be Secure: the request came over
// TLS, or the configured URL is https (TLS ends at a proxy).
func (h *Handler) secure(r *http.Request) bool {
	return r.TLS != nil || strings.HasPrefix(h.cfg.URL, "https:")
}

func (h *Handler) clearCookie(r *http.Request) *http.Cookie {
	return &http.Cookie{Name: CookieName, Value: "", Path: h.cookiePath(), MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: h.secure(r)}
}

// foreign reports whether request r was sent by another site than this
// one: the browser says so (Sec-Fetch-Site cross-site or same-site, as a
// sibling subdomain is another site's code), or its Origin or Referer is
// another host than the request's Host or Config.URL's, or its Origin is
// "null" (an opaque origin: a sandboxed frame, a data: URL, or a page
// whose referrer policy hides its origin; the page's own, same-origin,
// is not one of those). Login, logout and the NZB links refuse such
// requests: a form sent from elsewhere could log the browser in under
// another key, and a link from elsewhere would spend the user's grabs.
// Over plain HTTP to a host other than localhost browsers send no
// Sec-Fetch-Site, so the Origin the page's own form carries is what
// tells it apart. (Browsers send no Origin with a plain link; the NZB
// links carry a token for that.)
func (h *Handler) foreign(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "cross-site", "same-site":
		return true
	}
	for _, name := range []string{"Origin", "Referer"} {
		s := r.Header.Get(name)
		if s == "" {
			continue
		}
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			return true // "null", or unreadable
		}
		if !strings.EqualFold(u.Host, r.Host) && !strings.EqualFold(u.Host, h.urlHost()) {
			return true
		}
	}
	return false
}

// urlHost is the host of Config.URL, or "".
func (h *Handler) urlHost() string {
	if u, err := url.Parse(h.cfg.URL); err == nil {
		return u.Host
	}
	return ""
}

var detailsPath = regexp.MustCompile(`^/details/[1-9][0-9]{0,18}$`)

// safeNext is where the key form may return to: the page or a release's
// details; anything else is the page.
func safeNext(s string) string {
	if detailsPath.MatchString(s) {
		return s
	}
	return "/"
}
