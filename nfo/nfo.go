// Package nfo reads a release's NFO: the text file a release group posts
// beside its files, traditionally in code page 437 (its box drawing and
// block art), sometimes UTF-8. Decode turns it into UTF-8 text for the
// details page and the Newznab API, bounded in size; Fields reads what
// names the release in it: a Title line and links to IMDb and TheTVDB.
package nfo

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
)

// MaxBytes bounds an NFO, before decoding: far past any real one (a few
// KiB), and what a details page can show.
const MaxBytes = 64 << 10

// ErrTooLarge means the NFO is longer than MaxBytes.
var ErrTooLarge = errors.New("nfo: larger than the limit")

// Decode returns the NFO in data as UTF-8: as it is when it is valid
// UTF-8 with something past ASCII (a byte order mark is dropped), read
// as code page 437 otherwise. Line ends become "\n"; NUL and the other
// control characters but tab are dropped, so the text is safe to show.
func Decode(data []byte) (string, error) {
	if len(data) > MaxBytes {
		return "", fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, len(data), MaxBytes)
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	var text string
	if utf8.Valid(data) {
		text = string(data)
	} else {
		b, err := charmap.CodePage437.NewDecoder().Bytes(data)
		if err != nil {
			return "", fmt.Errorf("nfo: %w", err) // CP437 maps every byte: not reached
		}
		text = string(b)
	}
	text = strings.ReplaceAll(text, "\r\n", "\n")
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case r == '\r':
			return '\n'
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			return -1
		}
		return r
	}, text), nil
}

// Fields are what an NFO says of the release it comes with.
type Fields struct {
	Title string // a "Title:" line's value
	IMDb  string // an IMDb title ID, "tt" and 7 or 8 digits
	TVDB  string // a TheTVDB series ID (digits) or slug
}

var (
	titleLine = regexp.MustCompile(`(?im)^[^\pL\pN\n]*(?:title|name|release)\s*[:.]+\s*(.{2,200}?)\s*$`)
	imdbLink  = regexp.MustCompile(`imdb\.[a-z.]+/title/(tt\d{7,8})`)
	tvdbLink  = regexp.MustCompile(`thetvdb\.com/(?:\?tab=series&id=|series/|\?id=)([A-Za-z0-9-]{1,100})`)
)

// Read returns the fields that name a release in text, a decoded NFO.
func Read(text string) Fields {
	var f Fields
	if m := titleLine.FindStringSubmatch(text); m != nil {
		// The value, without the box art or dots that end the line.
		f.Title = strings.TrimRightFunc(m[1], func(r rune) bool {
			return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != ')' && r != ']'
		})
	}
	if m := imdbLink.FindStringSubmatch(text); m != nil {
		f.IMDb = m[1]
	}
	if m := tvdbLink.FindStringSubmatch(text); m != nil {
		f.TVDB = m[1]
	}
	return f
}
