package edgeframe

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// splitBody is a batch body of n items whose values hold a rune of three
// bytes and escapes, so that guessed cuts land on runes. With nested,
// some values also hold the bytes of a cut (a nested object with a key
// member), so that guessed cuts land inside values too.
func splitBody(t testing.TB, n int, nested bool) []byte {
	items := make([]Item, n)
	for i := range items {
		v := fmt.Sprintf(`{"name":"naïve € %d","parts":[{"n":%d},{"b":[]}],"s":"q\"\\u00e9"}`, i, i)
		if nested && i%7 == 3 {
			v = fmt.Sprintf(`[%d,{"key":"x"},{"key":"a","value":1}]`, i)
		}
		items[i] = Item{Key: fmt.Sprintf("k%d", i), Value: json.RawMessage(v)}
	}
	body, err := MarshalBatch(Batch{From: 1, To: int64(n), Headers: int64(n), Items: items, Missing: []int64{2}})
	require.NoError(t, err)
	return body
}

// A body read in parts gives what one goroutine reading it gives, for
// every way of sharing it out; the parts are read in parallel when the
// cuts hold, and a cut inside a value sends the array to one goroutine.
func TestSplitItemsAgrees(t *testing.T) {
	t.Parallel()
	for _, nested := range []bool{false, true} {
		body := splitBody(t, 300, nested)
		one, ok := decodeFastSplit(body, split{})
		require.True(t, ok)
		require.Len(t, one.Items, 300)
		for _, sp := range []split{{2, 64}, {3, 100}, {7, 1000}, {16, 1}, {5, len(body) / 5}} {
			got, ok := decodeFastSplit(body, sp)
			require.True(t, ok, "%+v", sp)
			require.Equal(t, one, got, "%+v", sp)
		}
	}
	body := splitBody(t, 300, false)
	one, _ := decodeFastSplit(body, split{})
	for _, sp := range []split{{2, 64}, {3, 100}, {7, 1000}, {16, 1}} {
		s := fast{p: body, split: sp}
		s.i = strings.Index(string(body), `"items":`) + len(`"items":`)
		items, ok := s.splitItems()
		require.True(t, ok, "the cuts of %+v hold: the items were read in parts", sp)
		require.Equal(t, one.Items, items)
		require.Equal(t, byte(','), body[s.i], "after the array")
	}
	nested := splitBody(t, 300, true)
	s := fast{p: nested, split: split{200, 1}} // a cut at nearly every item
	s.i = strings.Index(string(nested), `"items":`) + len(`"items":`)
	_, ok := s.splitItems()
	require.False(t, ok, "a cut inside a value is found out")
}

// A body broken anywhere (a byte changed, one cut out, a rune split) is
// accepted in parts exactly when one goroutine accepts it, with the same
// batch.
func TestSplitItemsBrokenBodies(t *testing.T) {
	t.Parallel()
	body := splitBody(t, 120, true)
	rng := rand.New(rand.NewPCG(1, 2))
	bytesOf := []byte(`{}[],:"\ x1é` + "\xe2\x82\xac\xff\x80")
	for range 3000 {
		b := []byte(string(body))
		i := rng.IntN(len(b))
		switch rng.IntN(3) {
		case 0:
			b[i] = bytesOf[rng.IntN(len(bytesOf))]
		case 1:
			b = append(b[:i], b[i+1:]...)
		default:
			b = append(b[:i], append([]byte{bytesOf[rng.IntN(len(bytesOf))]}, b[i:]...)...)
		}
		want, wantOK := decodeFastSplit(b, split{})
		for _, sp := range []split{{2, 64}, {3, 500}, {9, 1}} {
			got, ok := decodeFastSplit(b, sp)
			require.Equal(t, wantOK, ok, "%+v at %d: %q", sp, i, b[max(i-20, 0):min(i+20, len(b))])
			require.Equal(t, want, got)
		}
	}
}

// validUTF8 in parts agrees with utf8.Valid, wherever the parts fall.
func TestValidUTF8Parts(t *testing.T) {
	t.Parallel()
	texts := []string{"", "a", "é", "€€€€€€€€", "😀😀😀😀😀", "a\xffb", "\x80\x80\x80\x80\x80\x80", "€\x82\xac", "ab\xe2\x82", "\xf0\x9f\x98\x80\x80"}
	for _, s := range texts {
		for parts := 1; parts <= 8; parts++ {
			require.Equal(t, utf8.ValidString(s), validUTF8([]byte(s), split{parts, 1}), "%q in %d parts", s, parts)
		}
	}
}
