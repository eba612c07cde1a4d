// Package redact hides the secrets in a URL before it is logged or put in
// an error: the one helper the stores and the daemons share.
package redact

import "net/url"

// URL returns raw with its password hidden: the user info's, as
// url.URL.Redacted shows it ("postgres://u:xxxxx@host/db"), and a password
// query parameter's (lib/pq reads one). A raw URL that does not parse is
// not shown at all.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(a URL that does not parse)"
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}
