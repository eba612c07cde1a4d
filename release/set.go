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
	w := stemWords(strings.ReplaceAll(s, "&quot;", `"`))
	s = tidy(w.text)
	set.Key = keyText(strings.ToLower(s), long)
	set.Name = w.name(s)
	if set.Key == "" { // nothing but counters and noise
		set.Name = strings.TrimSpace(subject)
		set.Key = keyText(strings.ToLower(set.Name), long)
	}
	set.Name = cutName(set.Name, set.Key)
	return set
}

// stemmed is a subject with each file name in it replaced by its stem,
// and the stems that may name its release.
type stemmed struct {
	text    string // the subject with stems for file names
	outside string // text without the quoted parts
	quoted  string // the first quoted name's stem
	// longest and longestOutside are the longest stems of file names,
	// anywhere and outside quotes.
	longest, longestOutside string
}

// stemWords reads the quoted names of s, then its other words (split at
// white space and brackets): each one that is a file name becomes its
// stem.
func stemWords(s string) stemmed {
	var w stemmed
	var b, outside strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		if s[i] == '"' {
			k := strings.IndexByte(s[i+1:], '"')
			if k < 0 {
				b.WriteByte('"')
				i++
				continue
			}
			stem := w.quotedName(strings.TrimSpace(s[i+1 : i+1+k]))
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
		stem := w.word(s[i:j])
		b.WriteString(stem)
		outside.WriteString(stem)
		i = j
	}
	w.text, w.outside = b.String(), outside.String()
	return w
}

// quotedName returns the stem of a quoted file name and records it.
func (w *stemmed) quotedName(name string) string {
	stem := Stem(name)
	if w.quoted == "" {
		w.quoted = stem
	}
	if stem != name && len(stem) > len(w.longest) {
		w.longest = stem
	}
	return stem
}

// word returns the stem of a word outside quotes and records it.
func (w *stemmed) word(word string) string {
	stem := Stem(word)
	if stem != word && len(stem) > len(w.longest) {
		w.longest = stem
	}
	if stem != word && len(stem) > len(w.longestOutside) {
		w.longestOutside = stem
	}
	return stem
}

// name picks the release's name (see ParseSet); tidied is the tidy text.
func (w *stemmed) name(tidied string) string {
	switch {
	case w.quoted != "" && (obfuscated(w.quoted) || uuidWord(w.quoted)):
		if t := title(w.longestOutside, w.outside); t != "" {
			return t
		}
		return w.quoted
	case w.quoted != "":
		return w.quoted
	case w.longest != "":
		return w.longest
	}
	return tidied
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

// isDelim reports whether c ends a word for ParseSet.
func isDelim(c byte) bool {
	switch c {
	case ' ', '\t', '"', '[', ']', '(', ')', '{', '}', '<', '>':
		return true
	}
	return false
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
