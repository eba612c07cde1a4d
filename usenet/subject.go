package usenet

import (
	"strings"
)

// MaxTotal is the largest part count ParseSubject accepts: a counter beyond
// it is junk, not a post.
const MaxTotal = 999_999

// Subject is a parsed Usenet binary subject.
type Subject struct {
	// Base is the subject without its part counter and without "Re:"
	// prefixes, with runs of ASCII white space collapsed to one space and
	// none at either end. It is never empty. Together with the poster and
	// Total it names the binary.
	Base string
	// Name is the file name: the first "quoted" name, else the last word
	// with a dot in it (such as "name.nfo"), else Base without file
	// counters, "-" separators and "yEnc".
	Name string
	// Part and Total are the part counter (Part/Total): 1 <= Part <= Total <= MaxTotal.
	Part, Total int
	// File and Files are the file counter [File/Files] of the release, or
	// 0 and 0 when the subject has none. They stay in Base.
	File, Files int
}

// ParseSubject parses a Usenet binary subject such as
//
//	[01/40] - "name.part01.rar" yEnc (1/50)
//	Re: "name.rar" yEnc (03/07)
//	name.nfo (1/1)
//
// The part counter is the last "(p/P)" in the subject; text after it (such
// as a size) stays in Base. It returns false when the subject has no part
// counter with 1 <= p <= P <= MaxTotal, or nothing but one: such a post is
// not a binary part, and a Collator skips it (a lone post without a counter
// is almost always text, not a single-part binary, which posters mark (1/1)).
// ParseSubject never panics, whatever the bytes.
func ParseSubject(s string) (Subject, bool) {
	start, end, part, total, ok := partCounter(s)
	if !ok {
		return Subject{}, false
	}
	base := collapse(s[:start], s[end:])
	base = stripRe(base)
	if base == "" {
		return Subject{}, false
	}
	sub := Subject{Base: base, Part: part, Total: total}
	sub.File, sub.Files = fileCounter(base)
	sub.Name = fileName(base)
	return sub, true
}

// partCounter finds the last "(p/P)" in s with 1 <= p <= P <= MaxTotal; s[start:end] is it.
func partCounter(s string) (start, end, part, total int, ok bool) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] != ')' {
			continue
		}
		// Backwards: digits, '/', digits, '('.
		j := i - 1
		t, j, okT := digitsBack(s, j)
		if !okT || j < 0 || s[j] != '/' {
			continue
		}
		p, j, okP := digitsBack(s, j-1)
		if !okP || j < 0 || s[j] != '(' {
			continue
		}
		if p < 1 || p > t || t > MaxTotal {
			continue
		}
		return j, i + 1, p, t, true
	}
	return 0, 0, 0, 0, false
}

// digitsBack reads the decimal number that ends at s[j], of 1 to 7 digits,
// and returns it with the index before its first digit.
func digitsBack(s string, j int) (n, before int, ok bool) {
	k := j
	for k >= 0 && k > j-7 && s[k] >= '0' && s[k] <= '9' {
		k--
	}
	if k == j || (k >= 0 && s[k] >= '0' && s[k] <= '9') {
		return 0, j, false // no digits, or more than 7
	}
	for _, c := range s[k+1 : j+1] {
		n = n*10 + int(c-'0')
	}
	return n, k, true
}

// digitsFwd reads the decimal number that starts at s[i], of 1 to 7 digits,
// and returns it with the index after its last digit.
func digitsFwd(s string, i int) (n, after int, ok bool) {
	k := i
	for k < len(s) && k < i+7 && s[k] >= '0' && s[k] <= '9' {
		k++
	}
	if k == i || (k < len(s) && s[k] >= '0' && s[k] <= '9') {
		return 0, i, false
	}
	for _, c := range s[i:k] {
		n = n*10 + int(c-'0')
	}
	return n, k, true
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// collapse returns a+b with runs of ASCII white space made one space and
// none at either end. It does not allocate when b is only white space and a
// is already so, the common case of a counter at the end.
func collapse(a, b string) string {
	const ws = " \t\n\r\v\f"
	if strings.TrimLeft(b, ws) == "" {
		a, b = strings.TrimRight(a, ws), ""
		if clean(a) {
			return a
		}
	}
	var sb strings.Builder
	sb.Grow(len(a) + len(b))
	space := false
	for _, s := range [2]string{a, b} {
		for i := 0; i < len(s); i++ {
			c := s[i]
			if isSpace(c) {
				space = sb.Len() > 0
				continue
			}
			if space {
				sb.WriteByte(' ')
				space = false
			}
			sb.WriteByte(c)
		}
	}
	return sb.String()
}

// clean reports whether s has no white space at its start and none but
// single spaces inside; its end is already trimmed.
func clean(s string) bool {
	for i := 0; i < len(s); i++ {
		if isSpace(s[i]) && (i == 0 || s[i] != ' ' || isSpace(s[i+1])) {
			return false
		}
	}
	return true
}

// stripRe removes leading "Re:" prefixes (any case) and the space after them.
func stripRe(s string) string {
	for len(s) >= 3 && (s[0]|0x20) == 'r' && (s[1]|0x20) == 'e' && s[2] == ':' {
		s = strings.TrimPrefix(s[3:], " ")
	}
	return s
}

// fileCounter returns the first "[n/N]" of s with 1 <= n <= N, or 0, 0.
func fileCounter(s string) (n, total int) {
	for i := 0; i < len(s); i++ {
		if s[i] != '[' {
			continue
		}
		a, j, ok := digitsFwd(s, i+1)
		if !ok || j >= len(s) || s[j] != '/' {
			continue
		}
		b, k, ok := digitsFwd(s, j+1)
		if !ok || k >= len(s) || s[k] != ']' {
			continue
		}
		if a >= 1 && a <= b {
			return a, b
		}
	}
	return 0, 0
}

// fileName picks the file name out of a Base.
func fileName(base string) string {
	for _, q := range [...]string{`"`, "&quot;"} {
		if i := strings.Index(base, q); i >= 0 {
			rest := base[i+len(q):]
			if j := strings.Index(rest, q); j > 0 {
				if name := strings.TrimSpace(rest[:j]); name != "" {
					return name
				}
			}
		}
	}
	words := strings.Fields(base)
	for i := len(words) - 1; i >= 0; i-- {
		w := words[i]
		if d := strings.IndexByte(w, '.'); d > 0 && d < len(w)-1 && !isCounter(w) {
			return w
		}
	}
	kept := words[:0]
	for _, w := range words {
		if w != "-" && !strings.EqualFold(w, "yEnc") && !isCounter(w) {
			kept = append(kept, w)
		}
	}
	if len(kept) == 0 {
		return base
	}
	return strings.Join(kept, " ")
}

// isCounter reports whether w is "[n/N]" or "(n/N)".
func isCounter(w string) bool {
	if len(w) < 5 || !(w[0] == '[' && w[len(w)-1] == ']' || w[0] == '(' && w[len(w)-1] == ')') {
		return false
	}
	_, j, ok := digitsFwd(w, 1)
	if !ok || j >= len(w) || w[j] != '/' {
		return false
	}
	_, k, ok := digitsFwd(w, j+1)
	return ok && k == len(w)-1
}
