package release

import (
	"context"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/edgeindex/edgeindex"
)

// Search selects releases the way a Newznab search does. The zero Search
// reads the newest complete releases, 100 of them.
type Search struct {
	// Words must all match a word of the release's name (AND), in any
	// order and case; SearchWords makes them from what a user typed.
	// None: every release.
	Words []string
	// Categories are Newznab category ids; a release matches when its
	// category is one of them, or a subcategory of a parent among them
	// (5000 matches 5040). None: every category.
	Categories []int
	// Episode, when set, keeps the TV releases of that season (Episode 0)
	// or of that one episode. A daily show's "episode" is its date:
	// Season the year, Episode month*100+day.
	Episode *Episode
	// PostedAfter keeps the releases posted after it (maxage); zero: any.
	PostedAfter time.Time
	// MinBytes and MaxBytes bound the size; 0: no bound.
	MinBytes, MaxBytes int64
	// MinCompletion is the share of its parts a release needs to be
	// listed, in percent (1 to 100); 0 means 100: complete releases only.
	MinCompletion int
	// NoPassword keeps the releases whose password attr is 0: none
	// found, or not post-processed yet (Newznab's password=0).
	NoPassword bool
	// Offset skips that many matches (at most MaxSearchOffset); Limit is
	// the page size (0: DefaultSearchLimit, at most MaxSearchLimit).
	Offset, Limit int
}

// Found is one page of a Search, newest first (by posting date, then id).
type Found struct {
	Releases []Release
	// Total counts every match, up to MaxSearchTotal: a search with more
	// says MaxSearchTotal.
	Total int
}

// Episode is a TV episode as a release name gives it: S01E02 is Season 1,
// Episode 2; a season pack (S01) has Episode 0; a daily show's
// 2026.11.29 is Season 2026, Episode 1129, Daily.
type Episode struct {
	Season  int  `json:"season"`
	Episode int  `json:"episode,omitempty"`
	Daily   bool `json:"daily,omitempty"`
}

// Bounds of a Search.
const (
	DefaultSearchLimit = 100
	MaxSearchLimit     = 1000
	MaxSearchOffset    = 10_000
	MaxSearchTotal     = 10_000
	MaxSearchWords     = 16
	MaxSearchWord      = 64 // bytes
)

// Searcher searches releases by name. sqlstore implements it on SQLite
// (FTS5) and PostgreSQL (full text with a GIN index).
type Searcher interface {
	SearchReleases(ctx context.Context, q Search) (Found, error)
}

// SearchWords splits text into the words a name is searched by: runs of
// letters and digits, in lower case; everything else (dots, dashes,
// underscores, spaces, invalid UTF-8) separates them. A repeated word
// counts once, where it first comes: the words are in the order of their
// first use. A store indexes a release's name with it and a search's
// words must come from it, so both sides split alike. It takes time
// linear in text's length (a set finds the repeats), and a release's
// name is at most MaxNameBytes long.
func SearchWords(text string) []string {
	var words []string
	seen := map[string]bool{}
	for w := range strings.FieldsFuncSeq(text, func(r rune) bool {
		return r == utf8.RuneError || !(unicode.IsLetter(r) || unicode.IsDigit(r))
	}) {
		w = strings.ToLower(w)
		if !seen[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	return words
}

// CheckSearch applies Search's defaults and bounds; stores call it. A
// word that SearchWords would not give back as it is, too many words, or
// a bound out of range is edgeindex.ErrInvalid.
func CheckSearch(q Search) (Search, error) {
	if q.Limit == 0 {
		q.Limit = DefaultSearchLimit
	}
	if q.MinCompletion == 0 {
		q.MinCompletion = 100
	}
	switch {
	case q.Limit < 0 || q.Limit > MaxSearchLimit:
		return q, edgeindex.Invalidf("search: limit %d must be 1 to %d", q.Limit, MaxSearchLimit)
	case q.Offset < 0 || q.Offset > MaxSearchOffset:
		return q, edgeindex.Invalidf("search: offset %d must be 0 to %d", q.Offset, MaxSearchOffset)
	case q.MinCompletion < 0 || q.MinCompletion > 100:
		return q, edgeindex.Invalidf("search: min completion %d must be 1 to 100", q.MinCompletion)
	case q.MinBytes < 0 || q.MaxBytes < 0:
		return q, edgeindex.Invalidf("search: sizes must not be negative")
	case len(q.Words) > MaxSearchWords:
		return q, edgeindex.Invalidf("search: %d words, at most %d", len(q.Words), MaxSearchWords)
	case q.Episode != nil && (q.Episode.Season < 0 || q.Episode.Season > 9999 || q.Episode.Episode < 0 || q.Episode.Episode > 9999):
		return q, edgeindex.Invalidf("search: season and episode must be 0 to 9999")
	}
	for _, w := range q.Words {
		if len(w) > MaxSearchWord {
			return q, edgeindex.Invalidf("search: a word of %d bytes, at most %d", len(w), MaxSearchWord)
		}
		if ws := SearchWords(w); len(ws) != 1 || ws[0] != w {
			return q, edgeindex.Invalidf("search: %q is not one word of SearchWords", w)
		}
	}
	for _, c := range q.Categories {
		if c < 1000 || c > 9999 {
			return q, edgeindex.Invalidf("search: category %d is no Newznab category", c)
		}
	}
	return q, nil
}
