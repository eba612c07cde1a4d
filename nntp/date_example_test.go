package nntp_test

import (
	"fmt"

	"github.com/edgeindex/edgeindex/nntp"
)

// ParseDate takes the Date forms seen on Usenet, trailing comments and
// obsolete zones included, and gives the instant in UTC.
func ExampleParseDate() {
	for _, s := range []string{
		"Fri, 02 Jan 2026 04:04:05 +0100 (CET)",
		"2 Jan 26 03:04:05 GMT",
		"Fri Jan  2 03:04:05 2026",
		"not a date",
	} {
		t, ok := nntp.ParseDate(s)
		fmt.Println(t.Format("2006-01-02 15:04:05"), ok)
	}
	// Output:
	// 2026-01-02 03:04:05 true
	// 2026-01-02 03:04:05 true
	// 2026-01-02 03:04:05 true
	// 0001-01-01 00:00:00 false
}
