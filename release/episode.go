package release

// ParseEpisode returns the TV episode a release name gives, or nil when it
// gives none. It reads the name's words (runs of ASCII letters and digits;
// everything else separates them), in three passes, the first that finds
// one wins:
//
//  1. an episode: S01E02 or s1e2 (S01E02E03 and S01E02-E03 give the
//     first), also at the end of a word ("ShowS06E11"), or 1x02 (a season
//     of 1 or 2 digits, an episode of 2 or 3, so 1920x1080 is no episode);
//  2. a season pack: S01 alone, or "Season 1" ("Season.04"), Episode 0;
//     "Season 1 Episode 2" is that episode;
//  3. a daily show's date: 2026.11.29, 2026-11-29, 2026 11 29 or 20261129,
//     a year of 1900 to 2099 and a real month and day (a month over 12
//     with a day of 12 or less is read as day then month, as Sonarr does);
//     Season is the year, Episode month*100+day, Daily true.
//
// A year alone ("2012.2009.1080p", "Blade.Runner.2049") is no episode.
// Seasons and episodes have at most 4 digits. ParseEpisode never panics
// and takes time linear in the name's length.
func ParseEpisode(name string) *Episode {
	words := splitWords(name, maxWords)
	for _, w := range words {
		if s, e, ok := episodeWord(w); ok {
			return &Episode{Season: s, Episode: e}
		}
	}
	for i, w := range words {
		if s, ok := seasonWord(w); ok {
			return &Episode{Season: s}
		}
		if w == "season" && i+1 < len(words) {
			s, ok := smallNumber(words[i+1], 4)
			if !ok {
				continue
			}
			ep := &Episode{Season: s}
			if i+3 < len(words) && (words[i+2] == "episode" || words[i+2] == "ep" || words[i+2] == "e") {
				if e, ok := smallNumber(words[i+3], 4); ok {
					ep.Episode = e
				}
			}
			return ep
		}
	}
	for i, w := range words {
		if y, m, d, ok := dateWord(w); ok {
			return &Episode{Season: y, Episode: m*100 + d, Daily: true}
		}
		if i+2 < len(words) {
			if y, m, d, ok := dateWords(w, words[i+1], words[i+2]); ok {
				return &Episode{Season: y, Episode: m*100 + d, Daily: true}
			}
		}
	}
	return nil
}

// maxWords bounds the words ParseEpisode and Categorize read of a name:
// a release name longer than that is not a name a rule can read anyway.
const maxWords = 64

// splitWords returns up to max words of s: runs of ASCII letters and
// digits, in lower case.
func splitWords(s string, max int) []string {
	var words []string
	for i := 0; i < len(s) && len(words) < max; {
		if !isAlnum(s[i]) {
			i++
			continue
		}
		j := i
		lower := true
		for j < len(s) && isAlnum(s[j]) {
			if s[j] >= 'A' && s[j] <= 'Z' {
				lower = false
			}
			j++
		}
		w := s[i:j]
		if !lower {
			b := []byte(w)
			for k, c := range b {
				if c >= 'A' && c <= 'Z' {
					b[k] = c + 'a' - 'A'
				}
			}
			w = string(b)
		}
		words = append(words, w)
		i = j
	}
	return words
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// digitRun reads 1 to max digits at w[i] that no further digit follows.
func digitRun(w string, i, max int) (n, end int, ok bool) {
	j := i
	for j < len(w) && isDigit(w[j]) {
		if j-i == max {
			return 0, i, false
		}
		n = n*10 + int(w[j]-'0')
		j++
	}
	return n, j, j > i
}

// smallNumber reads a word of 1 to max digits.
func smallNumber(w string, max int) (int, bool) {
	n, end, ok := digitRun(w, 0, max)
	return n, ok && end == len(w)
}

// episodeWord reads S01E02 (at the start of w, or after a letter) or 1x02.
func episodeWord(w string) (season, episode int, ok bool) {
	if s, end, ok := digitRun(w, 0, 2); ok && end < len(w) && w[end] == 'x' {
		if e, end2, ok := digitRun(w, end+1, 3); ok && end2 == len(w) && end2-end-1 >= 2 {
			return s, e, true
		}
	}
	// Each 's' is tried once and its scan stops at the next non-digit, so
	// the work stays linear.
	for i := 0; i < len(w); i++ {
		if w[i] != 's' || (i > 0 && !isLetter(w[i-1])) {
			continue
		}
		s, end, ok := digitRun(w, i+1, 4)
		if !ok || end >= len(w) || w[end] != 'e' {
			continue
		}
		e, end2, ok := digitRun(w, end+1, 4)
		if !ok {
			continue
		}
		if end2 == len(w) || (w[end2] == 'e' && end2+1 < len(w) && isDigit(w[end2+1])) {
			return s, e, true
		}
	}
	return 0, 0, false
}

// seasonWord reads a season pack's S01 (1 to 4 digits).
func seasonWord(w string) (int, bool) {
	if len(w) < 2 || w[0] != 's' {
		return 0, false
	}
	return smallNumber(w[1:], 4)
}

// dateWord reads 20261129.
func dateWord(w string) (y, m, d int, ok bool) {
	if len(w) != 8 || !digits(w) {
		return 0, 0, 0, false
	}
	return checkDate(atoi(w[:4]), atoi(w[4:6]), atoi(w[6:]))
}

// dateWords reads 2026 11 29 as three words.
func dateWords(a, b, c string) (y, m, d int, ok bool) {
	if len(a) != 4 || !digits(a) || len(b) < 1 || len(b) > 2 || !digits(b) || len(c) < 1 || len(c) > 2 || !digits(c) {
		return 0, 0, 0, false
	}
	return checkDate(atoi(a), atoi(b), atoi(c))
}

// checkDate accepts a year of 1900 to 2099 and a month and day that can
// be, swapping them when the month is over 12 and the day is not.
func checkDate(y, m, d int) (int, int, int, bool) {
	if y < 1900 || y > 2099 {
		return 0, 0, 0, false
	}
	if m > 12 && d <= 12 {
		m, d = d, m
	}
	if m < 1 || m > 12 || d < 1 || d > daysIn[m] {
		return 0, 0, 0, false
	}
	return y, m, d, true
}

var daysIn = [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

// atoi reads a word of digits (callers check that it is one, short).
func atoi(w string) int {
	n := 0
	for i := 0; i < len(w); i++ {
		n = n*10 + int(w[i]-'0')
	}
	return n
}
