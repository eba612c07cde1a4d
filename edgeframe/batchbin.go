package edgeframe

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sync"
	"unicode/utf8"
)

// BatchType is the media type of a batch body in the binary layout, which
// POST /v1/ranges/{id}/batch takes beside JSON (docs/api.md, "The binary
// body"). All integers are big-endian:
//
//	from     int64
//	to       int64
//	headers  int64
//	flags    uint8: bit 0 is final, the others are 0
//	missing  uint32 n, then n int64
//	items    uint32 n, then n times: key (uint32 length, UTF-8 bytes),
//	         value (uint32 length, JSON bytes)
//
// Nothing may follow. Its rules are the JSON body's: the same head, a
// non-empty key and a valid JSON value in every item (null for none). It
// carries the values as they are, so the sender does not check or encode
// them; the receiver checks each, and keeps it as sent. A value is then
// the same JSON as MarshalBatch would have sent, which compacts it and
// escapes <, >, &, U+2028 and U+2029, and the same bytes once encoded so
// (json.Marshal of a json.RawMessage).
const BatchType = "application/vnd.edgeindex.batch"

// binHead is the fixed part of a binary batch before its missing list:
// from, to, headers and flags.
const binHead = 3*8 + 1

// MarshalBatchBinary encodes b in the binary layout (BatchType). It checks
// what MarshalBatch checks of the head and the keys, and that every key is
// UTF-8, but not the values: a nil Value is sent as null, any other as it
// is, for the receiver to check. Its errors wrap ErrBadBatch.
func MarshalBatchBinary(b Batch) ([]byte, error) {
	if err := validateHead(b); err != nil {
		return nil, err
	}
	if uint64(len(b.Missing)) > math.MaxUint32 || uint64(len(b.Items)) > math.MaxUint32 {
		return nil, badf("too many items or missing articles for the binary layout")
	}
	size := binHead + 4 + 8*len(b.Missing) + 4
	for i, it := range b.Items {
		switch {
		case it.Key == "":
			return nil, badf("items[%d] has an empty key", i)
		case !utf8.ValidString(it.Key):
			return nil, badf("items[%d] has a key that is not UTF-8", i)
		case uint64(len(it.Key)) > math.MaxUint32 || uint64(len(it.Value)) > math.MaxUint32:
			return nil, badf("items[%d] is too large for the binary layout", i)
		}
		size += 8 + len(it.Key) + max(len(it.Value), len("null"))
	}
	dst := make([]byte, 0, size)
	dst = binary.BigEndian.AppendUint64(dst, uint64(b.From))
	dst = binary.BigEndian.AppendUint64(dst, uint64(b.To))
	dst = binary.BigEndian.AppendUint64(dst, uint64(b.Headers))
	var flags byte
	if b.Final {
		flags = 1
	}
	dst = append(dst, flags)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(b.Missing)))
	for _, n := range b.Missing {
		dst = binary.BigEndian.AppendUint64(dst, uint64(n))
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(b.Items)))
	for _, it := range b.Items {
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(it.Key)))
		dst = append(dst, it.Key...)
		v := []byte(it.Value)
		if v == nil {
			v = []byte("null")
		}
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(v)))
		dst = append(dst, v...)
	}
	return dst, nil
}

// DecodeBatchBinary reads a batch body in the binary layout (BatchType)
// from r, of size bytes (negative: not known), at most limit bytes (0 or
// below: DefaultMaxBatch). Every count and length is checked against the
// bytes left before anything is allocated for it. Each value is checked as
// the JSON body's are; the values are slices of the body. Its errors are
// DecodeBatch's: ErrBadBatch with a sentence naming the field,
// ErrTooLarge, or a read error, wrapped.
func DecodeBatchBinary(r io.Reader, size, limit int64) (Batch, error) {
	limit, n := readLimits(limit)
	body, err := readBody(r, size, n)
	switch {
	case int64(len(body)) > limit:
		return Batch{}, fmt.Errorf("%w: the body is over %d bytes", ErrTooLarge, limit)
	case err != nil:
		return Batch{}, fmt.Errorf("edgeframe: read batch: %w", err)
	}
	return decodeBinary(body, bodySplit())
}

// decodeBinary splits body into a batch and checks it: the head first,
// then the items' framing and keys, then their values, on the goroutines
// sp says.
func decodeBinary(body []byte, sp split) (Batch, error) {
	if len(body) < binHead+8 {
		return Batch{}, badf("a binary batch is at least %d bytes, not %d", binHead+8, len(body))
	}
	be := binary.BigEndian
	b := Batch{From: int64(be.Uint64(body)), To: int64(be.Uint64(body[8:])), Headers: int64(be.Uint64(body[16:]))}
	switch body[24] {
	case 0:
	case 1:
		b.Final = true
	default:
		return Batch{}, badf("flags must be 0 or 1, not %d", body[24])
	}
	p := body[binHead:]
	count := func(what string, each int) (int, error) {
		if len(p) < 4 {
			return 0, badf("the body ends before the count of %s", what)
		}
		n := be.Uint32(p) // compared as uint64: a 32-bit int cannot hold every count
		p = p[4:]
		if uint64(n) > uint64(len(p)/each) {
			return 0, badf("%d %s do not fit in the %d bytes left", n, what, len(p))
		}
		return int(n), nil
	}
	field := func(what string, i int) ([]byte, error) {
		if len(p) < 4 {
			return nil, badf("items[%d]: the body ends before its %s's length", i, what)
		}
		n := be.Uint32(p)
		p = p[4:]
		if uint64(n) > uint64(len(p)) {
			return nil, badf("items[%d]: its %s of %d bytes does not fit in the %d bytes left", i, what, n, len(p))
		}
		f := p[:n:n]
		p = p[n:]
		return f, nil
	}
	nm, err := count("missing articles", 8)
	if err != nil {
		return Batch{}, err
	}
	if nm > 0 {
		b.Missing = make([]int64, nm)
		for i := range b.Missing {
			b.Missing[i] = int64(be.Uint64(p[8*i:]))
		}
		p = p[8*nm:]
	}
	if err := validateHead(b); err != nil {
		return Batch{}, err
	}
	ni, err := count("items", 10) // a key and a value of a byte at least
	if err != nil {
		return Batch{}, err
	}
	b.Items = make([]Item, ni)
	values := 0
	for i := range b.Items {
		key, err := field("key", i)
		if err != nil {
			return Batch{}, err
		}
		value, err := field("value", i)
		if err != nil {
			return Batch{}, err
		}
		switch {
		case len(key) == 0:
			return Batch{}, badf("items[%d] has an empty key", i)
		case !utf8.Valid(key):
			return Batch{}, badf("items[%d] has a key that is not UTF-8", i)
		case len(value) == 0:
			return Batch{}, badf("items[%d] (key %q) has a value that is not valid JSON", i, shortKey(string(key)))
		}
		b.Items[i] = Item{Key: string(key), Value: value}
		values += len(value)
	}
	if len(p) > 0 {
		return Batch{}, badf("%d bytes follow the last item", len(p))
	}
	if i := checkValues(b.Items, sp.of(values)); i >= 0 {
		return Batch{}, badf("items[%d] (key %q) has a value that is not valid JSON", i, shortKey(b.Items[i].Key))
	}
	return b, nil
}

// shortKey is k for an error sentence: its first 64 bytes, so that a key
// as large as a body is not quoted whole.
func shortKey(k string) string {
	if len(k) > 64 {
		return k[:64] + "…"
	}
	return k
}

// checkValues checks each item's value, in parts runs on goroutines of
// their own, and returns the first item whose value is not valid JSON, or
// -1.
func checkValues(items []Item, parts int) int {
	run := func(items []Item) int {
		for i := range items {
			if !validValue(items[i].Value) {
				return i
			}
		}
		return -1
	}
	if parts < 2 || len(items) < parts {
		return run(items)
	}
	per := (len(items) + parts - 1) / parts
	bad := make([]int, parts)
	var wg sync.WaitGroup
	for k := 1; k < parts; k++ {
		wg.Go(func() { bad[k] = run(items[min(k*per, len(items)):min((k+1)*per, len(items))]) })
	}
	bad[0] = run(items[:per])
	wg.Wait()
	for k, i := range bad {
		if i >= 0 {
			return k*per + i
		}
	}
	return -1
}

// validValue reports whether v is one JSON value, in UTF-8.
func validValue(v []byte) bool {
	if !utf8.Valid(v) {
		return false
	}
	s := fast{p: v}
	if s.value(0) {
		s.space()
		return s.i == len(v)
	}
	return json.Valid(v) // what the scanner does not follow (deep nesting) encoding/json may
}
