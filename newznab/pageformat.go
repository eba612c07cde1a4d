package newznab

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// pageText is s as the page shows it: cleanText of it, capped at
// MaxField bytes.
func pageText(s string) string { return capText(s, cleanText) }

// cleanText makes s safe to show: invalid UTF-8 and control characters
// become U+FFFD. (html/template escapes markup; this keeps bytes that are
// no text from reaching the page at all.)
func cleanText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError || (unicode.Is(unicode.Cf, r) && r != '\u200d') {
			return '\uFFFD'
		}
		return r
	}, s)
}

// shorten cuts s to at most n bytes, on a rune boundary, marking the cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// humanBytes writes a size in decimal units: "1.2 GB", "880 MB", "512 B".
func humanBytes(n int64) string {
	if n < 1000 {
		return fmt.Sprintf("%d B", max(n, 0))
	}
	v := float64(n)
	for _, unit := range []string{"kB", "MB", "GB", "TB", "PB"} {
		v /= 1000
		if v < 999.95 || unit == "PB" {
			if v < 99.95 {
				return fmt.Sprintf("%.1f %s", v, unit)
			}
			return fmt.Sprintf("%.0f %s", v, unit)
		}
	}
	panic("unreachable")
}

// humanAge writes how long ago something was: "5 minutes", "3 hours",
// "3 days". A date in the future (a poster's wrong clock) is "now".
func humanAge(d time.Duration) string {
	plural := func(n int64, unit string) string {
		if n == 1 {
			return "1 " + unit
		}
		return strconv.FormatInt(n, 10) + " " + unit + "s"
	}
	switch {
	case d < time.Minute:
		return "now"
	case d < time.Hour:
		return plural(int64(d/time.Minute), "minute")
	case d < 48*time.Hour:
		return plural(int64(d/time.Hour), "hour")
	default:
		return plural(int64(d/(24*time.Hour)), "day")
	}
}

// percent writes seen of expected as a percentage, rounded down so that
// only a complete release shows 100%.
func percent(seen, expected int64) string {
	if expected <= 0 {
		return "–"
	}
	if seen >= expected {
		return "100%"
	}
	tenths := seen * 1000 / expected
	return fmt.Sprintf("%d.%d%%", tenths/10, tenths%10)
}

// knownCategory reports whether id is a category of the list: a parent
// or one of its subcategories.
func knownCategory(id int) bool {
	p, sub, ok := lookup(id)
	return ok && (id == p.ID || id == sub.ID)
}

// categoryOptions lists the select's options, selected marking one.
func categoryOptions(selected int) []categoryOption {
	var out []categoryOption
	for _, p := range categories {
		out = append(out, categoryOption{ID: p.ID, Name: p.Name, Selected: p.ID == selected})
		for _, sub := range p.Subs {
			out = append(out, categoryOption{ID: sub.ID, Name: p.Name + " > " + sub.Name, Sub: true, Selected: sub.ID == selected})
		}
	}
	return out
}
