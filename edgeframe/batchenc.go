package edgeframe

import (
	"encoding/json"
	"runtime"
	"strconv"
	"sync"
)

// The fast path of MarshalBatch. It writes exactly the bytes json.Marshal
// writes for a batch (FuzzMarshalBatch checks it), in one pass over each
// value instead of encoding/json's byte-at-a-time scanner: a value is
// checked with the decoder's own fast scanner, which accepts only JSON that
// encoding/json accepts, then copied with the white space outside its
// strings left out and <, >, & and U+2028, U+2029 escaped, as json.Marshal
// does with a json.RawMessage. A value the scanner gives up on (invalid, or
// nested deeper than it follows) sends the whole batch to json.Marshal,
// which words the error.

// appendBatch appends b's body to dst, reporting false when json.Marshal
// must encode it. b's head and keys are checked already.
func appendBatch(dst []byte, b Batch) ([]byte, bool) {
	dst = append(dst, `{"from":`...)
	dst = strconv.AppendInt(dst, b.From, 10)
	dst = append(dst, `,"to":`...)
	dst = strconv.AppendInt(dst, b.To, 10)
	dst = append(dst, `,"headers":`...)
	dst = strconv.AppendInt(dst, b.Headers, 10)
	dst = append(dst, `,"items":[`...)
	dst, ok := appendItems(dst, b.Items)
	if !ok {
		return dst, false
	}
	dst = append(dst, ']')
	if len(b.Missing) > 0 {
		dst = append(dst, `,"missing":[`...)
		for i, n := range b.Missing {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendInt(dst, n, 10)
		}
		dst = append(dst, ']')
	}
	if b.Final {
		dst = append(dst, `,"final":true`...)
	}
	return append(dst, '}'), true
}

// parallelItems is the fewest items each goroutine of appendItems takes:
// a thousand collator items are some 2 MB and 5 ms of encoding, far more
// than a goroutine costs.
const parallelItems = 1000

// appendItems appends items, comma-separated, reporting false when
// json.Marshal must encode them. Many items (parallelItems or more a
// goroutine) are encoded in runs on up to GOMAXPROCS goroutines, each run
// into a buffer of its own, then copied after dst in order: the bytes are
// those of one run. The coordinator waits for the body meanwhile, and a
// 10,000-item batch took 55 ms on one core.
func appendItems(dst []byte, items []Item) ([]byte, bool) {
	runs := min(runtime.GOMAXPROCS(0), len(items)/parallelItems)
	if runs < 2 {
		return appendRun(dst, items)
	}
	per := (len(items) + runs - 1) / runs
	bufs := make([][]byte, runs)
	oks := make([]bool, runs)
	var wg sync.WaitGroup
	for k := 1; k < runs; k++ {
		run := items[k*per : min((k+1)*per, len(items))]
		wg.Go(func() { bufs[k], oks[k] = appendRun(make([]byte, 0, itemsSize(run)), run) })
	}
	dst, ok := appendRun(dst, items[:per])
	wg.Wait()
	for k := 1; k < runs; k++ {
		if !ok || !oks[k] {
			return dst, false
		}
		dst = append(append(dst, ','), bufs[k]...)
	}
	return dst, ok
}

// appendRun is appendItems on one goroutine.
func appendRun(dst []byte, items []Item) ([]byte, bool) {
	for i, it := range items {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"key":`...)
		dst = appendString(dst, it.Key)
		dst = append(dst, `,"value":`...)
		if it.Value == nil {
			dst = append(dst, "null}"...)
			continue
		}
		var ok bool
		if dst, ok = appendValue(dst, it.Value); !ok {
			return dst, false
		}
		dst = append(dst, '}')
	}
	return dst, true
}

// itemsSize is about the bytes items encode to, for a buffer that seldom
// grows: their keys and values and a sixteenth more for escapes.
func itemsSize(items []Item) int {
	size := 0
	for _, it := range items {
		size += 24 + len(it.Key) + len(it.Value)
	}
	return size + size/16
}

// appendString appends s as a JSON string, as json.Marshal writes it.
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			// Escapes, HTML escapes and UTF-8 checks: encoding/json's own.
			q, _ := json.Marshal(s) // a string always encodes
			return append(dst, q...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// appendValue appends the JSON value v compacted and HTML-escaped, as
// json.Marshal writes a json.RawMessage, reporting false when the fast
// scanner does not accept v.
func appendValue(dst, v []byte) ([]byte, bool) {
	s := fast{p: v}
	if !s.value(0) {
		return dst, false
	}
	if s.space(); s.i != len(v) {
		return dst, false
	}
	if !s.dirty { // compact, and nothing to escape: the common case
		return append(dst, v...), true
	}
	const hex = "0123456789abcdef"
	start, inString := 0, false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '<' || c == '>' || c == '&':
			dst = append(dst, v[start:i]...)
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			start = i + 1
		case c == 0xE2 && i+2 < len(v) && v[i+1] == 0x80 && v[i+2]&^1 == 0xA8: // U+2028, U+2029
			dst = append(dst, v[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[v[i+2]&0xF])
			i += 2
			start = i + 1
		case inString:
			switch c {
			case '\\':
				i++ // the escaped byte is ASCII and none of the above
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			dst = append(dst, v[start:i]...)
			start = i + 1
		}
	}
	return append(dst, v[start:]...), true
}
