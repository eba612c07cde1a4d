// Package backoff is the one exponential backoff with jitter that the
// worker's client, the prefetcher and the NNTP pool share. It imports only
// the standard library, so the worker SDK can use it without pulling in a
// server package.
package backoff

import "time"

// Wait is the wait after the n-th failure in a row (n >= 1): base doubled
// n-1 times, at most max, then jittered to between half and all of it by r,
// a number uniform in [0, 1) (math/rand/v2's Float64). A max below base
// caps the wait at max; n below 1 counts as 1.
func Wait(n int, base, max time.Duration, r float64) time.Duration {
	d := max
	if n < 1 {
		n = 1
	}
	if n-1 < 63 {
		if b := base << (n - 1); b > 0 && b < d && b>>(n-1) == base {
			d = b
		}
	}
	half := d / 2
	return half + time.Duration(r*float64(d-half))
}
