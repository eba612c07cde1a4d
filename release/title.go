package release

import (
	"strings"
)

// title returns the readable name outside the quotes of a subject whose
// quoted file name is obfuscated, or "" when there is none. The
// candidates, in order: the longest file name outside the quotes (its
// stem); the text outside the quotes, brackets and all, from where the
// tags that lead it end ("Movie Title (2020) [1080p]" of "[PRiVATE] Movie
// Title (2020) [1080p]"), judged with its brackets read as spaces, so that
// a year or a tag in brackets is part of the title and a bracketed web
// site or IRC channel refuses it; the text outside the quotes and outside
// brackets; each bracketed segment ("Show.S01E01.720p.HDTV" of
// "[FULL]-[ Show.S01E01.720p.HDTV ]").
// The first candidate that reads as a release's name wins (see
// releaseLike): "[www.UsenetRevolution.com]", "(Uploaded by NZBGeek)" or
// "Posted by AutoPoster v1.2" name no release, and the hashed stem stays.
func title(longest, outside string) string {
	if releaseLike(longest) {
		return longest
	}
	if t := tidy(outside[titleStart(outside):]); releaseLike(tidy(unbracket(t))) {
		return t
	}
	rest, segments := brackets(outside)
	if t := tidy(rest); releaseLike(t) {
		return t
	}
	for _, seg := range segments {
		if t := tidy(seg); releaseLike(t) {
			return t
		}
	}
	return ""
}

// titleStart returns where the text of s starts after the bracketed tags
// and the separators that lead it: 10 in "[PRiVATE] Movie (2020)", len(s)
// when s is only tags.
func titleStart(s string) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '[' || c == '(' || c == '{' || c == '<':
			depth++
		case c == ']' || c == ')' || c == '}' || c == '>':
			if depth > 0 {
				depth--
			}
		case depth > 0 || isSpace(c) || strings.IndexByte("-_=~|:;,.+*#/\\", c) >= 0:
		default:
			return i
		}
	}
	return len(s)
}

// unbracket returns s with each bracket replaced by a space.
func unbracket(s string) string {
	return strings.Map(func(r rune) rune {
		if strings.ContainsRune("[](){}<>", r) {
			return ' '
		}
		return r
	}, s)
}

// uuidWord reports whether w is a UUID: hex digits in groups of 8, 4, 4,
// 4 and 12, joined by dashes. Posters use them as obfuscated file names.
func uuidWord(w string) bool {
	if len(w) != 36 {
		return false
	}
	for i := 0; i < len(w); i++ {
		c := w[i]
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return false
			}
			continue
		}
		if !isDigit(c) && (c < 'a' || c > 'f') && (c < 'A' || c > 'F') {
			return false
		}
	}
	return true
}

// maxSegments bounds the bracketed segments title looks at.
const maxSegments = 32

// brackets splits s into the text outside brackets and the contents of its
// outermost bracketed segments ((), [], {}, <>), at most maxSegments of
// them; a bracket left open runs to the end of s.
func brackets(s string) (rest string, segments []string) {
	var b strings.Builder
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[', '(', '{', '<':
			if depth == 0 {
				start = i + 1
				b.WriteByte(' ')
			}
			depth++
			continue
		case ']', ')', '}', '>':
			if depth > 0 {
				depth--
				if depth == 0 && len(segments) < maxSegments {
					segments = append(segments, s[start:i])
				}
				continue
			}
		}
		if depth == 0 {
			b.WriteByte(s[i])
		}
	}
	if depth > 0 && len(segments) < maxSegments {
		segments = append(segments, s[start:])
	}
	return b.String(), segments
}

// releaseLike reports whether t reads as the name of a release, and not
// as a poster's boilerplate: readable (at least 3 letters and a separator
// between letters or digits), not obfuscated, no brackets or quotes left
// in it (bracket soup), no URL, host name, e-mail or IRC channel, no
// "posted by" or "uploaded by", and either an episode (ParseEpisode) or a
// category other than 8010 Misc and 8020 Hashed (Categorize: a year and
// a video word is a movie).
func releaseLike(t string) bool {
	if t == "" || len(t) > MaxSubjectBytes || !readable(t) || strings.ContainsAny(t, "[](){}<>\"@#") {
		return false
	}
	low := strings.ToLower(t)
	for _, w := range boilerplate {
		if strings.Contains(low, w) {
			return false
		}
	}
	for _, w := range strings.FieldsFunc(low, func(r rune) bool { return r == '.' || r == ' ' || r == '/' }) {
		if hostWords[w] {
			return false
		}
	}
	if ParseEpisode(t) != nil {
		return true
	}
	c := Categorize(t, nil)
	return c != CatMisc && c != CatHashed
}

// boilerplate is what posters write around a release that is no part of
// its name, in lower case.
var boilerplate = [...]string{"://", "www.", "posted by", "uploaded by", "upped by", "presented by", "powered by",
	"brought to you by", "autoposter"}

// hostWords are the last words of host names: a candidate title with one
// of them as a word ("usenetrevolution.com") is a web site.
var hostWords = map[string]bool{"com": true, "net": true, "org": true, "info": true, "biz": true, "www": true}

// readable reports whether t reads as a name: at least 3 letters, a
// separator (dot, dash, underscore or space) between two of its letters
// or digits, and not itself obfuscated.
func readable(t string) bool {
	if obfuscated(t) {
		return false
	}
	letters, sep := 0, false
	for i := 0; i < len(t); i++ {
		c := t[i]
		if isLetter(c) {
			letters++
		}
		if (c == '.' || c == '-' || c == '_' || c == ' ') && i > 0 && i+1 < len(t) && isAlnum(t[i-1]) && isAlnum(t[i+1]) {
			sep = true
		}
	}
	return letters >= 3 && sep
}
