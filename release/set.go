package release

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Set is what a binary's subject says about the release it belongs to.
type Set struct {
	// Name is the release's name for people: the stem of the first quoted
	// file name ("My.Show.S01E02" for "My.Show.S01E02.part01.rar"), else
	// the stem of the longest word that names a file, else Key's text in
	// its original case.
	Name string
	// Key is the normalized subject that every file of the release shares:
	// the subject without file counters, sizes, "yEnc", separators and the
	// extensions of file names, white space collapsed, lower case. Files of
	// one poster with the same Key are one release (within a time window).
	Key string
	// File and Files are the subject's file counter, [File/Files] or one
	// of its other forms, or 0 and 0 when it has none.
	File, Files int
}

// Patterns of ParseSet. Go's regexp is linear in the input, so hostile
// subjects cost no more than long ones.
var (
	// A file counter in brackets: [01/15] (1/40) {3/7} [1 of 5] (01 von 20).
	counterBracketed = regexp.MustCompile(`(?i)[\[({]\s*(\d{1,5})\s*(?:/|of|von|sur|\\)\s*(\d{1,5})\s*[\])}]`)
	// A file counter in words: "File 1 of 15", "1 of 15", "01/15" as a word.
	counterWords = regexp.MustCompile(`(?i)(?:^|\s)(?:files?\s*)?(\d{1,5})(?:\s*/\s*|\s+(?:of|von|sur)\s+)(\d{1,5})(?:\s|$|[-:,])`)
	// A size: 52.5 MB, 1,2 GB, 700MB, 123456 bytes, (12 KB).
	size = regexp.MustCompile(`(?i)\(?\b\d+(?:[.,]\d+)?\s*(?:[kmgt]i?b|bytes?)\b\)?`)
	// Noise words: yEnc, AutoRarPar0001.
	noise = regexp.MustCompile(`(?i)\b(?:yenc|autorarpar\d*)\b`)
)

// ParseSet reads the release a binary belongs to out of its subject: the
// binary's normalized subject as collate.ParseSubject returns it (Base,
// without the part counter). It never panics, whatever the bytes.
//
// The rules follow NNTmux's generic collection cleaning, so that every file
// of one posting cleans to one Key:
//
//   - file counters go: [01/15], (1/40), {1/5}, [1 of 5], "File 1 of 15",
//     "01/15" as a word; the first one is File/Files;
//   - sizes go: "52.5 MB", "700MB", "123456 bytes";
//   - "yEnc" and "AutoRarParNNNN" go;
//   - every file name, quoted or not, loses its extensions (see Stem):
//     "name.part01.rar", "name.r00", "name.7z.001", "name.vol01+02.par2",
//     "name.nfo", "name.sfv", "name-sample.mkv" all become "name";
//   - empty quotes and brackets, and words of punctuation alone ("-"), go;
//   - white space is collapsed; Key is in lower case.
func ParseSet(subject string) Set {
	var set Set
	s := validText(subject)
	for _, re := range []*regexp.Regexp{counterBracketed, counterWords} {
		s = re.ReplaceAllStringFunc(s, func(m string) string {
			sub := re.FindStringSubmatch(m)
			a, _ := strconv.Atoi(sub[1])
			b, _ := strconv.Atoi(sub[2])
			if a < 1 || a > b {
				return m // not a counter: 0/5, 7/3
			}
			if set.Files == 0 {
				set.File, set.Files = a, b
			}
			return " "
		})
	}
	s = size.ReplaceAllString(s, " ")
	s = noise.ReplaceAllString(s, " ")

	// Quoted names, then the other words (split at white space and
	// brackets): each one that is a file name becomes its stem.
	s = strings.ReplaceAll(s, "&quot;", `"`)
	var b strings.Builder
	b.Grow(len(s))
	quoted, longest := "", ""
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
		b.WriteString(stem)
		i = j
	}
	s = tidy(b.String())
	set.Key = strings.ToLower(s)
	switch {
	case quoted != "":
		set.Name = quoted
	case longest != "":
		set.Name = longest
	default:
		set.Name = s
	}
	if set.Key == "" { // nothing but counters and noise
		set.Key = strings.ToLower(strings.TrimSpace(validText(subject)))
		set.Name = strings.TrimSpace(validText(subject))
	}
	return set
}

// isDelim reports whether c ends a word for ParseSet.
func isDelim(c byte) bool {
	switch c {
	case ' ', '\t', '"', '[', ']', '(', ')', '{', '}', '<', '>':
		return true
	}
	return false
}

// tidy drops empty quotes and brackets and words of punctuation, and
// collapses white space.
func tidy(s string) string {
	for {
		t := s
		for _, empty := range []string{`""`, "[]", "()", "{}", "<>"} {
			t = strings.ReplaceAll(t, empty, " ")
		}
		// Brackets and quotes with only white space inside.
		t = emptyPair.ReplaceAllString(t, " ")
		if t == s {
			break
		}
		s = t
	}
	words := strings.Fields(s)
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

var emptyPair = regexp.MustCompile(`"\s*"|\[\s*\]|\(\s*\)|\{\s*\}`)

// Extensions Stem takes off a file name, in lower case.
var (
	// The last extension of a split file: .001, .002...
	splitExt = regexp.MustCompile(`(?i)\.\d{3}$`)
	// Archive volumes and parity: .part01.rar, .r00, .s01, .z01,
	// .vol001+002.par2, .vol01-02.par2, .par2, .par, .rar, .7z, .zip.
	archiveExt = regexp.MustCompile(`(?i)(?:\.part\d{1,4}\.rar|\.part\d{1,4}|\.vol\d{1,5}[+-]\d{1,5}\.par2|\.par2|\.par|\.rar|\.[rsz]\d{2,3}|\.7z|\.zip|\.tar|\.gz|\.bz2|\.xz)$`)
	// Files that come with a release and media files.
	otherExt = regexp.MustCompile(`(?i)\.(?:nfo|sfv|srr|srs|nzb|md5|sha1|sha256|txt|diz|url|jpe?g|png|gif|mkv|avi|mp4|m4v|mov|wmv|mpe?g|m2ts|ts|vob|iso|img|bin|cue|nrg|mp3|flac|m4a|aac|ogg|wav|epub|mobi|azw3|pdf|cb[rz]|exe|apk|dmg|idx|sub|srt|ass)$`)
	// Extras named after the release: name-sample.mkv, name.proof.jpg.
	extraSuffix = regexp.MustCompile(`(?i)[-._](?:sample|proof|thumbs?|cover|subs)$`)
)

// Stem returns a file name without the extensions that mark it as one file
// of a release: a split file's .001, then one archive or parity extension
// (.part01.rar, .r00, .vol01+02.par2, .par2, .rar, .7z...) or one of a
// companion or media file (.nfo, .sfv, .mkv, .jpg...), then a -sample or
// .proof suffix. A name with none of them is returned as it is.
func Stem(name string) string {
	s := name
	if t := splitExt.ReplaceAllString(s, ""); t != "" {
		s = t
	}
	for _, re := range []*regexp.Regexp{archiveExt, otherExt} {
		if t := re.ReplaceAllString(s, ""); t != s {
			if t != "" {
				s = t
			}
			break
		}
	}
	if s != name {
		if t := extraSuffix.ReplaceAllString(s, ""); t != "" {
			s = t
		}
	}
	return s
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
