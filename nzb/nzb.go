package nzb

import (
	"bufio"
	"fmt"
	"io"
	"mime"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/release"
)

// ContentType is the media type of an NZB file.
const ContentType = "application/x-nzb"

// Namespace is the NZB 1.1 XML namespace.
const Namespace = "http://www.newzbin.com/DTD/2003/nzb"

// Prolog is what every NZB Write writes starts with: the XML declaration
// and the NZB 1.1 document type.
const Prolog = `<?xml version="1.0" encoding="UTF-8"?>` + "\n" +
	`<!DOCTYPE nzb PUBLIC "-//newzBin//DTD NZB 1.1//EN" "http://www.newzbin.com/DTD/nzb/nzb-1.1.dtd">` + "\n"

// ErrEmpty means the release has no file with a group and a segment: an
// NZB needs one (the DTD says file+, group+, segment+). It wraps
// edgeindex.ErrNotFound: there is nothing to download.
var ErrEmpty = fmt.Errorf("nzb: the release has no file with a group and a segment: %w", edgeindex.ErrNotFound)

// Check returns ErrEmpty when Write would write nothing for r: no file of
// it has a group and a segment. A handler calls it before it sets its
// headers; Write writes nothing for such a release and returns the same.
func Check(r release.Release) error {
	if !writable(&r) {
		return ErrEmpty
	}
	return nil
}

// Write writes r as an NZB 1.1 file: a <meta type="name"> with r's name,
// then each file of r that has a group and a segment, in r's order, with
// its poster, its date (Unix seconds), its subject (with "(1/total)", as
// its first part was posted), its groups (the release's when it has none)
// and its segments (bytes, number, and the message-id without its angle
// brackets). Text is escaped as XML; bytes that are not UTF-8 and control
// characters, which XML 1.0 cannot carry even escaped, become U+FFFD, so
// the output is valid XML whatever r holds. Write buffers its output and
// allocates nothing per segment.
func Write(w io.Writer, r release.Release) error {
	files := r.Files
	r.Files = nil
	e := NewEncoder(w, r)
	for i := range files {
		if err := e.File(&files[i]); err != nil {
			return err
		}
	}
	return e.Close()
}

// Encoder writes an NZB one file at a time, as Write does, for a release
// too large to hold with all its parts: memory does not grow with the
// release. Nothing is written before the first file that has a group and
// a segment, so a caller that finds none has sent nothing.
type Encoder struct {
	e       encoder
	r       release.Release // its name, groups, poster and date
	started bool
}

// NewEncoder returns an Encoder of the NZB of r (its Files are not read:
// they come one by one to File) to w.
func NewEncoder(w io.Writer, r release.Release) *Encoder {
	bw, ok := w.(*bufio.Writer)
	if !ok {
		bw = bufio.NewWriterSize(w, 64<<10)
	}
	r.Files = nil
	return &Encoder{e: encoder{w: bw}, r: r}
}

// Stream writes the NZB of r to w with its files as files hands them
// on, one at a time (the shape of a store's ReleaseFiles), so memory does
// not grow with the release. begin is called once, when the first file
// that writes comes and before any byte is written: an HTTP handler sets
// its headers there, and an error of begin ends the NZB unwritten. began
// says whether begin was called: an error after it has cut the NZB. A
// release with no file to write is ErrEmpty, begin not called.
func Stream(w io.Writer, r release.Release, files func(each func(release.File) error) error, begin func() error) (began bool, err error) {
	e := NewEncoder(w, r)
	err = files(func(f release.File) error {
		if !began && e.Writes(&f) {
			if err := begin(); err != nil {
				return err
			}
			began = true
		}
		return e.File(&f)
	})
	if err == nil {
		err = e.Close()
	}
	return began, err
}

// Writes reports whether File writes f: it has a group (or the release
// has) and a segment.
func (e *Encoder) Writes(f *release.File) bool { return writes(&e.r, f) }

// File writes f, when it Writes, after the document's start if it is the
// first. It returns the first error of the writer.
func (e *Encoder) File(f *release.File) error {
	if !e.Writes(f) {
		return e.e.err
	}
	if !e.started {
		e.started = true
		e.e.str(Prolog)
		e.e.str(`<nzb xmlns="` + Namespace + `">` + "\n")
		if e.r.Name != "" {
			e.e.str(" <head>\n  <meta type=\"name\">")
			e.e.text(e.r.Name, false)
			e.e.str("</meta>\n </head>\n")
		}
	}
	e.e.file(&e.r, f)
	return e.e.err
}

// Close ends the document and flushes it; ErrEmpty, having written
// nothing, when no file was written.
func (e *Encoder) Close() error {
	if !e.started {
		return ErrEmpty
	}
	e.e.str("</nzb>\n")
	if e.e.err != nil {
		return e.e.err
	}
	return e.e.w.Flush()
}

// file writes the <file> element of f, a file of r that writes, with
// r's groups, poster and date where f has none.
func (e *encoder) file(r *release.Release, f *release.File) {
	groups := f.Groups
	if len(groups) == 0 {
		groups = r.Groups
	}
	poster := f.Poster
	if poster == "" {
		poster = r.Poster
	}
	date := f.Date
	if date.IsZero() {
		date = r.Posted
	}
	e.str(` <file poster="`)
	e.text(poster, true)
	e.str(`" date="`)
	e.int(date.Unix())
	e.str(`" subject="`)
	e.text(f.Subject, true)
	e.str(" (1/")
	e.int(int64(f.Total))
	e.str(")\">\n  <groups>\n")
	for _, g := range groups {
		e.str("   <group>")
		e.text(g, false)
		e.str("</group>\n")
	}
	e.str("  </groups>\n  <segments>\n")
	for _, p := range f.Parts {
		id := messageID(p.MessageID)
		if id == "" {
			continue
		}
		e.str(`   <segment bytes="`)
		e.int(max(p.Bytes, 0))
		e.str(`" number="`)
		e.int(int64(p.N))
		e.str(`">`)
		e.text(id, false)
		e.str("</segment>\n")
	}
	e.str("  </segments>\n </file>\n")
}

// writable reports whether r has a file Write writes.
func writable(r *release.Release) bool {
	for i := range r.Files {
		if writes(r, &r.Files[i]) {
			return true
		}
	}
	return false
}

// writes reports whether f, a file of r, goes into r's NZB: it has a
// group (or r has) and a segment.
func writes(r *release.Release, f *release.File) bool {
	return (len(f.Groups) > 0 || len(r.Groups) > 0) && hasSegment(f)
}

func hasSegment(f *release.File) bool {
	for _, p := range f.Parts {
		if messageID(p.MessageID) != "" {
			return true
		}
	}
	return false
}

// messageID returns id without its angle brackets and surrounding white
// space.
func messageID(id string) string {
	id = strings.TrimSpace(id)
	id = strings.TrimPrefix(id, "<")
	id = strings.TrimSuffix(id, ">")
	return strings.TrimSpace(id)
}

// encoder writes to a bufio.Writer and keeps its first error.
type encoder struct {
	w   *bufio.Writer
	err error
	num [20]byte
}

func (e *encoder) str(s string) {
	if e.err == nil {
		_, e.err = e.w.WriteString(s)
	}
}

func (e *encoder) int(n int64) {
	if e.err == nil {
		_, e.err = e.w.Write(strconv.AppendInt(e.num[:0], n, 10))
	}
}

// replacement is U+FFFD, what invalid bytes and control characters become.
const replacement = "\uFFFD"

// text writes s escaped for XML text (attr false) or a double-quoted
// attribute value (attr true).
func (e *encoder) text(s string, attr bool) {
	if e.err != nil {
		return
	}
	start := 0 // s[start:i] is written as it is
	flush := func(i int) {
		if start < i {
			e.w.WriteString(s[start:i])
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < utf8.RuneSelf && c != '&' && c != '<' && c != '>' && c != '"' {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if (r != utf8.RuneError || size > 1) && r != 0xFFFE && r != 0xFFFF {
				i += size
				continue
			}
			flush(i)
			e.w.WriteString(replacement)
			i += size
			start = i
			continue
		}
		flush(i)
		e.w.WriteString(escape(c, attr))
		i++
		start = i
	}
	flush(len(s))
}

// escape is how an ASCII byte that cannot stand for itself is written.
func escape(c byte, attr bool) string {
	switch c {
	case '&':
		return "&amp;"
	case '<':
		return "&lt;"
	case '>':
		return "&gt;"
	case '"':
		return "&quot;"
	case '\t':
		if attr {
			return "&#9;"
		}
		return "\t"
	case '\n':
		if attr {
			return "&#10;"
		}
		return "\n"
	case '\r':
		return "&#13;" // a raw CR would be read back as LF
	}
	return replacement // other control characters: XML 1.0 has no way to carry them
}

// Text returns s as a reader of Write's output reads it back: each byte
// that is not UTF-8, each control character other than tab, line feed and
// carriage return, and U+FFFE and U+FFFF, replaced by U+FFFD.
func Text(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1, r < 0x20 && r != '\t' && r != '\n' && r != '\r', r == 0xFFFE, r == 0xFFFF:
			b.WriteString(replacement)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// MaxFileName bounds SafeFileName's result, in bytes.
const MaxFileName = 200

// SafeFileName returns a file name for an NZB of a release named name, safe
// in a Content-Disposition header and on any file system: only ASCII
// letters, digits, space and . - _ + ( ) [ ] are kept, every other byte
// (slashes, quotes, backslashes, control and non-ASCII characters) becomes
// "_"; runs of "_", of "." and of spaces shrink to one, and a "_" swallows
// the spaces next to it; dots, spaces and "_" at either
// end go (no hidden files, no ".."); Windows' device names get a leading
// "_"; at most MaxFileName bytes; ".nzb" at the end. An empty result is
// "release.nzb".
func SafeFileName(name string) string {
	b := make([]byte, 0, min(len(name), 4*MaxFileName)+4)
	for i := 0; i < len(name) && len(b) < 4*MaxFileName; i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			c == ' ', c == '.', c == '-', c == '+', c == '(', c == ')', c == '[', c == ']':
		default:
			c = '_'
		}
		if n := len(b); n > 0 {
			prev := b[n-1]
			switch {
			case (c == '_' || c == '.' || c == ' ') && prev == c, c == ' ' && prev == '_':
				continue
			case c == '_' && prev == ' ':
				b[n-1] = '_'
				continue
			}
		}
		b = append(b, c)
	}
	s := strings.Trim(string(b), "._ ")
	if low := strings.ToLower(s); strings.HasSuffix(low, ".nzb") {
		s = strings.TrimRight(s[:len(s)-4], "._ ")
	}
	if len(s) > MaxFileName-4 {
		s = strings.TrimRight(s[:MaxFileName-4], "._ ")
	}
	if s == "" {
		s = "release"
	}
	if reserved(s) {
		s = "_" + s
	}
	return s + ".nzb"
}

// reserved reports whether s (before its first dot) is a Windows device name.
func reserved(s string) bool {
	stem, _, _ := strings.Cut(strings.ToUpper(s), ".")
	stem = strings.TrimRight(stem, " ")
	switch stem {
	case "CON", "PRN", "AUX", "NUL":
		return true
	}
	return len(stem) == 4 && (strings.HasPrefix(stem, "COM") || strings.HasPrefix(stem, "LPT")) && stem[3] >= '0' && stem[3] <= '9'
}

// ContentDisposition returns the Content-Disposition header value for an
// NZB of a release named name: an attachment named SafeFileName(name).
func ContentDisposition(name string) string {
	return mime.FormatMediaType("attachment", map[string]string{"filename": SafeFileName(name)})
}
