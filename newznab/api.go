package newznab

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/nzb"
	"github.com/edgeindex/edgeindex/release"
)

// serveAPI answers GET /api. The query is parsed and checked whole before
// the key is counted, so a malformed request answers its error and counts
// nothing; then the key is checked and counted (caps needs none), then
// the function runs.
func (h *Handler) serveAPI(w http.ResponseWriter, r *http.Request) {
	req, e := parseRequest(r.URL.RawQuery, limits{
		Max: h.cfg.MaxLimit, Default: h.cfg.DefaultLimit,
		MinCompletion: h.cfg.MinCompletion, Now: h.cfg.Now(),
	})
	if e != nil {
		h.fail(w, r, e, nil)
		return
	}
	if req.Function == "caps" {
		writeDoc(w, XMLType, http.StatusOK, capsDoc(capsInfo{
			Title: h.cfg.Title, Base: h.base(r), Max: h.cfg.MaxLimit, Default: h.cfg.DefaultLimit}))
		return
	}
	k := apiKey(r)
	leave, err := h.admit(w, r, k)
	if err != nil {
		h.fail(w, r, nil, err)
		return
	}
	defer leave()
	acct, err := h.use(r.Context(), k)
	if err != nil {
		h.fail(w, r, nil, err)
		return
	}
	f := feed{Title: h.cfg.Title, Base: h.base(r), Key: k, Account: acct}
	switch req.Function {
	case "get":
		h.get(w, r, acct, req.ID)
		return
	case "details":
		rel, err := h.cfg.Store.ReleaseDetails(r.Context(), req.ID, 0)
		if err != nil {
			h.fail(w, r, nil, err)
			return
		}
		f.Releases, f.Total = []release.Release{rel}, 1
	default:
		f.Offset = req.Search.Offset
		if !req.NoItems {
			found, err := h.cfg.Store.SearchReleases(r.Context(), req.Search)
			if err != nil {
				h.fail(w, r, nil, err)
				return
			}
			f.Releases, f.Total = found.Releases, found.Total
		}
	}
	writeDoc(w, FeedType, http.StatusOK, feedDoc(f))
}

// get answers t=get: the NZB of release id, counted as a grab.
func (h *Handler) get(w http.ResponseWriter, r *http.Request, acct Account, id int64) {
	started, err := h.grab(w, r, acct, id)
	switch {
	case err == nil:
	case started:
		h.abort(r, err)
	default:
		h.fail(w, r, nil, err)
	}
}

// grab sends the NZB of release id, streamed from the store one file at
// a time (Store.ReleaseFiles, nzb.Encoder), so its memory does not grow
// with the release. The grab is counted once the first file is read
// and before any byte goes out, so a grab limit reached can still
// answer 501: a client that leaves while the NZB is sent is still
// charged. A HEAD reads the release alone, builds no NZB and counts no
// grab: it answers the headers a GET would (no Content-Length, as the
// NZB is not built) and 501 when the user's grabs of the day are used
// up. A request whose client left (or whose deadline passed) before the
// grab counts none. started says whether the answer began: an error
// after that can only cut it (abort).
func (h *Handler) grab(w http.ResponseWriter, r *http.Request, acct Account, id int64) (started bool, err error) {
	ctx := r.Context()
	rel, err := h.cfg.Store.ReleaseDetails(ctx, id, 0)
	if err != nil {
		return false, err
	}
	if r.Method == http.MethodHead {
		switch {
		case rel.PartsSeen == 0:
			return false, nzb.ErrEmpty
		case acct.GrabLimit > 0 && acct.Grabs >= acct.GrabLimit:
			return false, ErrGrabLimit
		}
		nzbHeaders(w, rel)
		w.WriteHeader(http.StatusOK)
		return true, nil
	}
	files := func(each func(release.File) error) error { return h.cfg.Store.ReleaseFiles(ctx, id, each) }
	return nzb.Stream(w, rel, files, func() error {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("newznab: grab: %w", context.Cause(ctx))
		}
		if _, err := h.cfg.Store.Grab(ctx, acct.Name, id, h.cfg.Now()); err != nil {
			return err
		}
		nzbHeaders(w, rel)
		w.WriteHeader(http.StatusOK)
		// The answer begins now: a client whose download is then cut has
		// had a response, and does not send the request (and spend a
		// grab) again by itself.
		http.NewResponseController(w).Flush()
		return nil
	}) // nzb.ErrEmpty when no file had a segment
}

// nzbHeaders sets the headers downloaders read of the NZB of rel.
func nzbHeaders(w http.ResponseWriter, rel release.Release) {
	hd := w.Header()
	hd.Set("Content-Type", nzb.ContentType)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Content-Disposition", nzb.ContentDisposition(rel.Name))
	hd.Set("X-DNZB-Name", headerText(rel.Name))
	hd.Set("X-DNZB-Category", CategoryName(rel.Category))
}

// abort cuts an NZB whose sending failed midway: the failure is logged
// and the connection closed without the end of the body, so the
// downloader sees a cut download rather than a whole, shorter NZB.
func (h *Handler) abort(r *http.Request, err error) {
	h.failure(r, "newznab: NZB cut", err)
	panic(http.ErrAbortHandler)
}

// headerText is s as a header value can carry it: nzb.Text of it with
// every control character, format character (a bidi override) and line or
// paragraph separator a space, at most nzb.MaxFileName bytes. The name is
// a poster's, and the downloader shows it and names a directory after it.
func headerText(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp) {
			return ' '
		}
		return r
	}, nzb.Text(s))
	if len(s) > nzb.MaxFileName {
		s = strings.ToValidUTF8(s[:nzb.MaxFileName], "")
	}
	return strings.TrimSpace(s)
}

// writeDoc sends a whole document.
func writeDoc(w http.ResponseWriter, contentType string, status int, doc []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(doc)
}

// apiErrorOf maps an error of the store to its Newznab error; internal
// errors are 900.
func apiErrorOf(err error) *apiError {
	switch {
	case errors.Is(err, ErrBadKey):
		return errorf(codeBadKey, "Incorrect user credentials")
	case errors.Is(err, ErrSuspended):
		return errorf(codeSuspended, "Account suspended")
	case errors.Is(err, ErrRequestLimit), errors.Is(err, ErrBusy):
		return errorf(codeRequestLimit, "Request limit reached")
	case errors.Is(err, ErrGrabLimit):
		return errorf(codeGrabLimit, "Download limit reached")
	case errors.Is(err, edgeindex.ErrNotFound):
		return errorf(codeNoItem, "No such item")
	case errors.Is(err, edgeindex.ErrInvalid):
		return errorf(codeIncorrect, "Incorrect parameter")
	}
	return errorf(codeUnknown, "Unknown error")
}

// fail answers an error: e, or the Newznab error of err. Every Newznab
// error is sent with HTTP status 200, as most indexers do and clients
// expect (they read the code in the body), except 900, an error of the
// server itself, which is 500. What a 900 hides is logged (failure): as
// an error, as a warning when the deadline passed, at debug level when
// the client left.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, e *apiError, err error) {
	if e == nil {
		e = apiErrorOf(err)
		if internal(err) {
			h.failure(r, "newznab: api", err)
		}
	}
	status := http.StatusOK
	if e.Code == codeUnknown {
		status = http.StatusInternalServerError
	}
	writeDoc(w, XMLType, status, errorDoc(e))
}

// serveAPIMethod answers /api asked with a method other than GET or HEAD:
// status 405, with the XML error clients read.
func (h *Handler) serveAPIMethod(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Allow", "GET, HEAD")
	writeDoc(w, XMLType, http.StatusMethodNotAllowed, errorDoc(errorf(codeNoFunction, "No such function (the API answers GET only)")))
}

// serveAPINotFound answers every path under /api/: status 404, with the
// XML error clients read.
func (h *Handler) serveAPINotFound(w http.ResponseWriter, r *http.Request) {
	writeDoc(w, XMLType, http.StatusNotFound, errorDoc(errorf(codeNoFunction, "No such function (the API is at /api)")))
}
