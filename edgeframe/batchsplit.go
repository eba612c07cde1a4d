package edgeframe

import (
	"bytes"
	"runtime"
	"sync"
	"unicode/utf8"

	"github.com/edgeindex/edgeindex/internal/jsonscan"
)

// A large body is decoded on up to GOMAXPROCS goroutines: the coordinator
// decodes a batch while its worker waits and its database is idle, and a
// 10,000-item batch (22 MB) took some 50 ms on one core.
//
// The items array is cut where MarshalBatch puts the bytes `,{"key":`
// between two items, and each goroutine reads the items of its part with
// the fast path's own item. Those bytes may also lie inside an item's
// value (a nested object with a key member), so a cut is only a guess: a
// part counts only if the one before it, read from the array's true start
// onwards, ends exactly at its cut, after a comma between two items, and
// the last part ends the array. A guess that misses sends the whole array
// to the one-goroutine scan, which then decides alone; the result is
// always what that scan gives (TestFastPathAgrees, FuzzDecodeBatchFast).

// split is how many goroutines (parts) read a body, each taking at least
// above bytes. Tests share small bodies out; decoding shares out a body
// as bodySplit says.
type split struct{ parts, above int }

// bodySplit is a body's split: GOMAXPROCS parts of at least a megabyte,
// some 2 ms of scanning, far more than a goroutine costs.
func bodySplit() split { return split{parts: runtime.GOMAXPROCS(0), above: 1 << 20} }

// of is how many parts n bytes make, at most sp.parts.
func (sp split) of(n int) int {
	if sp.above <= 0 {
		return 1
	}
	return min(sp.parts, n/sp.above)
}

// itemCut is what MarshalBatch writes between two items; a cut is at its
// "{".
var itemCut = []byte(`,{"key":`)

// validUTF8 is utf8.Valid, over the parts of p (sp) on goroutines of their own.
// Each part starts at a byte that starts a rune (not a continuation byte),
// so it is valid UTF-8 exactly when every part is; a text valid as UTF-8
// has at most three continuation bytes in a row.
func validUTF8(p []byte, sp split) bool {
	k := sp.of(len(p))
	if k < 2 {
		return utf8.Valid(p)
	}
	cuts := make([]int, 0, k+1)
	cuts = append(cuts, 0)
	for j := 1; j < k; j++ {
		c := j * len(p) / k
		for n := 0; c < len(p) && !utf8.RuneStart(p[c]); n++ {
			if n == 3 {
				return false
			}
			c++
		}
		cuts = append(cuts, c)
	}
	cuts = append(cuts, len(p))
	valid := make([]bool, k)
	var wg sync.WaitGroup
	for j := 1; j < k; j++ {
		wg.Go(func() { valid[j] = utf8.Valid(p[cuts[j]:cuts[j+1]]) })
	}
	valid[0] = utf8.Valid(p[:cuts[1]])
	wg.Wait()
	for _, v := range valid {
		if !v {
			return false
		}
	}
	return true
}

// itemsPart is what one goroutine of splitItems read.
type itemsPart struct {
	items []Item
	end   int  // the index after the part: its next cut, or after the "]"
	last  bool // the part ended the array
	ok    bool
	dirty bool
}

// splitItems reads the items array at s.i on several goroutines when it
// is large, as the comment above says. It cuts the rest of the body, so
// it is for an array that runs nearly to the body's end (a batch's); in a
// body of many batches its cuts would fall in later ones and miss. ok is
// false when it did not (a small array, no cut found, a guess that
// missed, or items the fast path gives up on); s is then unchanged, and
// the caller reads the array itself.
func (s *fast) splitItems() (items []Item, ok bool) {
	i := jsonscan.Space(s.p, s.i)
	if i >= len(s.p) || s.p[i] != '[' {
		return nil, false
	}
	rest := len(s.p) - i
	k := s.split.of(rest)
	if k < 2 {
		return nil, false
	}
	cuts := make([]int, 0, k)
	cuts = append(cuts, i+1)
	for j := 1; j < k; j++ {
		from := max(i+j*rest/k, cuts[len(cuts)-1]+1)
		c := bytes.Index(s.p[from:], itemCut)
		if c < 0 {
			break
		}
		cuts = append(cuts, from+c+1)
	}
	if len(cuts) < 2 {
		return nil, false
	}
	parts := make([]itemsPart, len(cuts))
	var wg sync.WaitGroup
	for j := 1; j < len(cuts); j++ {
		wg.Go(func() { parts[j] = s.itemsFrom(cuts[j], stopAt(cuts, j)) })
	}
	parts[0] = s.itemsFrom(cuts[0], stopAt(cuts, 0))
	wg.Wait()
	n := 0
	for j, pt := range parts {
		switch {
		case !pt.ok, pt.last != (j == len(parts)-1):
			return nil, false
		case !pt.last && pt.end != cuts[j+1]:
			return nil, false
		}
		n += len(pt.items)
	}
	items = make([]Item, 0, n)
	dirty := i != s.i // white space before the "["
	for _, pt := range parts {
		items = append(items, pt.items...)
		dirty = dirty || pt.dirty
	}
	s.i, s.dirty = parts[len(parts)-1].end, s.dirty || dirty
	return items, true
}

// stopAt is where the part starting at cuts[j] ends: the next cut, or -1
// for the last part, which ends with the array.
func stopAt(cuts []int, j int) int {
	if j+1 < len(cuts) {
		return cuts[j+1]
	}
	return -1
}

// itemsFrom reads items from the one at from, comma-separated, until the
// next starts at stop (a comma before it) or the array ends; a part that
// passes stop without reaching it exactly is not ok.
func (s *fast) itemsFrom(from, stop int) itemsPart {
	w := fast{p: s.p, i: from}
	var items []Item
	for {
		it, ok := w.item()
		if !ok {
			return itemsPart{}
		}
		items = append(items, it)
		if w.next(']') {
			return itemsPart{items: items, end: w.i, last: true, ok: true, dirty: w.dirty}
		}
		if !w.next(',') {
			return itemsPart{}
		}
		switch {
		case w.i == stop:
			return itemsPart{items: items, end: w.i, ok: true, dirty: w.dirty}
		case stop >= 0 && w.i > stop:
			return itemsPart{}
		}
	}
}
