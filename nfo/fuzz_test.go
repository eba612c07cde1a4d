package nfo_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/edgeindex/edgeindex/nfo"
)

// FuzzDecode: any bytes decode to valid UTF-8 without control characters
// but tab and newline, and their fields are bounded.
func FuzzDecode(f *testing.F) {
	f.Add([]byte("\xc9\xcd\xbb\r\n\xba Title: X \xba\r\n"))
	f.Add([]byte("\xef\xbb\xbfimdb.com/title/tt0123456 thetvdb.com/?tab=series&id=12345"))
	f.Fuzz(func(t *testing.T, data []byte) {
		text, err := nfo.Decode(data)
		if err != nil {
			return
		}
		if !utf8.ValidString(text) || strings.ContainsFunc(text, func(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' }) {
			t.Fatalf("decoded %q", text)
		}
		if fl := nfo.Read(text); len(fl.Title) > 800 || len(fl.TVDB) > 100 {
			t.Fatalf("fields %+v", fl)
		}
	})
}
