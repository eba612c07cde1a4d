package edgeframe

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/edgeindex/edgeindex/batch"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DefaultMaxBatch is the body limit DecodeBatch applies when it is given a
// limit of zero or below: 64 MiB.
const DefaultMaxBatch = 64 << 20

// Sentinel errors of DecodeBatch; the HTTP layer maps ErrBadBatch to 400 and
// ErrTooLarge to 413.
var (
	// ErrBadBatch means a batch body is malformed. The wrapping error's text
	// is one sentence naming the field at fault.
	ErrBadBatch = errors.New("bad batch")
	// ErrTooLarge means a batch body is over the limit.
	ErrTooLarge = errors.New("batch body too large")
)

// Batch is the body of POST /v1/ranges/{id}/batch: the items found in the
// inclusive span [From, To] of a range, and how many overview lines (Headers)
// the worker read for it. It is the batch package's type: the wire and the
// store share it.
type Batch = batch.Batch

// Item is one result of a batch: a non-empty key and any JSON value.
type Item = batch.Item

// BatchResult is the answer to a stored or duplicate batch: the range's resume
// point, and whether the batch had already been stored.
type BatchResult = batch.Result

// ValidateBatch checks what DecodeBatch checks of a decoded batch, so a
// worker can check one before it posts it: From <= To, Headers >= 0, no
// empty key, and each Value either nil (it encodes as null) or valid JSON.
// Its error wraps ErrBadBatch. It cannot check To against the range's end;
// the store does.
func ValidateBatch(b Batch) error {
	if err := validateHead(b); err != nil {
		return err
	}
	for i, it := range b.Items {
		if it.Key == "" {
			return badf("items[%d] has an empty key", i)
		}
		if it.Value != nil && !json.Valid(it.Value) {
			return badf("items[%d] (key %q) has a value that is not valid JSON", i, it.Key)
		}
	}
	return nil
}

func validateHead(b Batch) error {
	if b.From > b.To {
		return badf("from (%d) is after to (%d)", b.From, b.To)
	}
	if b.Headers < 0 {
		return badf("headers must not be negative, not %d", b.Headers)
	}
	if !batch.HeadersFit(b.From, b.To, b.Headers) {
		return badf("headers (%d) must be at most the %d articles from %d to %d", b.Headers, uint64(b.To)-uint64(b.From)+1, b.From, b.To)
	}
	for i, n := range b.Missing {
		if n < b.From || n > b.To || (i > 0 && n <= b.Missing[i-1]) {
			return badf("missing[%d] (%d) must ascend within %d..%d", i, n, b.From, b.To)
		}
	}
	return nil
}

func badf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadBatch, fmt.Sprintf(format, args...))
}

// DecodeBatch reads one batch body from r, reading at most limit bytes of it
// (limit <= 0 means DefaultMaxBatch). It is strict:
//
//   - the body is one JSON object, UTF-8, with nothing but white space after it;
//   - its fields are exactly "from", "to", "headers" and "items", each present
//     once, and optionally "missing" and "final", spelled in that case: an
//     unknown or repeated field is refused;
//   - final, when present, is true or false;
//   - missing, when present, is an array of integers ascending within
//     [from, to];
//   - from, to and headers are integers that fit in an int64, with from <= to
//     and headers >= 0; items is an array (it may be empty);
//   - each item is an object with exactly "key", a non-empty string, and
//     "value", any JSON value including null; a missing value is refused
//     like any missing field.
//
// A malformed body gives an error wrapping ErrBadBatch with a sentence naming
// the field. A body over limit bytes gives ErrTooLarge: when a body is
// refused, DecodeBatch reads on to at most limit+1 bytes, so an oversized
// body is reported as too large rather than as malformed. An error reading r
// is returned wrapped, matching neither sentinel.
func DecodeBatch(r io.Reader, limit int64) (Batch, error) {
	return DecodeBatchSize(r, -1, limit)
}

// DecodeBatchSize is DecodeBatch for a body whose length is said to be size
// bytes (an HTTP request's Content-Length), or not known when size < 0: it
// reads the body into one buffer of that size instead of growing one. size
// is only a hint: a body of another length is read and checked as
// DecodeBatch reads and checks it.
func DecodeBatchSize(r io.Reader, size, limit int64) (Batch, error) {
	return decodeBody(r, size, limit, decodeFast, decodeSlow)
}

// decodeBody reads a body of size bytes (negative: not known), at most
// limit (0 or below: DefaultMaxBatch), and decodes it with fast, or, when
// fast gives up (or the read failed or the body is over the limit), with
// slow over the same bytes and the read error after them.
func decodeBody[T any](r io.Reader, size, limit int64, fast func([]byte) (T, bool), slow func(io.Reader, int64) (T, error)) (T, error) {
	limit, n := readLimits(limit)
	raw, rerr := readBody(r, size, n, nil)
	if rerr == nil && int64(len(raw)) <= limit {
		if v, ok := fast(raw); ok {
			return v, nil
		}
	}
	r = bytes.NewReader(raw)
	if rerr != nil {
		r = io.MultiReader(r, errReader{rerr})
	}
	return slow(r, limit)
}

// readLimits returns limit, DefaultMaxBatch when it is 0 or below, and
// the bytes to read to tell a body over it: one more.
func readLimits(limit int64) (int64, int64) {
	if limit <= 0 {
		limit = DefaultMaxBatch
	}
	if limit == math.MaxInt64 {
		return limit, limit
	}
	return limit, limit + 1
}

// decodeSlow is DecodeBatch token by token, with json.Decoder: the one
// that words every error.
func decodeSlow(r io.Reader, limit int64) (Batch, error) {
	var b Batch
	err := decodeStrict(r, limit, "batch", func(dec *json.Decoder) (err error) {
		b, err = decodeBatch(dec)
		return err
	})
	if err != nil {
		return Batch{}, err
	}
	return b, nil
}

// decodeStrict runs decode, token by token, over at most limit bytes of r
// and requires nothing but white space after what it decoded. Its faults
// go in this order: a body over the limit (ErrTooLarge), a read error
// (wrapped, naming what was read), a body that is not UTF-8, then
// decode's own error. After a refusal it reads on to find out whether
// the body is over the limit or not UTF-8.
func decodeStrict(r io.Reader, limit int64, what string, decode func(*json.Decoder) error) error {
	lr := &io.LimitedReader{R: r, N: limit}
	if limit < math.MaxInt64 {
		lr.N = limit + 1
	}
	cr := &checkReader{r: lr}
	dec := json.NewDecoder(cr)
	err := decode(dec)
	if err == nil {
		err = expectEnd(dec)
	}
	if err != nil && cr.readErr == nil {
		// Read on to find out whether the body is over the limit (and
		// whether it is UTF-8), since those faults take precedence.
		if _, derr := io.Copy(io.Discard, cr); derr == errBadUTF8 {
			if _, derr := io.Copy(io.Discard, lr); derr != nil {
				cr.readErr = derr
			}
		}
	}
	switch {
	case lr.N == 0 && limit < math.MaxInt64:
		return fmt.Errorf("%w: the body is over %d bytes", ErrTooLarge, limit)
	case cr.readErr != nil:
		return fmt.Errorf("edgeframe: read %s: %w", what, cr.readErr)
	case cr.badUTF8:
		return badf("the body is not valid UTF-8")
	}
	return err
}

// place names a part of the body in error sentences. It is built without
// allocating and formatted only when an error needs it.
type place struct {
	item int    // >= 0 for items[item]
	name string // a field of the body, or of the item when item >= 0
}

var (
	body      = place{item: -1, name: "the body"}
	itemsList = place{item: -1, name: "items"}
)

func field(name string) place { return place{item: -1, name: name} }

func item(i int) place { return place{item: i} }

// in returns the place of field name inside item p.
func (p place) in(name string) place { return place{item: p.item, name: name} }

func (p place) String() string {
	if p.item < 0 {
		return p.name
	}
	s := "items[" + strconv.Itoa(p.item) + "]"
	if p.name != "" {
		s += "." + p.name
	}
	return s
}

func decodeBatch(dec *json.Decoder) (Batch, error) {
	var b Batch
	tok, err := dec.Token()
	if err == io.EOF {
		return b, badf("the body is empty; it must be a JSON object")
	}
	if err := checkDelim(dec, tok, err, '{', body); err != nil {
		return b, err
	}
	var seen int
	for dec.More() {
		name, err := objectKey(dec, body)
		if err != nil {
			return b, err
		}
		bit, err := decodeField(dec, name, &b)
		if seen&bit != 0 {
			return b, badf("%s appears twice", name)
		}
		if err != nil {
			return b, err
		}
		seen |= bit
	}
	if err := expectDelim(dec, '}', body); err != nil {
		return b, err
	}
	for _, f := range []struct {
		bit  int
		name string
	}{{seenFrom, "from"}, {seenTo, "to"}, {seenHeaders, "headers"}, {seenItems, "items"}} {
		if seen&f.bit == 0 {
			return b, badf("%s is missing", f.name)
		}
	}
	return b, validateHead(b)
}

// The fields of a batch's body, as bits of the set decodeBatch has seen.
const (
	seenFrom = 1 << iota
	seenTo
	seenHeaders
	seenItems
	seenMissing
	seenFinal
)

// decodeField decodes the value of the body's field name into b, and
// returns the field's bit (0 for an unknown field, which is an error).
func decodeField(dec *json.Decoder, name string, b *Batch) (bit int, err error) {
	switch name {
	case "from":
		return seenFrom, decodeInt(dec, name, &b.From)
	case "to":
		return seenTo, decodeInt(dec, name, &b.To)
	case "headers":
		return seenHeaders, decodeInt(dec, name, &b.Headers)
	case "items":
		b.Items, err = decodeItems(dec)
		return seenItems, err
	case "missing":
		if err := dec.Decode(&b.Missing); err != nil {
			return seenMissing, valueErr(dec, err, field(name), "an array of integers")
		}
		return seenMissing, nil
	case "final":
		var p *bool
		if err := dec.Decode(&p); err != nil {
			return seenFinal, valueErr(dec, err, field(name), "a boolean")
		} else if p == nil {
			return seenFinal, badf("final must be a boolean, not null")
		}
		b.Final = *p
		return seenFinal, nil
	}
	return 0, badf("unknown field %q", name)
}

func decodeItems(dec *json.Decoder) ([]Item, error) {
	if err := expectDelim(dec, '[', itemsList); err != nil {
		return nil, err
	}
	items := []Item{}
	for i := 0; dec.More(); i++ {
		it, err := decodeItem(dec, i)
		if err != nil {
			return nil, err
		}
		items = append(items, it)
	}
	return items, expectDelim(dec, ']', itemsList)
}

func decodeItem(dec *json.Decoder, i int) (Item, error) {
	var it Item
	at := item(i)
	if err := expectDelim(dec, '{', at); err != nil {
		return it, err
	}
	var haveKey, haveValue bool
	for dec.More() {
		name, err := objectKey(dec, at)
		if err != nil {
			return it, err
		}
		switch name {
		case "key":
			if haveKey {
				return it, badf("%s.key appears twice", at)
			}
			haveKey = true
			var k *string
			if err := dec.Decode(&k); err != nil {
				return it, valueErr(dec, err, at.in("key"), "a string")
			}
			if k == nil {
				return it, badf("%s.key must be a string, not null", at)
			}
			it.Key = *k
		case "value":
			if haveValue {
				return it, badf("%s.value appears twice", at)
			}
			haveValue = true
			if err := dec.Decode(&it.Value); err != nil {
				return it, valueErr(dec, err, at.in("value"), "JSON")
			}
		default:
			return it, badf("%s has an unknown field %q", at, name)
		}
	}
	if err := expectDelim(dec, '}', at); err != nil {
		return it, err
	}
	switch {
	case !haveKey:
		return it, badf("%s has no key", at)
	case it.Key == "":
		return it, badf("%s has an empty key", at)
	case !haveValue:
		return it, badf("%s (key %q) has no value", at, it.Key)
	}
	return it, nil
}

func decodeInt(dec *json.Decoder, name string, dst *int64) error {
	var p *int64
	if err := dec.Decode(&p); err != nil {
		return valueErr(dec, err, field(name), "an integer")
	}
	if p == nil {
		return badf("%s must be an integer, not null", name)
	}
	*dst = *p
	return nil
}

// objectKey reads the next member name of the object being decoded.
func objectKey(dec *json.Decoder, where place) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", syntaxErr(dec, err, where)
	}
	name, ok := tok.(string)
	if !ok { // Token does not return anything else in key position
		return "", badf("%s has a member name that is not a string", where)
	}
	return name, nil
}

// expectDelim reads one token and requires it to be d.
func expectDelim(dec *json.Decoder, d json.Delim, where place) error {
	tok, err := dec.Token()
	return checkDelim(dec, tok, err, d, where)
}

// checkDelim requires the token just read, tok or its error err, to be d.
func checkDelim(dec *json.Decoder, tok json.Token, err error, d json.Delim, where place) error {
	tok, err = bigNumber(tok, err)
	if err != nil {
		return syntaxErr(dec, err, where)
	}
	if tok == d {
		return nil
	}
	switch d {
	case '{':
		return badf("%s must be a JSON object, not %s", where, describe(tok))
	case '[':
		return badf("%s must be a JSON array, not %s", where, describe(tok))
	}
	// Token checks the nesting, so a closing delimiter is never mismatched.
	return badf("%s does not end where expected", where)
}

// expectEnd requires nothing but white space after the batch object.
func expectEnd(dec *json.Decoder) error {
	tok, err := bigNumber(dec.Token())
	if err == io.EOF {
		return nil
	}
	if err != nil {
		return syntaxErr(dec, err, body)
	}
	return badf("the body has %s after its JSON object", describe(tok))
}

// bigNumber turns Token's error for a number too large for a float64 into
// the number it is, so that it is described as one.
func bigNumber(tok json.Token, err error) (json.Token, error) {
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok && strings.HasPrefix(te.Value, "number") {
		return json.Number(strings.TrimPrefix(te.Value, "number ")), nil
	}
	return tok, err
}

func describe(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			return "an object"
		case '[':
			return "an array"
		}
		return fmt.Sprintf("%q", rune(v))
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", tok)
}

// valueErr turns an error from decoding the value of field into a bad batch.
func valueErr(dec *json.Decoder, err error, where place, want string) error {
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		return badf("%s must be %s, not %s", where, want, jsonKind(te.Value))
	}
	return syntaxErr(dec, err, where)
}

// jsonKind makes UnmarshalTypeError.Value read well: "number 1.5" stays,
// "string" becomes "a string".
func jsonKind(v string) string {
	switch v {
	case "string":
		return "a string"
	case "number":
		return "a number"
	case "bool":
		return "a boolean"
	case "array":
		return "an array"
	case "object":
		return "an object"
	}
	return v
}

// syntaxErr turns a JSON syntax error, or the body ending early, into a bad
// batch. Read errors pass through; DecodeBatch reports them from checkReader.
func syntaxErr(dec *json.Decoder, err error, where place) error {
	in := ""
	if where != body {
		in = " in " + where.String()
	}
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		// se.Offset is relative to the value being decoded; InputOffset is the
		// start of that value (or the bad token) in the body.
		return badf("the body is not valid JSON near byte %d%s: %s", dec.InputOffset(), in, se.Error())
	}
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		if where == body {
			return badf("the body ends before its JSON object is complete")
		}
		return badf("the body ends inside %s, before its JSON is complete", where)
	}
	return err
}

// checkReader passes reads through, remembering the first read error and
// failing the read as soon as the bytes stop being valid UTF-8.
type checkReader struct {
	r       io.Reader
	readErr error // first error from r other than io.EOF
	badUTF8 bool
	utf8    utf8Check
}

var errBadUTF8 = errors.New("invalid UTF-8")

func (c *checkReader) Read(p []byte) (int, error) {
	if c.badUTF8 {
		return 0, errBadUTF8
	}
	n, err := c.r.Read(p)
	if !c.utf8.feed(p[:n]) || (err == io.EOF && !c.utf8.end()) {
		c.badUTF8 = true
		return 0, errBadUTF8
	}
	if err != nil && err != io.EOF && c.readErr == nil {
		c.readErr = err
	}
	return n, err
}

// utf8Check validates UTF-8 fed to it in pieces that may split a rune.
type utf8Check struct {
	pend [utf8.UTFMax]byte // the start of a rune split across pieces
	n    int
}

// feed checks the next piece and reports whether the bytes so far are valid
// UTF-8 (apart from a rune that may still be completed).
func (u *utf8Check) feed(p []byte) bool {
	for u.n > 0 && len(p) > 0 {
		u.pend[u.n] = p[0]
		u.n++
		p = p[1:]
		if utf8.FullRune(u.pend[:u.n]) {
			r, size := utf8.DecodeRune(u.pend[:u.n])
			if r == utf8.RuneError && size <= 1 || size != u.n {
				return false
			}
			u.n = 0
		}
	}
	if len(p) == 0 {
		return true
	}
	// Keep back a trailing rune that is not yet complete.
	cut := len(p)
	for i := len(p) - 1; i >= 0 && i > len(p)-utf8.UTFMax; i-- {
		if utf8.RuneStart(p[i]) {
			if !utf8.FullRune(p[i:]) {
				cut = i
			}
			break
		}
	}
	if !utf8.Valid(p[:cut]) {
		return false
	}
	u.n = copy(u.pend[:], p[cut:])
	return true
}

// end reports whether the input ended on a rune boundary.
func (u *utf8Check) end() bool { return u.n == 0 }

// MarshalBatch checks b as ValidateBatch does and encodes it as a batch
// body, in one pass over the values: encoding checks that each is valid
// JSON. A nil Items encodes as []. Its error wraps ErrBadBatch.
func MarshalBatch(b Batch) ([]byte, error) {
	if err := validateHead(b); err != nil {
		return nil, err
	}
	for i, it := range b.Items {
		if it.Key == "" {
			return nil, badf("items[%d] has an empty key", i)
		}
	}
	if body, ok := appendBatch(make([]byte, 0, 64+20*len(b.Missing)+itemsSize(b.Items)), b); ok {
		return body, nil
	}
	if b.Items == nil {
		b.Items = []Item{}
	}
	body, err := json.Marshal(b)
	if err != nil {
		return nil, badf("a value is not valid JSON: %v", err)
	}
	return body, nil
}
