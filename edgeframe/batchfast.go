package edgeframe

import (
	"bytes"
	"encoding/json"
	"io"
	"math"

	"github.com/edgeindex/edgeindex/internal/jsonscan"
)

// The fast path of DecodeBatch. The body is read whole (it is bounded by
// the limit, and the batch budget counts it), checked as UTF-8 in one call,
// and scanned once over the bytes: member names are compared without being
// made into strings, numbers are parsed in place, and each item's value is
// the body's own bytes (a sub-slice, not a copy), so an item costs its key
// string and its share of the Items slice. The fast path only ever accepts:
// at the first thing it does not expect, well-formed or not (an escape in a
// member name, a number with a fraction, a repeated or unknown field, a
// null, deep nesting, a syntax error), it gives up, and the token-by-token
// decoder (decodeBatch) decodes the same bytes, giving the same result or
// the same error sentence. Whatever it accepts, that decoder accepts with
// the same result (TestFastPathAgrees and FuzzDecodeBatchFast check it).

// maxFastDepth bounds the nesting the fast path follows inside a value;
// deeper values go to the slow path (encoding/json's own limit is 10000).
const maxFastDepth = 1000

// readBody reads at most n bytes of r, into one buffer when the body is
// size bytes long (size < 0: not known). err is a read error other than EOF.
// After each read, seen (unless nil) is given the bytes read so far: a
// decoder can do its work on them while the rest is still on its way.
func readBody(r io.Reader, size, n int64, seen func([]byte)) ([]byte, error) {
	if br, ok := r.(interface{ Len() int }); ok && size < 0 {
		size = int64(br.Len())
	}
	var buf []byte
	if size >= 0 && size < n {
		buf = make([]byte, 0, size+1) // the extra byte: the read that finds EOF
	} else {
		buf = make([]byte, 0, 16<<10)
	}
	lr := io.LimitedReader{R: r, N: n}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		m, err := lr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if m > 0 && seen != nil {
			seen(buf)
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// errReader returns err after the bytes before it were read.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// fast is the scanner's state: the body and the position in it.
type fast struct {
	p []byte
	i int
	// dirty is set when the scanner skipped white space or read a string
	// with a byte that json.Marshal escapes in a json.RawMessage (<, >, &,
	// or the first byte of U+2028 and U+2029, and of other runes): bytes
	// MarshalBatch cannot copy as they are.
	dirty bool
	// split says how a large body is shared out among goroutines (see
	// splitItems); the zero value reads it on one.
	split split
}

// decodeFast decodes body, reporting false when the slow path must decide.
func decodeFast(body []byte) (Batch, bool) { return decodeFastSplit(body, bodySplit()) }

// decodeFastSplit is decodeFast sharing the body out as sp says.
func decodeFastSplit(body []byte, sp split) (Batch, bool) {
	if !validUTF8(body, sp) {
		return Batch{}, false
	}
	s := fast{p: body, split: sp}
	b, ok := s.batch()
	if !ok {
		return Batch{}, false
	}
	s.space()
	if s.i != len(s.p) {
		return Batch{}, false
	}
	if validateHead(b) != nil {
		return Batch{}, false
	}
	return b, true
}

func (s *fast) space() {
	if i := jsonscan.Space(s.p, s.i); i != s.i {
		s.i, s.dirty = i, true
	}
}

// next skips white space and reports whether the next byte is c, taking it.
func (s *fast) next(c byte) bool {
	if s.peek() != c || c == 0 {
		return false
	}
	s.i++
	return true
}

// peek skips white space and returns the next byte (0 at the end).
func (s *fast) peek() byte {
	s.space()
	if s.i < len(s.p) {
		return s.p[s.i]
	}
	return 0
}

// name reads a member name and its colon; the name has no escape.
func (s *fast) name() ([]byte, bool) {
	if !s.next('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.p) {
		c := s.p[s.i]
		switch {
		case c == '"':
			n := s.p[start:s.i]
			s.i++
			return n, s.next(':')
		case c == '\\' || c < 0x20:
			return nil, false
		}
		s.i++
	}
	return nil, false
}

func (s *fast) batch() (Batch, bool) {
	var b Batch
	if !s.next('{') {
		return b, false
	}
	seen := 0
	if s.next('}') {
		return b, false
	}
	for {
		n, ok := s.name()
		if !ok {
			return b, false
		}
		var bit int
		switch string(n) { // compared without allocating
		case "from":
			bit = seenFrom
			b.From, ok = s.int()
		case "to":
			bit = seenTo
			b.To, ok = s.int()
		case "headers":
			bit = seenHeaders
			b.Headers, ok = s.int()
		case "items":
			bit = seenItems
			b.Items, ok = s.items()
		case "missing":
			bit = seenMissing
			b.Missing, ok = s.ints()
		case "final":
			bit = seenFinal
			b.Final, ok = s.bool()
		default:
			return b, false
		}
		if !ok || seen&bit != 0 {
			return b, false
		}
		seen |= bit
		if s.next('}') {
			break
		}
		if !s.next(',') {
			return b, false
		}
	}
	const required = seenFrom | seenTo | seenHeaders | seenItems
	return b, seen&required == required
}

// int reads an integer that fits in an int64, with no fraction or exponent.
func (s *fast) int() (int64, bool) {
	s.space()
	neg := false
	if s.i < len(s.p) && s.p[s.i] == '-' {
		neg = true
		s.i++
	}
	start := s.i
	var u uint64
	for s.i < len(s.p) && s.p[s.i] >= '0' && s.p[s.i] <= '9' {
		d := uint64(s.p[s.i] - '0')
		if u > (math.MaxUint64-d)/10 {
			return 0, false
		}
		u = u*10 + d
		s.i++
	}
	digits := s.i - start
	if digits == 0 || digits > 1 && s.p[start] == '0' || digits > 19 {
		return 0, false
	}
	if s.i < len(s.p) {
		switch s.p[s.i] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	switch {
	case neg && u <= 1<<63:
		return int64(-u), true //nolint:gosec // -(1<<63) is MinInt64
	case !neg && u <= math.MaxInt64:
		return int64(u), true
	}
	return 0, false
}

// array reads a JSON array whose elements elem reads; never nil when ok.
func array[T any](s *fast, elem func() (T, bool)) ([]T, bool) {
	if !s.next('[') {
		return nil, false
	}
	out := []T{}
	if s.next(']') {
		return out, true
	}
	for {
		v, ok := elem()
		if !ok {
			return nil, false
		}
		out = append(out, v)
		if s.next(']') {
			return out, true
		}
		if !s.next(',') {
			return nil, false
		}
	}
}

func (s *fast) ints() ([]int64, bool) { return array(s, s.int) }

func (s *fast) bool() (bool, bool) {
	s.space()
	switch {
	case bytes.HasPrefix(s.p[s.i:], []byte("true")):
		s.i += 4
		return true, s.literalEnds()
	case bytes.HasPrefix(s.p[s.i:], []byte("false")):
		s.i += 5
		return false, s.literalEnds()
	}
	return false, false
}

// literalEnds reports whether the literal just read is not run on into
// letters or digits ("truex"), which the slow path refuses.
func (s *fast) literalEnds() bool { return endsLiteral(s.p, s.i) }

// endsLiteral reports whether a literal ending before p[i] is not run on
// into letters or digits.
func endsLiteral(p []byte, i int) bool {
	if i == len(p) {
		return true
	}
	switch p[i] {
	case ' ', '\t', '\n', '\r', ',', '}', ']':
		return true
	}
	return false
}

func (s *fast) items() ([]Item, bool) {
	if items, ok := s.splitItems(); ok {
		return items, true
	}
	return array(s, s.item)
}

func (s *fast) item() (Item, bool) {
	var it Item
	if !s.next('{') || s.next('}') {
		return it, false
	}
	var haveKey, haveValue bool
	for {
		n, ok := s.name()
		if !ok {
			return it, false
		}
		switch string(n) {
		case "key":
			if haveKey {
				return it, false
			}
			haveKey = true
			it.Key, ok = s.key()
		case "value":
			if haveValue {
				return it, false
			}
			haveValue = true
			s.space()
			start := s.i
			ok = s.value(0)
			it.Value = json.RawMessage(s.p[start:s.i:s.i])
		default:
			return it, false
		}
		if !ok {
			return it, false
		}
		if s.next('}') {
			break
		}
		if !s.next(',') {
			return it, false
		}
	}
	return it, haveKey && haveValue && it.Key != ""
}

// key reads an item's key: a string, unescaped as encoding/json does.
func (s *fast) key() (string, bool) {
	s.space()
	start := s.i
	escaped, ok := s.str()
	if !ok {
		return "", false
	}
	raw := s.p[start+1 : s.i-1]
	if !escaped {
		return string(raw), true
	}
	var k string
	if json.Unmarshal(s.p[start:s.i], &k) != nil {
		return "", false
	}
	return k, true
}

// The classes of the bytes of a string, for str.
const (
	strPlain   = iota
	strQuote   // its end
	strEscape  // a backslash
	strControl // below 0x20: not allowed
	strMarked  // plain, but MarshalBatch cannot copy it as it is (see fast.dirty)
)

var strClass = func() (t [256]byte) {
	for c := range 0x20 {
		t[c] = strControl
	}
	t['"'], t['\\'] = strQuote, strEscape
	t['<'], t['>'], t['&'], t[0xE2] = strMarked, strMarked, strMarked, strMarked
	return t
}()

// str skips a string, checking its escapes, and reports whether it has any.
func (s *fast) str() (escaped, ok bool) {
	i, escaped, ok := s.scanStr(s.i)
	if ok {
		s.i = i
	}
	return escaped, ok
}

// scanStr checks the string at p[i] and returns the index after it, and
// whether it has escapes.
func (s *fast) scanStr(i int) (_ int, escaped, ok bool) {
	p := s.p
	if i >= len(p) || p[i] != '"' {
		return i, false, false
	}
	i++
	for {
		for i < len(p) && strClass[p[i]] == strPlain {
			i++
		}
		if i >= len(p) {
			return i, false, false
		}
		switch strClass[p[i]] {
		case strQuote:
			return i + 1, escaped, true
		case strControl:
			return i, false, false
		case strMarked:
			s.dirty = true
			i++
		case strEscape:
			escaped = true
			if i+1 >= len(p) {
				return i, false, false
			}
			switch p[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(p) {
					return i, false, false
				}
				for _, h := range p[i+2 : i+6] {
					if !isHex(h) {
						return i, false, false
					}
				}
				i += 6
			default:
				return i, false, false
			}
		}
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// value skips one JSON value, checking it as encoding/json would.
func (s *fast) value(depth int) bool {
	i, ok := s.skipValue(s.i, depth)
	if ok {
		s.i = i
	}
	return ok
}

// skipValue checks the value at p[i], after white space, and returns the
// index after it. It keeps the index in a variable rather than in s, which
// it passes to what it calls and gets back: the scanner's inner loop.
func (s *fast) skipValue(i, depth int) (int, bool) {
	if depth > maxFastDepth {
		return i, false
	}
	p := s.p
	if i = s.skipSpace(i); i >= len(p) {
		return i, false
	}
	var ok bool
	switch c := p[i]; {
	case c == '"':
		i, _, ok = s.scanStr(i)
		return i, ok
	case c == '{':
		return s.skipObject(i, depth)
	case c == '[':
		return s.skipArray(i, depth)
	case c == 't':
		return skipLiteral(p, i, "true")
	case c == 'f':
		return skipLiteral(p, i, "false")
	case c == 'n':
		return skipLiteral(p, i, "null")
	case c == '-' || c >= '0' && c <= '9':
		return skipNumber(p, i)
	}
	return i, false
}

// skipObject checks the object whose "{" is at p[i], as skipValue does; its
// values are at depth+1.
func (s *fast) skipObject(i, depth int) (int, bool) {
	p := s.p
	var ok bool
	if i = s.skipSpace(i + 1); i < len(p) && p[i] == '}' {
		return i + 1, true
	}
	for {
		if i, _, ok = s.scanStr(i); !ok {
			return i, false
		}
		if i = s.skipSpace(i); i >= len(p) || p[i] != ':' {
			return i, false
		}
		if i, ok = s.skipValue(i+1, depth+1); !ok {
			return i, false
		}
		if i = s.skipSpace(i); i >= len(p) {
			return i, false
		}
		switch p[i] {
		case '}':
			return i + 1, true
		case ',':
			i = s.skipSpace(i + 1)
		default:
			return i, false
		}
	}
}

// skipArray checks the array whose "[" is at p[i], as skipValue does; its
// values are at depth+1.
func (s *fast) skipArray(i, depth int) (int, bool) {
	p := s.p
	var ok bool
	if i = s.skipSpace(i + 1); i < len(p) && p[i] == ']' {
		return i + 1, true
	}
	for {
		if i, ok = s.skipValue(i, depth+1); !ok {
			return i, false
		}
		if i = s.skipSpace(i); i >= len(p) {
			return i, false
		}
		switch p[i] {
		case ']':
			return i + 1, true
		case ',':
			i++
		default:
			return i, false
		}
	}
}

// skipSpace returns the index of the first byte at or after i that is not
// white space, noting in s.dirty that there was some.
func (s *fast) skipSpace(i int) int {
	j := jsonscan.Space(s.p, i)
	if j != i {
		s.dirty = true
	}
	return j
}

func skipLiteral(p []byte, i int, lit string) (int, bool) {
	if !bytes.HasPrefix(p[i:], []byte(lit)) {
		return i, false
	}
	i += len(lit)
	return i, endsLiteral(p, i)
}

// skipNumber checks the number at p[i], -?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?,
// and returns the index after it.
func skipNumber(p []byte, i int) (int, bool) {
	if p[i] == '-' {
		i++
	}
	start := i
	i = digits(p, i)
	if n := i - start; n == 0 || n > 1 && p[start] == '0' {
		return i, false
	}
	if i < len(p) && p[i] == '.' {
		j := digits(p, i+1)
		if j == i+1 {
			return i, false
		}
		i = j
	}
	if i < len(p) && (p[i] == 'e' || p[i] == 'E') {
		i++
		if i < len(p) && (p[i] == '+' || p[i] == '-') {
			i++
		}
		j := digits(p, i)
		if j == i {
			return i, false
		}
		i = j
	}
	return i, endsLiteral(p, i)
}

// digits returns the index of the first byte at or after i that is not a
// decimal digit.
func digits(p []byte, i int) int {
	for i < len(p) && p[i] >= '0' && p[i] <= '9' {
		i++
	}
	return i
}
