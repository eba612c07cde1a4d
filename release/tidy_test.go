package release

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDropEmptyPairsNested: a deep nest of empty brackets goes in one
// pass. Dropping one level per pass, as a rescan does, takes a pass and a
// copy of the text per level: quadratic work. The work is counted as
// allocations, which, unlike time, do not depend on the machine's load:
// one pass makes a few (the stack grows by doubling: about log2 of the
// depth), where a rescan makes one per level, 32768 here.
func TestDropEmptyPairsNested(t *testing.T) {
	n := 64 << 10
	for s, want := range map[string]string{
		strings.Repeat("[", n/2-1) + " " + strings.Repeat("]", n/2):                "]",
		strings.Repeat(`[ ( { < `, n/16) + `""` + strings.Repeat(` > } ) ]`, n/16): "",
	} {
		require.True(t, tidy(s) == want, "%q...", s[:20])
		allocs := testing.AllocsPerRun(3, func() { tidy(s) })
		require.LessOrEqual(t, allocs, 64.0, "%q...", s[:20])
	}
}

// TestDropEmptyPairsAsRescan: the one pass gives what dropping empty
// pairs until none is left gives (rescan, the rule as it was written
// first), on random texts of quotes, brackets, spaces and letters.
func TestDropEmptyPairsAsRescan(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	const alphabet = `"[](){}<> a`
	for range 20_000 {
		b := make([]byte, r.IntN(16))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		s := string(b)
		require.Equal(t, strings.Fields(rescan(s)), strings.Fields(dropEmptyPairs(s)), "%q", s)
	}
}

// FuzzDropEmptyPairs: the one pass and rescan agree on any text.
func FuzzDropEmptyPairs(f *testing.F) {
	for _, s := range []string{`[ ( ) ]`, `" [ ] "`, `"a" "" "b"`, `[ " ] "`, `<{ }> "`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 256 {
			return // rescan is quadratic
		}
		require.Equal(t, strings.Fields(rescan(s)), strings.Fields(dropEmptyPairs(s)), "%q", s)
	})
}

// rescan drops empty pairs of s until none is left, a pass per level.
func rescan(s string) string {
	for {
		t := dropEmptyPairsOnce(s)
		if t == s {
			return s
		}
		s = t
	}
}

// dropEmptyPairsOnce is one pass of the rule as it was written first: it
// drops the pairs empty at the start of the pass.
func dropEmptyPairsOnce(s string) string {
	var b []byte
	open := false // inside quotes
	last := 0     // s[last:i] is still to copy
	for i := 0; i < len(s); i++ {
		c := s[i]
		var closer byte
		switch c {
		case '"':
			if open {
				open = false
				continue
			}
			closer = '"'
		case '[':
			closer = ']'
		case '(':
			closer = ')'
		case '{':
			closer = '}'
		case '<':
			closer = '>'
		default:
			continue
		}
		j := skipSpace(s, i+1)
		if j < len(s) && s[j] == closer {
			b = append(b, s[last:i]...)
			b = append(b, ' ')
			last = j + 1
			i = j
			continue
		}
		if c == '"' {
			open = true
		}
	}
	if b == nil {
		return s
	}
	return string(append(b, s[last:]...))
}
