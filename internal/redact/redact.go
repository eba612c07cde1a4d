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
// url.URL.Redacted shows it ("postgres://u:xxxxx@host/db"), and a password
// query parameter's (lib/pq reads one). A raw URL that does not parse is
// not shown at all.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return unparsed
	}
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
