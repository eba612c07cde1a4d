package release

import (
	"strings"
)

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
