package release

import (
	"strings"
)

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
	s = replaceMatches(s, func(s string, i int) int {
		a, b, end := bracketCounter(s, i)
		if end < 0 || !record(a, b) {
			return -1
		}
		return end
	})
	return replaceMatches(s, func(s string, i int) int {
		a, b, end := wordCounter(s, i)
		if end < 0 || !record(a, b) {
			return -1
		}
		return end
	})
}

// bracketCounter reads a counter in brackets at s[i]: [01/15] (1/40)
// {3/7} [1 of 5] (01 von 20) [1\5]. It returns its numbers and where it
// ends, or an end of -1.
func bracketCounter(s string, i int) (a, b, end int) {
	if c := s[i]; c != '[' && c != '(' && c != '{' {
		return 0, 0, -1
	}
	j := skipSpace(s, i+1)
	a, j, ok := number(s, j)
	if !ok {
		return 0, 0, -1
	}
	j = skipSpace(s, j)
	j, ok = separator(s, j, false)
	if !ok {
		return 0, 0, -1
	}
	b, j, ok = number(s, skipSpace(s, j))
	if !ok {
		return 0, 0, -1
	}
	j = skipSpace(s, j)
	if j == len(s) || (s[j] != ']' && s[j] != ')' && s[j] != '}') {
		return 0, 0, -1
	}
	return a, b, j + 1
}

// wordCounter reads a counter in words at s[i]: "File 1 of 15", "1 of
// 15", "01/15", after white space or at the start, before white space,
// the end or one of "-:,". It returns its numbers and where it ends, or
// an end of -1.
func wordCounter(s string, i int) (a, b, end int) {
	j := i
	if isSpace(s[i]) {
		j++
	} else if i > 0 {
		return 0, 0, -1
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
		return 0, 0, -1
	}
	j, ok = separator(s, j, true)
	if !ok {
		return 0, 0, -1
	}
	b, j, ok = number(s, j)
	if !ok {
		return 0, 0, -1
	}
	if j < len(s) && !isSpace(s[j]) && s[j] != '-' && s[j] != ':' && s[j] != ',' {
		return 0, 0, -1
	}
	return a, b, min(j+1, len(s))
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
