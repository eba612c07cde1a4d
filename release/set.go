package release

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode/utf8"
)

// Set is what a binary's subject says about the release it belongs to.
type Set struct {
	// Name is the release's name for people: the stem of the first quoted
	// file name ("My.Show.S01E02" for "My.Show.S01E02.part01.rar"), else
	// the stem of the longest word that names a file, else Key's text in
	// its original case. When the quoted stem is obfuscated (one random
	// looking word: "x7k2q9", see ParseSet) and the text outside the
	// quotes holds a release's name, that title wins. At most
	// MaxNameBytes long: a longer name is cut at the end of a word near
	// the bound and ends with "…". Never empty when Key is not.
	Name string
	// Key is the normalized subject that every file of the release shares:
	// the subject without file counters, sizes, "yEnc", separators and the
	// extensions of file names, white space collapsed, lower case. Files of
	// one poster with the same Key are one release (within a time window).
	// At most MaxKeyBytes long.
	Key string
	// File and Files are the subject's file counter, [File/Files] or one
	// of its other forms, or 0 and 0 when it has none.
	File, Files int
}

// ParseSet reads the release a binary belongs to out of its subject: the
// binary's normalized subject as usenet.ParseSubject returns it (Base,
// without the part counter). It never panics, whatever the bytes. It reads
// only the subject's first MaxSubjectBytes (cut at a UTF-8 boundary), and
// takes time linear in what it reads (no regular expressions, no rule that
// rescans: it runs for every binary the builder consumes).
//
// A subject of MaxSubjectBytes or more is cut, and the cut falls a few
// bytes apart in the files of one posting (their counters and extensions
// differ in width), so the key of such a subject does not end at the
// cut: it is the first MaxKeyBytes/2 bytes of the normalized text, or,
// when normalization (long runs of spaces, sizes, noise) shrank the read
// text below that, the first MaxKeyBytes/4, /8 and so on, down to 64
// bytes, the largest that ends at least 64 bytes before the text does.
// The limit: if one file's normalized text ends just above one of those
// steps and another's just below, the two keys differ and the posting
// splits; that takes a posting whose read text shrinks more than four
// times in normalization, and whose files' ends straddle a step.
//
// The rules follow NNTmux's generic collection cleaning, so that every file
// of one posting cleans to one Key:
//
//   - file counters go, in brackets or as words (the first one is
//     File/Files; a counter n/N needs 1 <= n <= N, numbers of 1 to 5
//     digits; the forms are below);
//   - sizes go: "52.5 MB", "1,2 GB", "700MB", "4 KiB", "123456 bytes",
//     "(12 KB)";
//   - the words "yEnc" and "AutoRarParNNNN" go;
//   - every file name, quoted or not, loses its extensions (Stem):
//     "name.part01.rar", "name.r00", "name.7z.001", "name.vol01+02.par2",
//     "name.nfo", "name.sfv", "name-sample.mkv" all become "name";
//   - empty quotes and brackets, and words of punctuation alone ("-"), go;
//   - white space is collapsed; Key is in lower case.
//
// Name is the first quoted file's stem, unless that stem is obfuscated:
// one word of ASCII letters and digits only (no dot, dash, space or
// underscore), of at least 6, that is a hex digest (16 or more hex
// digits), or 16 or more with a digit, or has letters and digits that
// alternate at least 4 times ("x7k2q9", and not an episode like
// S01E02E03), or 16 or more letters with at most one vowel in 8; or a
// UUID. Then a title outside the quotes wins when it reads as a release's
// name (an episode, or a category Categorize knows; see title): the
// longest file name there, else the text outside the quotes with its
// brackets, after the tags that lead it ("Movie Title (2020) 1080p" in
// `[PRiVATE] Movie Title (2020) 1080p [1/30] - "a1b2c3d4e5f6.rar"`), else
// the text outside the quotes and brackets ("My.Show.S01E01.720p" in
// `My.Show.S01E01.720p [www.example.com] - "x7k2q9.part1.rar"`), else a
// bracketed segment ("Show.S01E01" in `[FULL]-[ Show.S01E01 ]-[1/30]
// - "x7k2q9z8.r00"`). Web sites, "posted by" notes and bracket soup name
// nothing: without a title the hashed stem stays. Only Name changes: Key
// is the same for every file of the posting either way.
//
// The file counters:
//
//	[01/15]  (1/40)  {1/5}  [1 of 5]  [1\5]  (01 von 20)  File 1 of 15  1 of 15  01/15
func ParseSet(subject string) Set {
	var set Set
	long := len(subject) >= MaxSubjectBytes // the read text may end anywhere
	subject = validText(cutText(subject, MaxSubjectBytes))
	s := counters(subject, &set)
	s = sizesAndNoise(s)

	// Quoted names, then the other words (split at white space and
	// brackets): each one that is a file name becomes its stem.
	s = strings.ReplaceAll(s, "&quot;", `"`)
	var b, outside strings.Builder
	b.Grow(len(s))
	quoted, longest, longestOutside := "", "", ""
	for i := 0; i < len(s); {
		if s[i] == '"' {
			k := strings.IndexByte(s[i+1:], '"')
			if k < 0 {
				b.WriteByte('"')
				i++
				continue
			}
			name := strings.TrimSpace(s[i+1 : i+1+k])
			stem := Stem(name)
			if quoted == "" {
				quoted = stem
			}
			if stem != name && len(stem) > len(longest) {
				longest = stem
			}
			b.WriteByte('"')
			b.WriteString(stem)
			b.WriteByte('"')
			i += k + 2
			continue
		}
		if isDelim(s[i]) {
			b.WriteByte(s[i])
			outside.WriteByte(s[i])
			i++
			continue
		}
		j := i
		for j < len(s) && !isDelim(s[j]) {
			j++
		}
		word := s[i:j]
		stem := Stem(word)
		if stem != word && len(stem) > len(longest) {
			longest = stem
		}
		if stem != word && len(stem) > len(longestOutside) {
			longestOutside = stem
		}
		b.WriteString(stem)
		outside.WriteString(stem)
		i = j
	}
	s = tidy(b.String())
	set.Key = keyText(strings.ToLower(s), long)
	switch {
	case quoted != "" && (obfuscated(quoted) || uuidWord(quoted)):
		set.Name = quoted
		if t := title(longestOutside, outside.String()); t != "" {
			set.Name = t
		}
	case quoted != "":
		set.Name = quoted
	case longest != "":
		set.Name = longest
	default:
		set.Name = s
	}
	if set.Key == "" { // nothing but counters and noise
		set.Name = strings.TrimSpace(subject)
		set.Key = keyText(strings.ToLower(set.Name), long)
	}
	set.Name = cutName(set.Name, set.Key)
	return set
}

// Bounds of ParseSet. A subject may be as long as an overview line (up to
// 1 MiB), far longer than any release's name; ParseSet reads its first
// MaxSubjectBytes, so its work is bounded whatever the subject. Every file
// of one posting is cut the same way, so their keys agree as long as the
// parts that differ (counters, extensions) come early: the key is cut to
// MaxKeyBytes, and the key of a subject that was cut ends at a length of
// its own, before the ends of the read text, where the cuts of two files
// of one posting may differ (see ParseSet). A name is cut to MaxNameBytes:
// PostgreSQL's full text search refuses texts over 1 MB, and no release
// name is longer than a few hundred bytes.
const (
	MaxSubjectBytes = 8 << 10
	MaxKeyBytes     = 4 << 10
	MaxNameBytes    = 512
)

// keyMargin is how much longer the normalized text of one file of a long
// posting may be than another's, for keyText: the read text of each ends
// at MaxSubjectBytes, where their counters and extensions of different
// widths put them a few bytes apart.
const keyMargin = 64

// keyText cuts the normalized text of a subject to its key. When the
// subject was cut (long), the normalized text ends wherever the cut fell,
// a few bytes apart for two files of one posting; so the key ends at a
// length that does not depend on that end: MaxKeyBytes/2, or, when the
// normalization has shrunk the read text below that plus keyMargin, the
// largest of MaxKeyBytes/4, /8... (down to keyMargin) that is at least
// keyMargin short of the text's end.
func keyText(key string, long bool) string {
	if !long {
		return cutText(key, MaxKeyBytes)
	}
	n := MaxKeyBytes / 2
	for n > keyMargin && len(key) < n+keyMargin {
		n /= 2
	}
	return strings.TrimRight(cutText(key, n), " ")
}

// cutText returns s cut to at most max bytes, at the start of a UTF-8
// sequence (or of an invalid byte), so that a valid s stays valid.
func cutText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max
	for n > 0 && n > max-utf8.UTFMax && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// nameSeps are the separators and openers a cut name may not end with.
const nameSeps = " \t-_.=~|:;,+([{<\""

// nameBackoff is how far back from MaxNameBytes cutName looks for the
// end of a word.
const nameBackoff = 64

// cutName cuts a name to MaxNameBytes, cleanly: at the last separator
// within nameBackoff bytes of the bound when there is one (else at a
// UTF-8 boundary), without the separators the cut leaves at its end, and
// with "…" to show the cut. A name that is all separators falls back to
// the key cut the same way, and then to its first bytes as they are: the
// name is never empty when the key is not.
func cutName(name, key string) string {
	if len(name) <= MaxNameBytes {
		return name
	}
	if t := cutWords(name); t != "" {
		return t
	}
	if t := cutWords(key); t != "" {
		return t
	}
	return strings.TrimSpace(cutText(name, MaxNameBytes-len(ellipsis))) + ellipsis
}

// ellipsis ends a name that was cut.
const ellipsis = "…"

// cutWords cuts s as cutName does, or returns "" when that leaves
// nothing; an s within the bound is returned as it is.
func cutWords(s string) string {
	if len(s) <= MaxNameBytes {
		return s
	}
	t := cutText(s, MaxNameBytes-len(ellipsis))
	if strings.IndexByte(nameSeps, s[len(t)]) < 0 { // the cut is inside a word
		start := max(0, len(t)-nameBackoff)
		if i := strings.LastIndexAny(t[start:], nameSeps); i >= 0 {
			t = t[:start+i]
		}
	}
	t = strings.TrimRight(t, nameSeps)
	if t == "" {
		return ""
	}
	return t + ellipsis
}

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

// isDelim reports whether c ends a word for ParseSet.
func isDelim(c byte) bool {
	switch c {
	case ' ', '\t', '"', '[', ']', '(', ')', '{', '}', '<', '>':
		return true
	}
	return false
}

// tidy drops empty quotes and brackets (with only white space inside, once
// the empty pairs inside them are gone) and words of punctuation, and
// collapses white space.
func tidy(s string) string {
	words := strings.Fields(dropEmptyPairs(s))
	kept := words[:0]
	for _, w := range words {
		if strings.Trim(w, "-_=~|:;,.+*#/\\") == "" {
			continue
		}
		kept = append(kept, w)
	}
	s = strings.Join(kept, " ")
	return strings.Trim(s, " -_=~|:;,")
}

// dropEmptyPairs replaces each pair of quotes or brackets with only white
// space between them by a space, and then the pairs that leaves empty, as
// in "[ ( ) ]": one pass, in linear time. Quotes pair in order: in
// `"a" "b"` the quotes around the space are a closing and an opening one.
//
// The pass keeps a stack of the openers that may still be dropped: those
// with only white space (and dropped pairs) after them. Any other byte
// makes every opener on the stack stay; a closer that matches the top of
// the stack drops the pair.
func dropEmptyPairs(s string) string {
	var stack []int32 // where the openers are in b
	b := make([]byte, 0, len(s))
	quotes := 0 // quotes seen: an even one opens, an odd one closes
	for i := 0; i < len(s); i++ {
		c := s[i]
		opens := c == '[' || c == '(' || c == '{' || c == '<'
		if c == '"' {
			quotes++
			opens = quotes%2 == 1
		}
		switch {
		case opens:
			stack = append(stack, int32(len(b)))
		case isSpace(c):
		case len(stack) > 0 && closerOf(b[stack[len(stack)-1]]) == c:
			b = append(b[:stack[len(stack)-1]], ' ')
			stack = stack[:len(stack)-1]
			continue
		default:
			stack = stack[:0]
		}
		b = append(b, c)
	}
	return string(b)
}

// closerOf returns the byte that closes the quote or bracket c.
func closerOf(c byte) byte {
	switch c {
	case '[':
		return ']'
	case '(':
		return ')'
	case '{':
		return '}'
	case '<':
		return '>'
	}
	return c // '"'
}

// counters removes the file counters of s and records the first in set.
func counters(s string, set *Set) string {
	record := func(a, b int) bool {
		if a < 1 || a > b {
			return false // not a counter: 0/5, 7/3
		}
		if set.Files == 0 {
			set.File, set.Files = a, b
		}
		return true
	}
	// In brackets: [01/15] (1/40) {3/7} [1 of 5] (01 von 20) [1\5].
	s = replaceMatches(s, func(s string, i int) int {
		if c := s[i]; c != '[' && c != '(' && c != '{' {
			return -1
		}
		j := skipSpace(s, i+1)
		a, j, ok := number(s, j)
		if !ok {
			return -1
		}
		j = skipSpace(s, j)
		j, ok = separator(s, j, false)
		if !ok {
			return -1
		}
		b, j, ok := number(s, skipSpace(s, j))
		if !ok {
			return -1
		}
		j = skipSpace(s, j)
		if j == len(s) || (s[j] != ']' && s[j] != ')' && s[j] != '}') || !record(a, b) {
			return -1
		}
		return j + 1
	})
	// In words: "File 1 of 15", "1 of 15", "01/15", after white space or at
	// the start, before white space, the end or one of "-:,".
	return replaceMatches(s, func(s string, i int) int {
		j := i
		if isSpace(s[i]) {
			j++
		} else if i > 0 {
			return -1
		}
		if hasPrefixFold(s[j:], "file") {
			j += 4
			if j < len(s) && (s[j] == 's' || s[j] == 'S') {
				j++
			}
			j = skipSpace(s, j)
		}
		a, j, ok := number(s, j)
		if !ok {
			return -1
		}
		j, ok = separator(s, j, true)
		if !ok {
			return -1
		}
		b, j, ok := number(s, j)
		if !ok {
			return -1
		}
		if j < len(s) && !isSpace(s[j]) && s[j] != '-' && s[j] != ':' && s[j] != ',' {
			return -1
		}
		if !record(a, b) {
			return -1
		}
		return min(j+1, len(s))
	})
}

// separator reads the "/" (with any white space around it), "of", "von"
// or "sur" of a counter at s[j]. In words (words true) "of", "von" and
// "sur" need white space on both sides and "\" is no separator; in
// brackets white space is read by the caller.
func separator(s string, j int, words bool) (int, bool) {
	if words {
		k := skipSpace(s, j)
		if k < len(s) && s[k] == '/' {
			return skipSpace(s, k+1), true
		}
		if k == j {
			return j, false
		}
		for _, w := range [...]string{"of", "von", "sur"} {
			if hasPrefixFold(s[k:], w) && k+len(w) < len(s) && isSpace(s[k+len(w)]) {
				return skipSpace(s, k+len(w)), true
			}
		}
		return j, false
	}
	if j < len(s) && (s[j] == '/' || s[j] == '\\') {
		return j + 1, true
	}
	for _, w := range [...]string{"of", "von", "sur"} {
		if hasPrefixFold(s[j:], w) {
			return j + len(w), true
		}
	}
	return j, false
}

// number reads 1 to 5 digits at s[j] that no other digit follows.
func number(s string, j int) (n, end int, ok bool) {
	k := j
	for k < len(s) && k < j+5 && s[k] >= '0' && s[k] <= '9' {
		n = n*10 + int(s[k]-'0')
		k++
	}
	if k == j || (k < len(s) && s[k] >= '0' && s[k] <= '9') {
		return 0, j, false
	}
	return n, k, true
}

// sizesAndNoise removes sizes ("52.5 MB", "(12 KB)", "123456 bytes") and
// the words "yEnc" and "AutoRarParNNNN".
func sizesAndNoise(s string) string {
	return replaceMatches(s, func(s string, i int) int {
		if i > 0 && isWord(s[i-1]) {
			return -1 // not at the start of a word
		}
		if hasPrefixFold(s[i:], "yenc") && wordEnd(s, i+4) {
			return i + 4
		}
		if hasPrefixFold(s[i:], "autorarpar") {
			j := i + 10
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			if wordEnd(s, j) {
				return j
			}
		}
		j := i
		if s[j] == '(' {
			j++
		}
		if j == len(s) || s[j] < '0' || s[j] > '9' {
			return -1
		}
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if j+1 < len(s) && (s[j] == '.' || s[j] == ',') && s[j+1] >= '0' && s[j+1] <= '9' {
			j++
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
		}
		j = skipSpace(s, j)
		switch {
		case hasPrefixFold(s[j:], "bytes") && wordEnd(s, j+5):
			j += 5
		case hasPrefixFold(s[j:], "byte") && wordEnd(s, j+4):
			j += 4
		case j < len(s) && strings.IndexByte("kmgtKMGT", s[j]) >= 0:
			k := j + 1
			if k < len(s) && (s[k] == 'i' || s[k] == 'I') {
				k++
			}
			if k == len(s) || (s[k] != 'b' && s[k] != 'B') || !wordEnd(s, k+1) {
				return -1
			}
			j = k + 1
		default:
			return -1
		}
		if s[i] == '(' && j < len(s) && s[j] == ')' {
			j++
		}
		return j
	})
}

// replaceMatches replaces each match in s by a space: match(s, i) returns
// where a match that starts at s[i] ends, or -1. Matches do not overlap;
// the leftmost one wins, as with regexp.ReplaceAll.
func replaceMatches(s string, match func(s string, i int) int) string {
	var b []byte
	last := 0
	for i := 0; i < len(s); {
		end := match(s, i)
		if end <= i {
			i++
			continue
		}
		if b == nil {
			b = make([]byte, 0, len(s))
		}
		b = append(b, s[last:i]...)
		b = append(b, ' ')
		last, i = end, end
	}
	if b == nil {
		return s
	}
	return string(append(b, s[last:]...))
}

func skipSpace(s string, j int) int {
	for j < len(s) && isSpace(s[j]) {
		j++
	}
	return j
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// isWord reports whether c is an ASCII letter, digit or "_".
func isWord(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// wordEnd reports whether a word may end before s[j].
func wordEnd(s string, j int) bool { return j >= len(s) || !isWord(s[j]) }

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// otherExts are the extensions of files that come with a release, and of
// media files, in lower case.
var otherExts = map[string]bool{}

func init() {
	for _, e := range strings.Fields(`nfo sfv srr srs nzb md5 sha1 sha256 txt diz url jpg jpeg png gif mkv avi mp4 m4v mov wmv
		mpg mpeg m2ts ts vob iso img bin cue nrg mp3 flac m4a aac ogg wav epub mobi azw3 pdf cbr cbz exe apk dmg idx sub srt ass`) {
		otherExts[e] = true
	}
}

// extras are the suffixes of extras named after the release
// (name-sample.mkv, name.proof.jpg), after one of "-._".
var extras = [...]string{"sample", "proof", "thumbs", "thumb", "cover", "subs"}

// Stem returns a file name without the extensions that mark it as one file
// of a release: a split file's .001, then one archive or parity extension
// (.part01.rar, .part01, .r00, .s01, .z01, .vol01+02.par2, .par2, .par,
// .rar, .7z, .zip, .tar, .gz, .bz2, .xz) or one of a companion or media
// file (.nfo, .sfv, .srr, .mkv, .jpg...), then a -sample or .proof suffix;
// any case. A name with none of them, or that would be left empty, is
// returned as it is.
func Stem(name string) string {
	s := name
	if n := len(s); n > 4 && s[n-4] == '.' && digits(s[n-3:]) {
		s = s[:n-4]
	}
	if t := trimArchive(s); t != s {
		s = t
	} else if i := strings.LastIndexByte(s, '.'); i > 0 && i < len(s)-1 && len(s)-i <= 7 && otherExts[strings.ToLower(s[i+1:])] {
		s = s[:i]
	}
	if s != name {
		for _, x := range extras {
			n := len(s) - len(x)
			if n > 1 && strings.EqualFold(s[n:], x) && strings.IndexByte("-._", s[n-1]) >= 0 {
				s = s[:n-1]
				break
			}
		}
	}
	return s
}

// trimArchive takes one archive or parity extension off s, unless that
// leaves nothing.
func trimArchive(s string) string {
	cut := func(n int) string { // s without its last n bytes
		if n >= len(s) {
			return s
		}
		return s[:len(s)-n]
	}
	switch {
	case hasSuffixFold(s, ".rar"):
		if n := partSuffix(s[:len(s)-4]); n > 0 {
			return cut(n + 4)
		}
		return cut(4)
	case hasSuffixFold(s, ".par2"):
		if n := volSuffix(s[:len(s)-5]); n > 0 {
			return cut(n + 5)
		}
		return cut(5)
	case hasSuffixFold(s, ".par"), hasSuffixFold(s, ".zip"), hasSuffixFold(s, ".tar"), hasSuffixFold(s, ".bz2"):
		return cut(4)
	case hasSuffixFold(s, ".7z"), hasSuffixFold(s, ".gz"), hasSuffixFold(s, ".xz"):
		return cut(3)
	}
	if n := partSuffix(s); n > 0 {
		return cut(n)
	}
	// .r00, .s01, .z02, .r100
	for _, k := range []int{4, 5} {
		if i := len(s) - k; i >= 0 && s[i] == '.' && strings.IndexByte("rRsSzZ", s[i+1]) >= 0 && digits(s[i+2:]) {
			return cut(k)
		}
	}
	return s
}

// partSuffix returns the length of a ".part" + 1 to 4 digits ending s, or 0.
func partSuffix(s string) int {
	d := trailingDigits(s, 4)
	if d == 0 || !hasSuffixFold(s[:len(s)-d], ".part") {
		return 0
	}
	return d + 5
}

// volSuffix returns the length of a ".vol" + digits + "+" or "-" + digits
// ending s (1 to 5 digits each), or 0.
func volSuffix(s string) int {
	b := trailingDigits(s, 5)
	if b == 0 || len(s) == b {
		return 0
	}
	rest := s[:len(s)-b]
	if c := rest[len(rest)-1]; c != '+' && c != '-' {
		return 0
	}
	rest = rest[:len(rest)-1]
	a := trailingDigits(rest, 5)
	if a == 0 || !hasSuffixFold(rest[:len(rest)-a], ".vol") {
		return 0
	}
	return 4 + a + 1 + b
}

// trailingDigits returns how many digits end s, if 1 to max, else 0.
func trailingDigits(s string, max int) int {
	n := 0
	for n < len(s) && s[len(s)-1-n] >= '0' && s[len(s)-1-n] <= '9' {
		n++
	}
	if n > max {
		return 0
	}
	return n
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return len(s) > 0
}

func hasSuffixFold(s, suffix string) bool {
	return len(s) >= len(suffix) && strings.EqualFold(s[len(s)-len(suffix):], suffix)
}

// SetKey returns the key that names a release: a poster's files whose
// subjects share Set.Key (within the window) are one release. It is the
// first 128 bits of a SHA-256, in hex.
func SetKey(poster, key string) string {
	h := sha256.New()
	h.Write([]byte(poster))
	h.Write([]byte{0})
	h.Write([]byte(key))
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])[:16])
}

// validText returns s as valid UTF-8 without NUL bytes: each invalid byte
// and each NUL becomes U+FFFD. Names and posters are stored as text, and
// PostgreSQL's text holds no NUL.
func validText(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for _, r := range s { // range yields U+FFFD for each invalid byte
		if r == 0 {
			r = utf8.RuneError
		}
		b.WriteRune(r)
	}
	return b.String()
}
