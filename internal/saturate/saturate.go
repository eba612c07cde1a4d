// Package saturate adds counts that peers send, saturating instead of
// wrapping: a node's headers, a part's bytes, a coordinator's counters.
// Standard library only.
package saturate

import "math"

// Add returns a + b for counts that are not negative, or MaxInt64 when the
// sum would pass it.
func Add(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
