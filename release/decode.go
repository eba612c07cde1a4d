package release

import (
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"

	"github.com/edgeindex/edgeindex/internal/jsonscan"
	"github.com/edgeindex/edgeindex/usenet"
)

// DecodeBinary decodes an item's value as a usenet.Binary, as
// json.Unmarshal does. Values as a Collator writes them (the field names as
// tagged, strings, integers, booleans, parts) take a fast path about five
// times quicker than encoding/json: the builder decodes every item of the
// feed, and encoding/json was most of its time. Anything else (other
// names, nulls, floats, surrogate escapes, bytes that are not UTF-8, bad
// JSON) is handed to json.Unmarshal, so the result and the error are
// always encoding/json's.
func DecodeBinary(data []byte, b *usenet.Binary) error {
	fast := *b // json.Unmarshal keeps the fields the JSON does not name
	if err := (&decoder{data: data, arena: make([]byte, 0, len(data))}).binary(&fast); err == nil {
		*b = fast
		return nil
	}
	return json.Unmarshal(data, b)
}

// errSlow means the fast path does not take this input.
var errSlow = errors.New("release: not for the fast path")

// decoder reads one JSON value of the shapes a Collator writes.
type decoder struct {
	data []byte
	i    int
	buf  []byte // scratch for strings with escapes
	// arena collects every string read, unescaped (a Collator's
	// message-ids have escapes: Go writes "<" as \u003c); it is made one
	// string at the end and the strings are cut from it, so a Binary's
	// strings cost one allocation, not one a part.
	arena []byte
}

// text is a string read: a span of the arena.
type text struct{ lo, hi int }

// resolve returns t's string, given the arena as a string.
func (t text) resolve(arena string) string { return arena[t.lo:t.hi] }

func (d *decoder) space() { d.i = jsonscan.Space(d.data, d.i) }

// byte reads c after white space.
func (d *decoder) byte(c byte) error {
	if d.peek() != c || c == 0 {
		return errSlow
	}
	d.i++
	return nil
}

// peek returns the next byte after white space, or 0.
func (d *decoder) peek() byte {
	var c byte
	c, d.i = jsonscan.Peek(d.data, d.i)
	return c
}

// object reads {"key": value, ...}, calling field for each key.
func (d *decoder) object(field func(key []byte) error) error {
	if err := d.byte('{'); err != nil {
		return err
	}
	if d.peek() == '}' {
		d.i++
		return nil
	}
	for {
		key, _, err := d.rawString()
		if err != nil {
			return err
		}
		if err := d.byte(':'); err != nil {
			return err
		}
		if err := field(key); err != nil {
			return err
		}
		switch d.peek() {
		case ',':
			d.i++
		case '}':
			d.i++
			return nil
		default:
			return errSlow
		}
	}
}

func (d *decoder) binary(b *usenet.Binary) error {
	var strs [5]text // subject, name, poster, group, date
	var set [5]bool
	var ids []text // the parts' message-ids
	err := d.object(func(key []byte) (err error) {
		f := -1
		switch string(key) {
		case "subject":
			f = 0
		case "name":
			f = 1
		case "poster":
			f = 2
		case "group":
			f = 3
		case "date":
			f = 4
		case "total":
			var n int64
			n, err = d.int(32)
			b.Total = int(n)
		case "complete":
			b.Complete, err = d.bool()
		case "parts":
			b.Parts, ids, err = d.parts()
		default:
			return errSlow // encoding/json matches names without case, and skips others
		}
		if f >= 0 {
			strs[f], err = d.text()
			set[f] = true
		}
		return err
	})
	if err != nil {
		return err
	}
	d.space()
	if d.i != len(d.data) {
		return errSlow
	}
	arena := string(d.arena)
	for f, dst := range [5]*string{&b.Subject, &b.Name, &b.Poster, &b.Group, &b.Date} {
		if set[f] {
			*dst = strs[f].resolve(arena)
		}
	}
	for i, t := range ids {
		b.Parts[i].MessageID = t.resolve(arena)
	}
	return nil
}

func (d *decoder) parts() ([]usenet.Part, []text, error) {
	if err := d.byte('['); err != nil {
		return nil, nil, err
	}
	parts := make([]usenet.Part, 0, 64)
	ids := make([]text, 0, 64)
	if d.peek() == ']' {
		d.i++
		return parts, ids, nil
	}
	for {
		var p usenet.Part
		var id text
		hasID := false
		err := d.object(func(key []byte) (err error) {
			var n int64
			switch string(key) {
			case "n":
				n, err = d.int(32)
				p.N = int(n)
			case "article":
				p.Article, err = d.int(64)
			case "messageId":
				id, err = d.text()
				hasID = true
			case "bytes":
				p.Bytes, err = d.int(64)
			default:
				return errSlow
			}
			return err
		})
		if err != nil {
			return nil, nil, err
		}
		if !hasID {
			id = text{} // "": as json.Unmarshal leaves it
		}
		parts = append(parts, p)
		ids = append(ids, id)
		switch d.peek() {
		case ',':
			d.i++
		case ']':
			d.i++
			return parts, ids, nil
		default:
			return nil, nil, errSlow
		}
	}
}

// int reads an integer that fits in bits (an int is 64 bits here, but a
// Collator's part numbers and totals are small: bits 32 keeps the fast path
// the same on every platform).
func (d *decoder) int(bits int) (int64, error) {
	d.space()
	j := d.i
	if j < len(d.data) && d.data[j] == '-' {
		j++
	}
	start := j
	for j < len(d.data) && d.data[j] >= '0' && d.data[j] <= '9' {
		j++
	}
	if j == start || (d.data[start] == '0' && j > start+1) {
		return 0, errSlow
	}
	if j < len(d.data) {
		switch d.data[j] {
		case '.', 'e', 'E':
			return 0, errSlow
		}
	}
	n, err := strconv.ParseInt(string(d.data[d.i:j]), 10, bits)
	if err != nil {
		return 0, errSlow
	}
	d.i = j
	return n, nil
}

func (d *decoder) bool() (bool, error) {
	d.space()
	rest := d.data[d.i:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		d.i += 4
		return true, nil
	case len(rest) >= 5 && string(rest[:5]) == "false":
		d.i += 5
		return false, nil
	}
	return false, errSlow
}

// text reads a string into the arena.
func (d *decoder) text() (text, error) {
	b, _, err := d.rawString()
	if err != nil {
		return text{}, err
	}
	lo := len(d.arena)
	d.arena = append(d.arena, b...)
	return text{lo: lo, hi: len(d.arena)}, nil
}

// rawString reads a string: its bytes in data (plain), or in the scratch
// buffer when it has escapes. Only valid UTF-8 and escapes of one rune (no
// surrogates) take the fast path.
func (d *decoder) rawString() (b []byte, plain bool, err error) {
	if err := d.byte('"'); err != nil {
		return nil, false, err
	}
	start := d.i
	for d.i < len(d.data) {
		c := d.data[d.i]
		switch {
		case c == '"':
			s := d.data[start:d.i]
			d.i++
			if !utf8.Valid(s) {
				return nil, false, errSlow
			}
			return s, true, nil
		case c == '\\':
			b, err := d.escaped(start)
			return b, false, err
		case c < 0x20:
			return nil, false, errSlow
		}
		d.i++
	}
	return nil, false, errSlow
}

// escaped reads the rest of a string from its first backslash at d.i.
func (d *decoder) escaped(start int) ([]byte, error) {
	buf := append(d.buf[:0], d.data[start:d.i]...)
	for d.i < len(d.data) {
		// A run of bytes that stand for themselves.
		j := d.i
		for j < len(d.data) && d.data[j] != '"' && d.data[j] != '\\' && d.data[j] >= 0x20 {
			j++
		}
		buf = append(buf, d.data[d.i:j]...)
		d.i = j
		if j == len(d.data) {
			break
		}
		switch c := d.data[j]; {
		case c == '"':
			d.i++
			d.buf = buf
			if !utf8.Valid(buf) {
				return nil, errSlow
			}
			return buf, nil
		case c < 0x20:
			return nil, errSlow
		}
		if d.i+1 >= len(d.data) {
			return nil, errSlow
		}
		e := d.data[d.i+1]
		d.i += 2
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := hex4(d.data[d.i:])
			if !ok || (r >= 0xD800 && r <= 0xDFFF) {
				return nil, errSlow
			}
			d.i += 4
			buf = utf8.AppendRune(buf, r)
		default:
			return nil, errSlow
		}
	}
	return nil, errSlow
}

// hex4 reads four hex digits.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
