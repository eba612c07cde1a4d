package nntp_test

import (
	"testing"
	"time"

	"github.com/edgeindex/edgeindex/nntp"
)

// FuzzParseDate: a provider's Date field, whatever its bytes, parses to
// a UTC time from 1970 to 9999 or to nothing, and never panics.
func FuzzParseDate(f *testing.F) {
	for _, s := range []string{
		"Mon, 02 Jan 2006 15:04:05 -0700",
		"2 Jan 2006 15:04:05 GMT",
		"Mon, 2 Jan 2006 15:04:05 +0000 (UTC)",
		"Monday, 02-Jan-06 15:04:05 MST",
		"2006-01-02T15:04:05Z",
		"Thu, 01 Jan 1970 00:00:00 GMT",
		"Fri, 31 Dec 9999 23:59:59 +2359",
		"", " ", "(", "Mon, 32 Jan 2006 25:61:61 +9999",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := nntp.ParseDate(s)
		if !ok {
			if !d.IsZero() {
				t.Fatalf("ParseDate(%q) = %v, false: want the zero time", s, d)
			}
			return
		}
		if d.Location() != time.UTC || d.Year() < 1970 || d.Year() > 9999 {
			t.Fatalf("ParseDate(%q) = %v: want UTC, 1970 to 9999", s, d)
		}
	})
}
