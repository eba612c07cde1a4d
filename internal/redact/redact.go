// Package redact hides the secrets in a URL before it is logged or put in
// an error: the one helper the stores and the daemons share.
package redact

import (
	"net/url"
	"slices"
	"strings"
)

// Hidden replaces every value URL and URLShowing hide.
const Hidden = "xxxxx"

// URL returns raw with its password hidden: the user info's, as
// url.URL.Redacted shows it ("postgres://u:xxxxx@host/db"), a password
// query parameter's (pgx reads one) and the fragment. A raw URL that
// does not parse, has no scheme, or whose "@" stands after the host
// (misplacedUserInfo), is not shown at all.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" { // a key=value DSN's password is in its "path"
		return unparsed
	}
	if misplacedUserInfo(u) || strings.Contains(u.RawQuery, "@") {
		return Misplaced
	}
	hideFragment(u)
	if q := u.Query(); q.Has("password") {
		q.Set("password", Hidden)
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// URLShowing is URL for a URL whose query may carry secrets under any name
// (a secret given under a wrong one): it shows only the values of the
// parameters named in show, each itself passed through URL (an endpoint
// parameter may be a URL with a password), and hides every other value.
func URLShowing(raw string, show ...string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return unparsed
	}
	if misplacedUserInfo(u) {
		return Misplaced
	}
	hideFragment(u)
	if u.RawQuery != "" {
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			u.RawQuery = Hidden
		} else {
			for k, vs := range q {
				for i, v := range vs {
					if slices.Contains(show, k) {
						vs[i] = shown(v)
					} else {
						vs[i] = Hidden
					}
				}
			}
			u.RawQuery = q.Encode()
		}
	}
	return u.Redacted()
}

// shown is the value of a parameter URLShowing shows: a URL with a host,
// its password hidden, or the value as it is when it holds no '@' (user
// info) nor '?' ("127.0.0.1:9000"); anything else is not shown at all.
func shown(v string) string {
	if u, err := url.Parse(v); err == nil && u.Host != "" {
		return URL(v)
	}
	if !strings.ContainsAny(v, "@?") {
		return v
	}
	return unparsed
}

// unparsed stands for a URL that does not parse: it might hold a secret
// anywhere.
const unparsed = "(a URL that does not parse)"

// misplacedUserInfo reports whether an "@" stands in u's path or fragment.
// A password holding "/", "?" or "#" unescaped ends the authority early:
// url.Parse then reads no user info, the user as the host, the password's
// start as the port and its rest, up to the "@", as path, query or
// fragment, so that Redacted would show it all. (URL also refuses an "@"
// in the query; URLShowing hides the query's values, some of which are
// URLs with user info.)
func misplacedUserInfo(u *url.URL) bool {
	return strings.Contains(u.Path, "@") || strings.Contains(u.Fragment, "@")
}

// hideFragment hides u's fragment, which no URL here needs and which
// Redacted would show as it is.
func hideFragment(u *url.URL) {
	if u.Fragment != "" || u.RawFragment != "" {
		u.Fragment, u.RawFragment = Hidden, ""
	}
}

// Misplaced stands for a URL with an "@" after its host: its password,
// not percent-encoded, may be anywhere in it.
const Misplaced = "(a URL with an \"@\" after its host: percent-encode the password)"
