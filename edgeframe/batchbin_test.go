package edgeframe_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/edgeframe"
)

// viaJSON is what the receiver of MarshalBatch's body decodes.
func viaJSON(t testing.TB, b edgeframe.Batch) (edgeframe.Batch, bool) {
	body, err := edgeframe.MarshalBatch(b)
	if err != nil {
		return edgeframe.Batch{}, false
	}
	got, err := edgeframe.DecodeBatch(bytes.NewReader(body), 0)
	if err != nil {
		return edgeframe.Batch{}, false
	}
	return got, true
}

// viaBinary is what the receiver of MarshalBatchBinary's body decodes.
func viaBinary(b edgeframe.Batch) (edgeframe.Batch, error) {
	body, err := edgeframe.MarshalBatchBinary(b)
	if err != nil {
		return edgeframe.Batch{}, err
	}
	return edgeframe.DecodeBatchBinary(bytes.NewReader(body), int64(len(body)), 0)
}

// same requires two decoded batches to be equal, an empty list and none
// alike.
func same(t testing.TB, want, got edgeframe.Batch) {
	t.Helper()
	for _, b := range []*edgeframe.Batch{&want, &got} {
		if len(b.Items) == 0 {
			b.Items = nil
		}
		if len(b.Missing) == 0 {
			b.Missing = nil
		}
		for i := range b.Items {
			b.Items[i].Value = append(json.RawMessage(nil), b.Items[i].Value...)
		}
	}
	require.Equal(t, want, got)
}

// asJSON is got with each value as MarshalBatch would have sent it:
// compacted and escaped as json.Marshal writes a json.RawMessage.
func asJSON(t testing.TB, got edgeframe.Batch) edgeframe.Batch {
	t.Helper()
	got.Items = append([]edgeframe.Item(nil), got.Items...)
	for i, it := range got.Items {
		v, err := json.Marshal(it.Value)
		require.NoError(t, err)
		got.Items[i].Value = v
	}
	return got
}

// A batch sent in the binary layout is stored as its JSON body would be:
// the same head and keys, and each value the same JSON, kept as sent.
func TestBatchBinaryAsJSON(t *testing.T) {
	b := edgeframe.Batch{From: 10, To: 20, Headers: 9, Missing: []int64{12, 15}, Final: true, Items: []edgeframe.Item{
		{Key: "a", Value: json.RawMessage(`{"n":1}`)},
		{Key: "none", Value: nil},
		{Key: "spaced", Value: json.RawMessage(" [1, 2,\n{\"x\" : \"y z\"}] ")},
		{Key: "html", Value: json.RawMessage(`"<a href='x'>&</a>"`)},
		{Key: "runes", Value: json.RawMessage("\"\u00e9\u2028\"")},
		{Key: "ключ", Value: json.RawMessage(`null`)},
		{Key: "deep", Value: json.RawMessage(strings.Repeat("[", 1200) + strings.Repeat("]", 1200))},
	}}
	want, ok := viaJSON(t, b)
	require.True(t, ok)
	got, err := viaBinary(b)
	require.NoError(t, err)
	same(t, want, asJSON(t, got))
	require.Equal(t, `null`, string(got.Items[1].Value))
	require.Equal(t, " [1, 2,\n{\"x\" : \"y z\"}] ", string(got.Items[2].Value), "kept as sent")
	require.Equal(t, `"\u003ca href='x'\u003e\u0026\u003c/a\u003e"`, string(want.Items[3].Value))
	require.Equal(t, `"<a href='x'>&</a>"`, string(got.Items[3].Value))

	empty := edgeframe.Batch{From: 1, To: 1}
	got, err = viaBinary(empty)
	require.NoError(t, err)
	same(t, empty, got)
}

// binBody builds a binary body by hand: the head, then rest.
func binBody(from, to, headers int64, flags byte, rest ...[]byte) []byte {
	p := binary.BigEndian.AppendUint64(nil, uint64(from))
	p = binary.BigEndian.AppendUint64(p, uint64(to))
	p = binary.BigEndian.AppendUint64(p, uint64(headers))
	p = append(p, flags)
	for _, r := range rest {
		p = append(p, r...)
	}
	return p
}

func u32(n uint32) []byte { return binary.BigEndian.AppendUint32(nil, n) }

// item is one item of a hand-built body.
func item(key, value string) []byte {
	p := append(u32(uint32(len(key))), key...)
	return append(append(p, u32(uint32(len(value)))...), value...)
}

// A malformed binary body is refused with a sentence naming what is wrong,
// before anything is allocated for a count or length it cannot hold.
func TestBatchBinaryRefuses(t *testing.T) {
	none := u32(0)
	for _, tc := range []struct {
		name, want string
		body       []byte
	}{
		{"empty", "at least 33 bytes", nil},
		{"short", "at least 33 bytes", binBody(1, 2, 0, 0)},
		{"flags", "flags must be 0 or 1, not 2", binBody(1, 2, 0, 2, none, none)},
		{"from after to", "from (3) is after to (2)", binBody(3, 2, 0, 0, none, none)},
		{"negative headers", "headers must not be negative", binBody(1, 2, -1, 0, none, none)},
		{"headers over the span", "headers (3) must be at most the 2 articles", binBody(1, 2, 3, 0, none, none)},
		{"missing count", "4294967295 missing articles do not fit", binBody(1, 2, 0, 0, u32(math32), none)},
		{"missing order", "missing[1] (1) must ascend", binBody(1, 2, 0, 0, u32(2), binary.BigEndian.AppendUint64(nil, 2), binary.BigEndian.AppendUint64(nil, 1), none)},
		{"missing outside", "missing[0] (9) must ascend within 1..2", binBody(1, 2, 0, 0, u32(1), binary.BigEndian.AppendUint64(nil, 9), none)},
		{"no item count", "ends before the count of items", binBody(1, 2, 0, 0, u32(1), binary.BigEndian.AppendUint64(nil, 1))},
		{"item count", "2 items do not fit", binBody(1, 2, 0, 0, none, u32(2), item("k", "1"))},
		{"key length", "its key of 4294967295 bytes does not fit", binBody(1, 2, 0, 0, none, u32(1), u32(math32), []byte("kkkkk1234"))},
		{"value length", "its value of 99 bytes does not fit", binBody(1, 2, 0, 0, none, u32(1), u32(1), []byte("k"), u32(99), []byte("1234"))},
		{"empty key", "items[0] has an empty key", binBody(1, 2, 0, 0, none, u32(1), item("", "1"), []byte{0})},
		{"key not UTF-8", "items[0] has a key that is not UTF-8", binBody(1, 2, 0, 0, none, u32(1), item("k\xff", "1"))},
		{"empty value", `items[0] (key "k") has a value that is not valid JSON`, binBody(1, 2, 0, 0, none, u32(1), item("k", ""), []byte{0})},
		{"items shorter than a key and a value", "1 items do not fit in the 9 bytes left", binBody(1, 2, 0, 0, none, u32(1), item("", "1"))},
		{"bad value", `items[1] (key "b") has a value that is not valid JSON`, binBody(1, 2, 0, 0, none, u32(2), item("a", "1"), item("b", "{1}"))},
		{"two values", `has a value that is not valid JSON`, binBody(1, 2, 0, 0, none, u32(1), item("k", "1 2"))},
		{"value not UTF-8", `has a value that is not valid JSON`, binBody(1, 2, 0, 0, none, u32(1), item("k", "\"\xff\""))},
		{"trailing bytes", "3 bytes follow the last item", binBody(1, 2, 0, 0, none, u32(1), item("k", "1"), []byte("abc"))},
		// The framing is checked before the values, even those that came
		// in, and were checked, before the bytes that break the framing.
		{"bad value, then trailing bytes", "3 bytes follow the last item", binBody(1, 2, 0, 0, none, u32(1), item("k", "{"), []byte("abc"))},
		{"bad value, then a key too long", "items[1]: its key of 99 bytes does not fit", binBody(1, 2, 0, 0, none, u32(2), item("a", "{"), u32(99), []byte("kkkkkkkkkk"))},
		{"bad value, then an empty key", "items[1] has an empty key", binBody(1, 2, 0, 0, none, u32(2), item("a", "{"), item("", "1"), []byte{0})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Whole, a byte a read, and in reads of 7 bytes, as a
			// request's body comes in: the same error.
			for _, r := range []io.Reader{bytes.NewReader(tc.body), iotest.OneByteReader(bytes.NewReader(tc.body)), &pieces{p: tc.body, n: 7}} {
				_, err := edgeframe.DecodeBatchBinary(r, int64(len(tc.body)), 0)
				require.ErrorIs(t, err, edgeframe.ErrBadBatch)
				require.ErrorContains(t, err, tc.want)
			}
		})
	}

	body := binBody(1, 2, 0, 0, none, u32(1), item("k", "1"))
	_, err := edgeframe.DecodeBatchBinary(bytes.NewReader(body), -1, int64(len(body)-1))
	require.ErrorIs(t, err, edgeframe.ErrTooLarge)
	_, err = edgeframe.DecodeBatchBinary(bytes.NewReader(body), -1, int64(len(body)))
	require.NoError(t, err)
	cut := errors.New("cut")
	_, err = edgeframe.DecodeBatchBinary(&failAfter{r: bytes.NewReader(body[:10]), err: cut}, -1, 0)
	require.ErrorIs(t, err, cut)
	require.NotErrorIs(t, err, edgeframe.ErrBadBatch)
}

const math32 = 1<<32 - 1

// pieces reads p n bytes a read.
type pieces struct {
	p []byte
	n int
}

func (r *pieces) Read(p []byte) (int, error) {
	if len(r.p) == 0 {
		return 0, io.EOF
	}
	m := copy(p[:min(len(p), r.n)], r.p)
	r.p = r.p[m:]
	return m, nil
}

// A body that comes in many reads, whose values are checked as they come,
// decodes as it does in one read, and a bad value is named by its index
// in the batch, whichever read brought it.
func TestDecodeBatchBinaryInPieces(t *testing.T) {
	b := edgeframe.Batch{From: 1, To: 100, Headers: 100, Missing: []int64{5}}
	for i := range 50 {
		b.Items = append(b.Items, edgeframe.Item{Key: fmt.Sprintf("k%d", i), Value: json.RawMessage(fmt.Sprintf(`{"i": %d, "s": "<"}`, i))})
	}
	body, err := edgeframe.MarshalBatchBinary(b)
	require.NoError(t, err)
	whole, err := edgeframe.DecodeBatchBinary(bytes.NewReader(body), int64(len(body)), 0)
	require.NoError(t, err)
	for _, n := range []int{1, 2, 13, 100, len(body) - 1} {
		got, err := edgeframe.DecodeBatchBinary(&pieces{p: body, n: n}, -1, 0)
		require.NoError(t, err, "reads of %d", n)
		require.Equal(t, whole, got, "reads of %d", n)
	}

	b.Items[30].Value = json.RawMessage(`{"i": 30`)
	b.Items[40].Value = json.RawMessage(`]`)
	body, err = edgeframe.MarshalBatchBinary(b)
	require.NoError(t, err)
	for _, n := range []int{1, 13, 100, len(body)} {
		_, err := edgeframe.DecodeBatchBinary(&pieces{p: body, n: n}, int64(len(body)), 0)
		require.ErrorIs(t, err, edgeframe.ErrBadBatch)
		require.ErrorContains(t, err, `items[30] (key "k30")`, "reads of %d", n)
	}
}

// A body of many items has their values checked in runs on goroutines of
// their own as it arrives: the batch is the one a single read gives, and
// of bad values in several runs, the first is named, whichever run ends
// first.
func TestDecodeBatchBinaryRuns(t *testing.T) {
	t.Parallel()
	b := edgeframe.Batch{From: 1, To: 100, Headers: 100}
	for i := range 30000 {
		b.Items = append(b.Items, edgeframe.Item{Key: fmt.Sprintf("k%d", i), Value: json.RawMessage(fmt.Sprintf(`[%d]`, i))})
	}
	body, err := edgeframe.MarshalBatchBinary(b)
	require.NoError(t, err)
	whole, err := edgeframe.DecodeBatchBinary(bytes.NewReader(body), int64(len(body)), 0)
	require.NoError(t, err)
	got, err := edgeframe.DecodeBatchBinary(&pieces{p: body, n: 4096}, int64(len(body)), 0)
	require.NoError(t, err)
	require.Equal(t, whole, got)

	for _, bad := range [][]int{{9000, 25000}, {25000}, {29999}, {0, 29999}} {
		for _, i := range bad {
			b.Items[i].Value = json.RawMessage(`[`)
		}
		body, err := edgeframe.MarshalBatchBinary(b)
		require.NoError(t, err)
		for _, n := range []int{4096, 100000, len(body)} {
			_, err = edgeframe.DecodeBatchBinary(&pieces{p: body, n: n}, int64(len(body)), 0)
			require.ErrorContains(t, err, fmt.Sprintf(`items[%d] (key "k%d")`, bad[0], bad[0]), "bad %v, reads of %d", bad, n)
		}
		for _, i := range bad {
			b.Items[i].Value = json.RawMessage(`[1]`)
		}
	}
}

// A body cut while its values are being checked in runs fails with the
// read's error, whether values before the cut were bad or not.
func TestDecodeBatchBinaryCutWhileChecking(t *testing.T) {
	t.Parallel()
	b := edgeframe.Batch{From: 1, To: 100, Headers: 100}
	for i := range 30000 {
		b.Items = append(b.Items, edgeframe.Item{Key: fmt.Sprintf("k%d", i), Value: json.RawMessage(fmt.Sprintf(`{"v":"%0100d"}`, i))})
	}
	cut := errors.New("cut")
	for _, bad := range []int{-1, 10} {
		if bad >= 0 {
			b.Items[bad].Value = json.RawMessage(`{`)
		}
		body, err := edgeframe.MarshalBatchBinary(b)
		require.NoError(t, err)
		for _, at := range []int{1 << 20, 2 << 20, len(body) - 1} {
			for _, n := range []int{64 << 10, at} {
				r := &failAfter{r: bytes.NewReader(body[:at]), err: cut, n: n}
				_, err := edgeframe.DecodeBatchBinary(r, int64(len(body)), 0)
				require.ErrorIs(t, err, cut, "bad %d, cut at %d, reads of %d", bad, at, n)
			}
		}
	}
}

// A body cut while a run of its values is checked on a goroutine of its
// own returns once the run is done, not before: the run reads the body.
// No goroutine may then be in checkValues (a run that has called Done may
// still be exiting, so goroutines are not counted). Not parallel, so that
// no other test is checking values meanwhile.
func TestDecodeBatchBinaryCutWaits(t *testing.T) {
	b := edgeframe.Batch{From: 1, To: 1, Items: []edgeframe.Item{
		{Key: "big", Value: json.RawMessage(`"` + strings.Repeat("x", 8<<20) + `"`)}, // one run, some 10 ms to check
		{Key: "next", Value: json.RawMessage(`1`)},
	}}
	body, err := edgeframe.MarshalBatchBinary(b)
	require.NoError(t, err)
	at := len(body) - (4 + len("next") + 4 + len("1")) + 1 // into the second item, the first whole
	cut := errors.New("cut")
	_, err = edgeframe.DecodeBatchBinary(&failAfter{r: bytes.NewReader(body[:at]), err: cut}, int64(len(body)), 0)
	require.ErrorIs(t, err, cut)
	stacks := make([]byte, 1<<20)
	stacks = stacks[:runtime.Stack(stacks, true)]
	require.NotContains(t, string(stacks), edgeframe.CheckValuesFunc+"(", "a run still checking")
}

// failAfter reads r, at most n bytes a read when n > 0, then fails with
// err.
type failAfter struct {
	r   *bytes.Reader
	err error
	n   int
}

func (f *failAfter) Read(p []byte) (int, error) {
	if f.r.Len() == 0 {
		return 0, f.err
	}
	if f.n > 0 {
		p = p[:min(len(p), f.n)]
	}
	return f.r.Read(p)
}

// MarshalBatchBinary refuses what MarshalBatch refuses of the head and the
// keys, and a key that is not UTF-8 (which MarshalBatch would replace).
func TestMarshalBatchBinaryRefuses(t *testing.T) {
	for _, b := range []edgeframe.Batch{
		{From: 2, To: 1},
		{From: 1, To: 2, Headers: -1},
		{From: 1, To: 2, Items: []edgeframe.Item{{Key: "", Value: json.RawMessage(`1`)}}},
		{From: 1, To: 2, Items: []edgeframe.Item{{Key: "\xff", Value: json.RawMessage(`1`)}}},
	} {
		_, err := edgeframe.MarshalBatchBinary(b)
		require.ErrorIs(t, err, edgeframe.ErrBadBatch, "%+v", b)
	}
}

// FuzzDecodeBatchBinary: no body makes the decoder panic or allocate past
// its bytes, and a body it takes holds a batch that ValidateBatch passes,
// which encodes and decodes to itself.
func FuzzDecodeBatchBinary(f *testing.F) {
	for _, b := range []edgeframe.Batch{
		{From: 1, To: 1},
		{From: 5, To: 9, Headers: 3, Missing: []int64{6, 8}, Final: true, Items: []edgeframe.Item{{Key: "k", Value: json.RawMessage(`{"a": [1, "<"]}`)}}},
	} {
		body, err := edgeframe.MarshalBatchBinary(b)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(body)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		b, err := edgeframe.DecodeBatchBinary(bytes.NewReader(body), int64(len(body)), 1<<20)
		// Read a byte at a time, its values checked as they come, the
		// body decodes the same.
		bytewise, berr := edgeframe.DecodeBatchBinary(iotest.OneByteReader(bytes.NewReader(body)), -1, 1<<20)
		if err != nil {
			require.EqualError(t, berr, err.Error())
		} else {
			require.NoError(t, berr)
			require.Equal(t, b, bytewise)
		}
		if err != nil {
			if !errors.Is(err, edgeframe.ErrBadBatch) && !errors.Is(err, edgeframe.ErrTooLarge) {
				t.Fatalf("an error of neither kind: %v", err)
			}
			return
		}
		require.NoError(t, edgeframe.ValidateBatch(b))
		again, err := viaBinary(b)
		require.NoError(t, err)
		same(t, b, again)
	})
}

// FuzzBatchBinarySameAsJSON: any batch a JSON body holds is stored the
// same whether the SDK sends it as JSON (MarshalBatch) or in the binary
// layout, each value the same JSON: the bytes MarshalBatch sends once the
// binary layout's are encoded as it encodes them.
func FuzzBatchBinarySameAsJSON(f *testing.F) {
	for _, s := range []string{
		`{"from":1,"to":2,"headers":2,"items":[]}`,
		`{"from":1,"to":9,"headers":3,"items":[{"key":"a","value":{"x": [1, 2.5e3, "<&>"]}},{"key":"b","value":null}],"missing":[4],"final":true}`,
		`{"from":1,"to":2,"headers":0,"items":[{"key":"é\u2028","value":"\u2029 x"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		b, err := edgeframe.DecodeBatch(bytes.NewReader(body), 1<<20)
		if err != nil {
			return
		}
		want, ok := viaJSON(t, b)
		got, err := viaBinary(b)
		if !ok {
			// MarshalBatch refused or changed what DecodeBatch gave it: a
			// key that is not UTF-8 is the only way, and the binary
			// layout refuses it.
			require.Error(t, err)
			return
		}
		if err != nil {
			require.ErrorContains(t, err, "not UTF-8")
			return
		}
		same(t, want, asJSON(t, got))
	})
}

// BatchBinaryReader reads MarshalBatchBinary's bytes, whatever the sizes
// of the reads and of the items (one larger than the reader's buffer, a
// nil value, none at all), and its Size is their length.
func TestBatchBinaryReader(t *testing.T) {
	for _, b := range []edgeframe.Batch{
		{From: 1, To: 2},
		{From: 1, To: 9, Headers: 3, Missing: []int64{2, 4}, Final: true, Items: []edgeframe.Item{
			{Key: "a", Value: json.RawMessage(`{"x": 1}`)},
			{Key: "nil"},
			{Key: "short", Value: json.RawMessage(`1`)},
			{Key: "empty", Value: json.RawMessage{}},
			{Key: "big", Value: json.RawMessage(`"` + strings.Repeat("y", 200<<10) + `"`)},
			{Key: "é", Value: json.RawMessage(`[1, 2]`)},
		}},
		binaryBatch(3000),
	} {
		want, err := edgeframe.MarshalBatchBinary(b)
		require.NoError(t, err)
		r, err := edgeframe.NewBatchBinaryReader(b)
		require.NoError(t, err)
		require.Equal(t, int64(len(want)), r.Size())
		require.NoError(t, iotest.TestReader(r, want))
	}
	_, err := edgeframe.NewBatchBinaryReader(edgeframe.Batch{From: 1, To: 2, Items: []edgeframe.Item{{Key: "\xff"}}})
	require.ErrorIs(t, err, edgeframe.ErrBadBatch)
}
