package edgeframe

import (
	"encoding/json"
	"io"
	"math"
	"strconv"
	"strings"
)

// DefaultMaxBatches is the most entries DecodeBatches takes in one body
// when it is given a maximum of zero or below.
const DefaultMaxBatches = 256

// RangeBatch is one entry of POST /v1/batches: a batch (the body of POST
// /v1/ranges/{id}/batch) for range Range, held under the grant Token.
type RangeBatch struct {
	Range int64 `json:"range"`
	Token int64 `json:"token"`
	Batch Batch `json:"batch"`
}

// DecodeBatches reads the body of POST /v1/batches from r, as strictly as
// DecodeBatchSize reads one batch (size is the body's length when known,
// else negative; at most limit bytes, 0 meaning DefaultMaxBatch):
//
//   - the body is one JSON object whose one field is "batches", an array
//     of 1 to max entries (max <= 0 means DefaultMaxBatches);
//   - each entry is an object with exactly "range" and "token", positive
//     integers, and "batch", a batch object as DecodeBatch takes it;
//   - no range appears twice.
//
// Its errors are DecodeBatch's: ErrBadBatch with a sentence naming the
// entry and the field, ErrTooLarge over the limit, a read error wrapped.
func DecodeBatches(r io.Reader, size, limit int64, max int) ([]RangeBatch, error) {
	if max <= 0 {
		max = DefaultMaxBatches
	}
	return decodeBody(r, size, limit,
		func(body []byte) ([]RangeBatch, bool) { return decodeBatchesFast(body, max) },
		func(r io.Reader, limit int64) ([]RangeBatch, error) { return decodeBatchesSlow(r, limit, max) })
}

// decodeBatchesFast is the fast path of DecodeBatches (see decodeFast): it
// only ever accepts, and gives what the slow path gives.
func decodeBatchesFast(body []byte, max int) ([]RangeBatch, bool) {
	if !validUTF8(body, bodySplit()) {
		return nil, false
	}
	// The entries' items are read on one goroutine: splitItems cuts the
	// rest of the body, not the array, so in a body of many entries its
	// cuts fall in later entries and every entry's try would miss.
	s := fast{p: body}
	if !s.next('{') {
		return nil, false
	}
	if n, ok := s.name(); !ok || string(n) != "batches" {
		return nil, false
	}
	bs, ok := array(&s, s.rangeBatch)
	if !ok || !s.next('}') {
		return nil, false
	}
	s.space()
	if s.i != len(s.p) || checkBatches(bs, max) != nil {
		return nil, false
	}
	return bs, true
}

func (s *fast) rangeBatch() (RangeBatch, bool) {
	var rb RangeBatch
	if !s.next('{') {
		return rb, false
	}
	seen := 0
	for {
		n, ok := s.name()
		if !ok {
			return rb, false
		}
		var bit int
		switch string(n) {
		case "range":
			bit = 1
			rb.Range, ok = s.int()
		case "token":
			bit = 2
			rb.Token, ok = s.int()
		case "batch":
			bit = 4
			rb.Batch, ok = s.batch()
			ok = ok && validateHead(rb.Batch) == nil
		default:
			return rb, false
		}
		if !ok || seen&bit != 0 {
			return rb, false
		}
		seen |= bit
		if s.next('}') {
			return rb, seen == 7
		}
		if !s.next(',') {
			return rb, false
		}
	}
}

// decodeBatchesSlow is DecodeBatches token by token, wording every error.
func decodeBatchesSlow(r io.Reader, limit int64, max int) ([]RangeBatch, error) {
	var bs []RangeBatch
	err := decodeStrict(r, limit, "batches", func(dec *json.Decoder) (err error) {
		bs, err = decodeBatchesBody(dec)
		return err
	})
	if err == nil {
		// The whole body was read: nothing more can be wrong with it.
		err = checkBatches(bs, max)
	}
	if err != nil {
		return nil, err
	}
	return bs, nil
}

func decodeBatchesBody(dec *json.Decoder) ([]RangeBatch, error) {
	tok, err := dec.Token()
	if err == io.EOF {
		return nil, badf("the body is empty; it must be a JSON object")
	}
	if err := checkDelim(dec, tok, err, '{', body); err != nil {
		return nil, err
	}
	var bs []RangeBatch
	seen := false
	for dec.More() {
		name, err := objectKey(dec, body)
		if err != nil {
			return nil, err
		}
		if name != "batches" {
			return nil, badf("unknown field %q", name)
		}
		if seen {
			return nil, badf("batches appears twice")
		}
		seen = true
		if bs, err = decodeEntries(dec); err != nil {
			return nil, err
		}
	}
	if err := expectDelim(dec, '}', body); err != nil {
		return nil, err
	}
	if !seen {
		return nil, badf("batches is missing")
	}
	return bs, nil
}

func decodeEntries(dec *json.Decoder) ([]RangeBatch, error) {
	list := field("batches")
	if err := expectDelim(dec, '[', list); err != nil {
		return nil, err
	}
	bs := []RangeBatch{}
	for i := 0; dec.More(); i++ {
		rb, err := decodeEntry(dec, i)
		if err != nil {
			return nil, err
		}
		bs = append(bs, rb)
	}
	return bs, expectDelim(dec, ']', list)
}

func decodeEntry(dec *json.Decoder, i int) (RangeBatch, error) {
	var rb RangeBatch
	at := "batches[" + strconv.Itoa(i) + "]"
	if err := expectDelim(dec, '{', field(at)); err != nil {
		return rb, err
	}
	seen := map[string]bool{}
	for dec.More() {
		name, err := objectKey(dec, field(at))
		if err != nil {
			return rb, err
		}
		if seen[name] {
			return rb, badf("%s.%s appears twice", at, name)
		}
		seen[name] = true
		switch name {
		case "range":
			err = decodeInt(dec, at+".range", &rb.Range)
		case "token":
			err = decodeInt(dec, at+".token", &rb.Token)
		case "batch":
			rb.Batch, err = decodeBatch(dec)
			if err != nil {
				err = badf("%s.batch: %s", at, strings.TrimPrefix(err.Error(), ErrBadBatch.Error()+": "))
			}
		default:
			err = badf("%s has an unknown field %q", at, name)
		}
		if err != nil {
			return rb, err
		}
	}
	if err := expectDelim(dec, '}', field(at)); err != nil {
		return rb, err
	}
	for _, name := range []string{"range", "token", "batch"} {
		if !seen[name] {
			return rb, badf("%s.%s is missing", at, name)
		}
	}
	return rb, nil
}

// checkBatches checks what the entries of a decoded body must hold
// together: 1 to max of them, positive ranges and tokens, no range twice.
func checkBatches(bs []RangeBatch, max int) error {
	switch {
	case len(bs) == 0:
		return badf("batches is empty; it needs at least one entry")
	case len(bs) > max:
		return badf("batches has %d entries; at most %d are taken in one call", len(bs), max)
	}
	seen := make(map[int64]bool, len(bs))
	for i, rb := range bs {
		switch {
		case rb.Range <= 0:
			return badf("batches[%d].range must be positive, not %d", i, rb.Range)
		case rb.Token <= 0:
			return badf("batches[%d].token must be positive, not %d", i, rb.Token)
		case seen[rb.Range]:
			return badf("batches[%d].range %d appears in an earlier entry; a call takes one batch a range", i, rb.Range)
		}
		seen[rb.Range] = true
	}
	return nil
}

// MarshalBatches encodes the body of POST /v1/batches, each batch checked
// and written as MarshalBatch writes it. Its error wraps ErrBadBatch.
func MarshalBatches(bs []RangeBatch) ([]byte, error) {
	if err := checkBatches(bs, math.MaxInt); err != nil {
		return nil, err
	}
	out := append(make([]byte, 0, 64*len(bs)), `{"batches":[`...)
	for i, rb := range bs {
		b, err := MarshalBatch(rb.Batch)
		if err != nil {
			return nil, badf("batches[%d].batch: %s", i, strings.TrimPrefix(err.Error(), ErrBadBatch.Error()+": "))
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"range":`...)
		out = strconv.AppendInt(out, rb.Range, 10)
		out = append(out, `,"token":`...)
		out = strconv.AppendInt(out, rb.Token, 10)
		out = append(out, `,"batch":`...)
		out = append(out, b...)
		out = append(out, '}')
	}
	return append(out, "]}"...), nil
}
