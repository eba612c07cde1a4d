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
	size, err := binarySize(b)
	if err != nil {
		return nil, err
	}
	dst := appendBinaryHead(make([]byte, 0, size), b)
	for _, it := range b.Items {
		dst = appendBinaryItem(dst, it)
	}
	return dst, nil
}

// BatchBinaryReader reads MarshalBatchBinary's bytes of a batch, encoding
// them a few items at a time as they are read: a sender streams a batch of
// any size through a buffer of some 64 kB, without a copy of it whole. It
// reads the batch's items as it goes, so they must not change until it is
// read to its end.
type BatchBinaryReader struct {
	items []Item
	size  int64
	i     int    // the next item to encode
	buf   []byte // the bytes encoded last
	rest  []byte // of buf, those not yet read
}

// binaryChunk is about how many bytes BatchBinaryReader encodes at a time
// (an item larger than it is encoded whole): large enough that a read
// costs far more than the call, small enough to stay in a core's cache.
const binaryChunk = 64 << 10

// NewBatchBinaryReader checks b as MarshalBatchBinary does and returns a
// reader of its encoding. Its errors wrap ErrBadBatch.
func NewBatchBinaryReader(b Batch) (*BatchBinaryReader, error) {
	size, err := binarySize(b)
	if err != nil {
		return nil, err
	}
	head := appendBinaryHead(make([]byte, 0, min(size, binaryChunk)), b)
	return &BatchBinaryReader{items: b.Items, size: size, buf: head, rest: head}, nil
}

// binarySize checks b for the binary layout and returns the length of its
// encoding.
func binarySize(b Batch) (int64, error) {
	if err := validateHead(b); err != nil {
		return 0, err
	}
	if uint64(len(b.Missing)) > math.MaxUint32 || uint64(len(b.Items)) > math.MaxUint32 {
		return 0, badf("too many items or missing articles for the binary layout")
	}
	size := int64(binHead + 4 + 8*len(b.Missing) + 4)
	for i, it := range b.Items {
		switch {
		case it.Key == "":
			return 0, badf("items[%d] has an empty key", i)
		case !utf8.ValidString(it.Key):
			return 0, badf("items[%d] has a key that is not UTF-8", i)
		case uint64(len(it.Key)) > math.MaxUint32 || uint64(len(it.Value)) > math.MaxUint32:
			return 0, badf("items[%d] is too large for the binary layout", i)
		}
		size += int64(8 + len(it.Key) + len(it.Value))
		if it.Value == nil {
			size += int64(len("null"))
		}
	}
	return size, nil
}

// appendBinaryHead appends b's head, its missing list and its item count.
func appendBinaryHead(dst []byte, b Batch) []byte {
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
	return binary.BigEndian.AppendUint32(dst, uint32(len(b.Items)))
}

// Size is the length of the encoding in bytes, all of it, read or not.
func (r *BatchBinaryReader) Size() int64 { return r.size }

// Read reads the next bytes of the encoding.
func (r *BatchBinaryReader) Read(p []byte) (int, error) {
	if len(r.rest) == 0 {
		if r.i == len(r.items) {
			return 0, io.EOF
		}
		r.buf = r.buf[:0]
		for ; r.i < len(r.items) && len(r.buf) < binaryChunk; r.i++ {
			r.buf = appendBinaryItem(r.buf, r.items[r.i])
		}
		r.rest = r.buf
	}
	n := copy(p, r.rest)
	r.rest = r.rest[n:]
	return n, nil
}

// appendBinaryItem appends it in the binary layout: its key and its value,
// null for a nil one, each after its length.
func appendBinaryItem(dst []byte, it Item) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(it.Key)))
	dst = append(dst, it.Key...)
	v := []byte(it.Value)
	if v == nil {
		v = []byte("null")
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(v)))
	return append(dst, v...)
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
	e := newEarly(bodySplit())
	body, err := readBody(r, size, n, e.seen)
	e.wait()
	switch {
	case int64(len(body)) > limit:
		return Batch{}, fmt.Errorf("%w: the body is over %d bytes", ErrTooLarge, limit)
	case err != nil:
		return Batch{}, fmt.Errorf("edgeframe: read batch: %w", err)
	}
	return decodeBinary(body, e)
}

// early checks a binary body's values while the body is still arriving
// (readBody's seen): as reads bring whole items, their values go in runs
// (earlyRun bytes or earlyItems items) to goroutines of their own, at most
// one fewer than sp's parts (one at least), while the reads go on; when
// all are busy, the reader checks the run itself. The check, the costliest
// part of decoding (30–32 ms of a 22 MB batch on one core, by
// BenchmarkValidValue), then overlaps the transfer instead of following it. It only reads ahead and
// decides nothing: it stops sending runs at the first value that is not
// valid, and decodeBinary, which frames the whole body again, says what is
// wrong in the order it always does (the framing first), not checking
// again what early did. Its arithmetic is in uint64: every length is a
// uint32, so no sum of a few of them overflows.
type early struct {
	sp      split
	off     uint64 // where the next item starts; 0 until the item count is in
	items   uint64 // the item count the body gives
	framed  int    // how many of the first items were framed
	pending []Item // the last of them, framed but not yet sent to be checked
	bytes   int    // the bytes of pending's values
	slots   chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	bad     int // the first item found not valid, or -1
}

// earlyRun is about how many bytes of values a run of early holds: some
// 0.3 ms of scanning, far more than a goroutine costs. earlyItems bounds
// its items, so that a body of tiny values does not make a long run.
const (
	earlyRun   = 256 << 10
	earlyItems = 4096
)

func newEarly(sp split) *early {
	return &early{sp: sp, bad: -1, slots: make(chan struct{}, max(1, sp.parts-1))}
}

// seen frames the items whose bytes came in since its last call, p being
// the body so far, and sends their values to be checked.
func (e *early) seen(p []byte) {
	if e.failed() {
		return
	}
	be, n := binary.BigEndian, uint64(len(p))
	if e.off == 0 {
		if n < binHead+4 {
			return
		}
		at := binHead + 4 + 8*uint64(be.Uint32(p[binHead:])) // after the missing list
		if n < at+4 {
			return
		}
		e.items, e.off = uint64(be.Uint32(p[at:])), at+4
	}
	for uint64(e.framed) < e.items && n >= e.off+4 {
		k := e.off + 4 + uint64(be.Uint32(p[e.off:])) // the value's length
		if n < k+4 {
			break
		}
		end := k + 4 + uint64(be.Uint32(p[k:]))
		if n < end {
			break
		}
		e.pending = append(e.pending, Item{Value: p[k+4 : end : end]})
		e.bytes += int(end - k - 4)
		e.framed++
		e.off = end
		if e.bytes >= earlyRun || len(e.pending) >= earlyItems {
			e.send()
		}
	}
}

// send has pending checked on a goroutine of its own, or here when none
// is free: the reads wait, while the kernel holds what comes meanwhile.
func (e *early) send() {
	items, from := e.pending, e.framed-len(e.pending)
	e.pending, e.bytes = nil, 0
	check := func() {
		if i := checkValues(items, 1); i >= 0 {
			e.mu.Lock()
			if e.bad < 0 || from+i < e.bad {
				e.bad = from + i
			}
			e.mu.Unlock()
		}
	}
	select {
	case e.slots <- struct{}{}:
		e.wg.Go(func() {
			defer func() { <-e.slots }()
			check()
		})
	default:
		check()
	}
}

func (e *early) failed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.bad >= 0
}

// wait waits for the checks sent; the first items up to checked() are
// then checked, those of pending not.
func (e *early) wait() { e.wg.Wait() }

// checked is how many of the first items have had their values checked
// (once wait returned).
func (e *early) checked() int { return e.framed - len(e.pending) }

// decodeBinary splits body into a batch and checks it: the head first,
// then the items' framing and keys, then their values, on the goroutines
// e's split says, but for those e checked as body arrived.
func decodeBinary(body []byte, e *early) (Batch, error) {
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
	}
	if len(p) > 0 {
		return Batch{}, badf("%d bytes follow the last item", len(p))
	}
	if i := e.firstBad(b.Items); i >= 0 {
		return Batch{}, badf("items[%d] (key %q) has a value that is not valid JSON", i, shortKey(b.Items[i].Key))
	}
	return b, nil
}

// firstBad returns the first of items whose value is not valid JSON, or
// -1, checking on the goroutines e's split says those values e did not
// check. The items are the ones e framed in the same bytes, so its count
// is at most theirs.
func (e *early) firstBad(items []Item) int {
	from := 0
	if e.checked() <= len(items) {
		if e.bad >= 0 {
			return e.bad
		}
		from = e.checked()
	}
	values := 0
	for _, it := range items[from:] {
		values += len(it.Value)
	}
	if i := checkValues(items[from:], e.sp.of(values)); i >= 0 {
		return from + i
	}
	return -1
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
