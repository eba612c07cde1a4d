package release_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/release"
)

// TestSearchWordsOrder: a repeated word counts once, where it first comes.
func TestSearchWordsOrder(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"my", "show", "s01e01", "720p"}, release.SearchWords("My.Show.S01E01 my SHOW 720p.show"))
	require.Nil(t, release.SearchWords(" .-_ "))
}

// TestSearchWordsLinear: SearchWords finds repeats in a set, not by
// scanning the words so far: 8 times the distinct words take about 8
// times as long, where a scan takes 64 times. A count of operations is
// out of reach here (the work is comparisons, not allocations), so the
// test compares times, but only as a ratio between two sizes measured
// alike, the best of several runs each, with a wide margin (at most 24
// times): load on the machine slows both sizes alike.
func TestSearchWordsLinear(t *testing.T) {
	text := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "w%d ", i)
		}
		return b.String()
	}
	best := func(s string) time.Duration {
		d := time.Duration(1 << 62)
		for range 7 {
			runtime.GC()
			start := time.Now()
			release.SearchWords(s)
			d = min(d, time.Since(start))
		}
		return d
	}
	const n = 1024
	small, large := text(n), text(8*n)
	require.Len(t, release.SearchWords(large), 8*n)
	best(small) // warm up
	ts, tl := best(small), best(large)
	require.Less(t, tl, 24*ts, "%d words: %v, %d words: %v", n, ts, 8*n, tl)
}
