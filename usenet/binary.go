package usenet

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
)

// Part is one article of a binary.
type Part struct {
	N int `json:"n"` // the part number, 1..Total
	// Article is the article number in the group it was read in: numbers
	// differ between providers, so a binary merged from two providers'
	// groups has parts numbered in each.
	Article   int64  `json:"article"`
	MessageID string `json:"messageId"` // as the overview sent it, with its <>
	Bytes     int64  `json:"bytes"`     // the article's size
}

// Binary is the value of an item: one file posted in parts, or the parts of
// it that one item carries. Items with the same key are the same binary;
// Merge joins them.
type Binary struct {
	Subject  string `json:"subject"` // Subject.Base: the subject without its part counter
	Name     string `json:"name"`    // Subject.Name
	Poster   string `json:"poster"`  // the From header
	Group    string `json:"group"`   // the newsgroup the parts were read in, without a provider
	Date     string `json:"date"`    // the Date header of the first part seen
	Total    int    `json:"total"`   // the number of parts the binary has
	Complete bool   `json:"complete"`
	Parts    []Part `json:"parts"` // ascending by N, one per part number
}

// Key returns the key of the binary that poster posted under subject base
// (Subject.Base) in total parts: the first 128 bits of a SHA-256, in hex.
// The total is part of the key, so a repost with another part count is
// another binary.
func Key(poster, base string, total int) string {
	h := sha256.New()
	h.Write([]byte(poster))
	h.Write([]byte{0})
	h.Write([]byte(base))
	h.Write([]byte{0})
	h.Write(strconv.AppendInt(nil, int64(total), 10))
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])[:16])
}

// Key returns b's key.
func (b *Binary) Key() string { return Key(b.Poster, b.Subject, b.Total) }

// Merge returns the union of two items of one binary (the same key), as a
// consumer of the results feed joins them: the parts of both, one per part
// number, and Complete when they cover 1..Total. The other fields are a's,
// or b's where a's are empty. Merge does not change a or b.
//
// When both have a part number, the part kept is a's, unless a's has no
// message-id and b's has one. The items of one binary read from several
// providers hold the same articles (a message-id is the article's
// everywhere), so a part both hold is the same article, named once. Two
// message-ids for one part number of one binary (a poster who posted a
// part again) cannot both be that part: the first is kept, so a consumer
// that merges items in the feed's order keeps the one read first.
//
// A Collator emits a binary's parts once, in one item, when it completes;
// a binary that straddles ranges handled without a carried window (or that
// was evicted from a full window) comes out as several incomplete items
// instead, which Merge joins in any order.
func Merge(a, b Binary) Binary {
	out := a
	if out.Subject == "" {
		out.Subject = b.Subject
	}
	if out.Name == "" {
		out.Name = b.Name
	}
	if out.Poster == "" {
		out.Poster = b.Poster
	}
	if out.Group == "" {
		out.Group = b.Group
	}
	if out.Date == "" {
		out.Date = b.Date
	}
	if out.Total == 0 {
		out.Total = b.Total
	}
	parts := make([]Part, 0, len(a.Parts)+len(b.Parts))
	parts = append(parts, a.Parts...)
	parts = append(parts, b.Parts...)
	slices.SortStableFunc(parts, func(x, y Part) int {
		if x.N != y.N {
			return x.N - y.N
		}
		return cmp.Compare(b2i(x.MessageID == ""), b2i(y.MessageID == ""))
	})
	out.Parts = slices.CompactFunc(parts, func(x, y Part) bool { return x.N == y.N })
	out.Complete = covers(out.Parts, out.Total)
	return out
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// covers reports whether sorted, deduplicated parts are exactly 1..total.
func covers(parts []Part, total int) bool {
	return total > 0 && len(parts) == total && parts[0].N == 1 && parts[len(parts)-1].N == total
}
