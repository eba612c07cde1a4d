package newznab

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/edgeindex/edgeindex/release"
)

// Newznab error codes, as clients read them.
const (
	codeBadKey       = 100 // incorrect user credentials
	codeSuspended    = 101 // account suspended
	codeMissing      = 200 // missing parameter
	codeIncorrect    = 201 // incorrect parameter
	codeNoFunction   = 202 // no such function
	codeNotAvailable = 203 // function not available
	codeNoItem       = 300 // no such item
	codeRequestLimit = 500 // request limit reached
	codeGrabLimit    = 501 // download limit reached
	codeUnknown      = 900 // unknown error
)

// apiError is a Newznab error: the code and the description a client
// reads in <error code description/>.
type apiError struct {
	Code        int
	Description string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("newznab error %d: %s", e.Code, e.Description)
}

func errorf(code int, format string, args ...any) *apiError {
	return &apiError{Code: code, Description: fmt.Sprintf(format, args...)}
}

// Bounds of a query, beyond those of release.Search.
const (
	// MaxQuery bounds the raw query string of an /api request, in bytes.
	MaxQuery = 16 << 10
	// MaxText bounds q, in bytes: room for MaxSearchWords words of
	// MaxSearchWord bytes and a separator each.
	MaxText = release.MaxSearchWords * (release.MaxSearchWord + 1)
	// MaxCategories bounds the distinct ids of cat.
	MaxCategories = 64
	// MaxAge bounds maxage, in days.
	MaxAge = 100_000
)

// idParams are the ids of shows and films clients filter by. The index
// knows none of them, so a search that carries one answers no items:
// never the unfiltered list.
var idParams = []string{"tvdbid", "rid", "tvrageid", "tvmazeid", "imdbid", "tmdbid", "traktid", "doubanid", "anidbid"}

// request is an /api query, parsed and checked.
type request struct {
	// Function is t: caps, search, tvsearch, movie, get or details.
	Function string
	// Search is what search, tvsearch and movie select, within
	// release.CheckSearch's bounds (and with its defaults applied).
	Search release.Search
	// NoItems: the search cannot be honoured (an id filter, or a q with
	// no word in it): it answers a feed with no items.
	NoItems bool
	// ID is the release get and details ask for.
	ID int64
}

// limits are the handler's settings a query is parsed against.
type limits struct {
	Max, Default  int // items a search answers
	MinCompletion int // percent
	Now           time.Time
}

// parseRequest parses the raw query string of an /api request. It checks
// every parameter the function reads, and only those (clients send more:
// they are ignored), and answers either a request whose Search is within
// release.CheckSearch's bounds or the Newznab error to answer.
//
// An empty parameter counts as absent. A parameter given twice must have
// the same value both times, else it is error 201.
func parseRequest(raw string, lim limits) (request, *apiError) {
	if len(raw) > MaxQuery {
		return request{}, errorf(codeIncorrect, "Incorrect parameter (the query is over %d bytes)", MaxQuery)
	}
	v, err := url.ParseQuery(raw)
	if err != nil {
		return request{}, errorf(codeIncorrect, "Incorrect parameter (a malformed query string)")
	}
	p := params{v: v}
	req := request{Function: p.one("t")}
	switch o := p.one("o"); o {
	case "", "xml":
	case "json":
		p.fail(errorf(codeNotAvailable, "Function not available (o=json: the API answers XML only)"))
	default:
		p.fail(errorf(codeIncorrect, "Incorrect parameter (o must be xml)"))
	}
	p.one("apikey") // only checked for a second, different value
	if p.err != nil {
		return request{}, p.err
	}
	switch req.Function {
	case "caps":
	case "search", "tvsearch", "movie":
		req.Search, req.NoItems = p.search(lim)
	case "get", "details":
		req.ID = p.id()
	case "":
		return request{}, errorf(codeNoFunction, "No such function (t is missing)")
	default:
		return request{}, errorf(codeNoFunction, "No such function (t=%s)", clip(req.Function))
	}
	if p.err != nil {
		return request{}, p.err
	}
	return req, nil
}

// params reads the values of a query and keeps the first error.
type params struct {
	v   url.Values
	err *apiError
}

func (p *params) fail(e *apiError) {
	if p.err == nil {
		p.err = e
	}
}

// one returns the value of parameter name, "" when it is absent. Given
// more than once, every value must be the same.
func (p *params) one(name string) string {
	vs := p.v[name]
	if len(vs) == 0 {
		return ""
	}
	for _, x := range vs[1:] {
		if x != vs[0] {
			p.fail(errorf(codeIncorrect, "Incorrect parameter (%s is given twice with different values)", name))
			return ""
		}
	}
	return vs[0]
}

// incorrect records error 201 for parameter name.
func (p *params) incorrect(name, why string) {
	p.fail(errorf(codeIncorrect, "Incorrect parameter (%s %s)", name, why))
}

// number returns parameter name as a decimal number from 0 to max, and
// whether it was given. A number past max is error 201, or max when clamp
// is set.
func (p *params) number(name string, max int64, clamp bool) (int64, bool) {
	s := p.one(name)
	if s == "" {
		return 0, false
	}
	n, ok := decimal(s)
	switch {
	case !ok:
		p.incorrect(name, "must be a number of digits 0-9")
		return 0, false
	case n > max && clamp:
		return max, true
	case n > max:
		p.incorrect(name, fmt.Sprintf("must be at most %d", max))
		return 0, false
	}
	return n, true
}

// decimal parses s as digits only (no sign, no space); a number past
// MaxInt64 is MaxInt64.
func decimal(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n > (math.MaxInt64-d)/10 {
			n = math.MaxInt64
			continue
		}
		n = n*10 + d
	}
	return n, true
}

// flag checks a 0/1 parameter.
func (p *params) flag(name string) {
	switch p.one(name) {
	case "", "0", "1":
	default:
		p.incorrect(name, "must be 0 or 1")
	}
}

// id returns the id of get and details: a positive number.
func (p *params) id() int64 {
	s := p.one("id")
	if s == "" {
		if p.err == nil {
			p.fail(errorf(codeMissing, "Missing parameter (id)"))
		}
		return 0
	}
	n, ok := decimal(s)
	if !ok || n < 1 || n == math.MaxInt64 {
		p.incorrect("id", "must be a release id: a positive number")
		return 0
	}
	return n
}

// search parses the parameters of search, tvsearch and movie.
func (p *params) search(lim limits) (release.Search, bool) {
	q := release.Search{Limit: lim.Default, MinCompletion: lim.MinCompletion}
	noItems := false

	text := strings.TrimSpace(p.one("q"))
	switch words := release.SearchWords(text); {
	case len(text) > MaxText:
		p.incorrect("q", fmt.Sprintf("is over %d bytes", MaxText))
	case len(words) > release.MaxSearchWords:
		p.incorrect("q", fmt.Sprintf("has over %d words", release.MaxSearchWords))
	case slices.ContainsFunc(words, func(w string) bool { return len(w) > release.MaxSearchWord }):
		p.incorrect("q", fmt.Sprintf("has a word over %d bytes", release.MaxSearchWord))
	case text != "" && len(words) == 0:
		noItems = true // nothing in it to search by: it matches nothing
	default:
		q.Words = words
	}

	q.Categories = p.categories()
	if n, ok := p.number("limit", int64(lim.Max), true); ok {
		if n == 0 {
			p.incorrect("limit", fmt.Sprintf("must be 1 to %d", lim.Max))
		}
		q.Limit = int(n)
	}
	if n, ok := p.number("offset", release.MaxSearchOffset, false); ok {
		q.Offset = int(n)
	}
	if n, ok := p.number("maxage", MaxAge, false); ok && n > 0 {
		q.PostedAfter = lim.Now.Add(-time.Duration(n) * 24 * time.Hour)
	}
	q.MinBytes, _ = p.size("minsize")
	q.MaxBytes, _ = p.size("maxsize")
	p.flag("extended") // every attr is always given
	// password=0 keeps the releases not known to be passworded (attr 0,
	// post-processed or not yet); 1, or none, every release.
	p.flag("password")
	q.NoPassword = p.one("password") == "0"
	q.Episode = p.episode()
	for _, name := range idParams {
		if p.one(name) != "" {
			noItems = true
		}
	}
	if p.err != nil {
		return release.Search{}, false
	}
	checked, err := release.CheckSearch(q)
	if err != nil {
		p.fail(errorf(codeIncorrect, "Incorrect parameter (%s)", clip(err.Error())))
		return release.Search{}, false
	}
	return checked, noItems
}

// size returns a size parameter in bytes.
func (p *params) size(name string) (int64, bool) {
	return p.number(name, math.MaxInt64-1, false)
}

// categories parses cat: a comma list of category ids (spaces and empty
// items are skipped), each 1000 to 9999, at most MaxCategories distinct.
func (p *params) categories() []int {
	s := p.one("cat")
	var cats []int
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		n, ok := decimal(item)
		if !ok || n < 1000 || n > 9999 {
			p.incorrect("cat", "must be category ids 1000 to 9999, separated by commas")
			return nil
		}
		if !slices.Contains(cats, int(n)) {
			cats = append(cats, int(n))
		}
		if len(cats) > MaxCategories {
			p.incorrect("cat", fmt.Sprintf("has over %d categories", MaxCategories))
			return nil
		}
	}
	return cats
}

// episode parses season and ep: season 1, 01, S01 or 00, ep 2 or E02; a
// daily show's season=2026&ep=11/29 is Season 2026, Episode 1129.
func (p *params) episode() *release.Episode {
	season, ep := p.one("season"), p.one("ep")
	if season == "" {
		if ep != "" {
			p.fail(errorf(codeMissing, "Missing parameter (season, which ep needs)"))
		}
		return nil
	}
	s, ok := prefixed(season, 's')
	if !ok {
		p.incorrect("season", "must be a season number of 1 to 4 digits (1, 01, S01) or a year")
		return nil
	}
	e := &release.Episode{Season: s}
	if ep == "" {
		return e
	}
	if month, day, daily := strings.Cut(ep, "/"); daily {
		m, okm := short(month, 2)
		d, okd := short(day, 2)
		if !okm || !okd || m < 1 || m > 12 || d < 1 || d > 31 || s < 1000 {
			p.incorrect("ep", "of a daily show must be MM/DD, with the year as season")
			return nil
		}
		e.Episode, e.Daily = m*100+d, true
		return e
	}
	n, ok := prefixed(ep, 'e')
	if !ok {
		p.incorrect("ep", "must be an episode number of 1 to 4 digits (2, 02, E02) or MM/DD")
		return nil
	}
	e.Episode = n
	return e
}

// prefixed parses 1 to 4 digits after an optional letter (either case).
func prefixed(s string, letter byte) (int, bool) {
	if s != "" && (s[0] == letter || s[0] == letter-'a'+'A') {
		s = s[1:]
	}
	return short(s, 4)
}

// short parses 1 to width digits.
func short(s string, width int) (int, bool) {
	if len(s) < 1 || len(s) > width {
		return 0, false
	}
	n, ok := decimal(s)
	return int(n), ok
}

// clip shortens a client's text quoted back in a description.
func clip(s string) string {
	const max = 64
	if len(s) > max {
		s = s[:max] + "..."
	}
	return s
}
