package edgeframe_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/edgeframe"
)

func decode(t *testing.T, body string) (edgeframe.Batch, error) {
	t.Helper()
	return edgeframe.DecodeBatch(strings.NewReader(body), 1<<20)
}

func TestDecodeBatchAPIExample(t *testing.T) {
	t.Parallel()
	b, err := decode(t, `{"from": 1000, "to": 1999, "headers": 998,
	 "items": [{"key": "binary-hash", "value": {"subject": "x", "parts": [1, 2]}},
	           {"key": "k2", "value": "text"}, {"value": 42, "key": "k3"},
	           {"key": "k4", "value": null}, {"key": "k5", "value": [true, false]}]}`)
	require.NoError(t, err)
	require.Equal(t, int64(1000), b.From)
	require.Equal(t, int64(1999), b.To)
	require.Equal(t, int64(998), b.Headers)
	require.Equal(t, []edgeframe.Item{
		{Key: "binary-hash", Value: json.RawMessage(`{"subject": "x", "parts": [1, 2]}`)},
		{Key: "k2", Value: json.RawMessage(`"text"`)},
		{Key: "k3", Value: json.RawMessage(`42`)},
		{Key: "k4", Value: json.RawMessage(`null`)},
		{Key: "k5", Value: json.RawMessage(`[true, false]`)},
	}, b.Items)
	require.NoError(t, edgeframe.ValidateBatch(b))
}

func TestDecodeBatchEdges(t *testing.T) {
	t.Parallel()
	b, err := decode(t, " \n{\"items\":[],\"headers\":0,\"to\":9223372036854775807,\"from\":-9223372036854775808}\r\n\t ")
	require.NoError(t, err)
	require.Equal(t, edgeframe.Batch{From: math.MinInt64, To: math.MaxInt64, Items: []edgeframe.Item{}}, b)
	require.NotNil(t, b.Items, "an empty items array decodes as an empty, non-nil slice")

	b, err = decode(t, `{"from":5,"to":5,"headers":1,"items":[{"key":"日本","value":"é\u00e9"}]}`)
	require.NoError(t, err)
	require.Equal(t, "日本", b.Items[0].Key)
	require.Equal(t, `"é\u00e9"`, string(b.Items[0].Value))
}

func TestDecodeBatchRoundTrip(t *testing.T) {
	t.Parallel()
	in := edgeframe.Batch{From: 1 << 33, To: 1<<33 + 1999, Headers: 1234}
	for i := range 500 {
		in.Items = append(in.Items, edgeframe.Item{
			Key:   strings.Repeat("k", i%7+1) + string(rune('a'+i%26)),
			Value: json.RawMessage(`{"n":` + strings.Repeat("1", i%18+1) + `,"s":"a\"b\\c"}`),
		})
	}
	body, err := json.Marshal(in)
	require.NoError(t, err)
	out, err := edgeframe.DecodeBatch(bytes.NewReader(body), int64(len(body)))
	require.NoError(t, err, "a body of exactly max bytes is accepted")
	require.Equal(t, in, out)
}

func TestBatchResultJSON(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(edgeframe.BatchResult{Next: 2000})
	require.NoError(t, err)
	require.JSONEq(t, `{"next": 2000, "duplicate": false}`, string(b))
	b, err = json.Marshal(edgeframe.Batch{From: 1, To: 2, Items: []edgeframe.Item{{Key: "k"}}})
	require.NoError(t, err)
	require.Equal(t, `{"from":1,"to":2,"headers":0,"items":[{"key":"k","value":null}]}`, string(b))
}

func TestDecodeBatchMalformed(t *testing.T) {
	t.Parallel()
	const items = `"items":[]`
	tests := []struct {
		name, body, msg string
	}{
		{"empty body", "", "the body is empty"},
		{"white space only", "  \n", "the body is empty"},
		{"not an object", `[1]`, "the body must be a JSON object, not an array"},
		{"a string", `"x"`, "the body must be a JSON object, not a string"},
		{"null", `null`, "the body must be a JSON object, not null"},
		{"not JSON", `from=1`, "the body is not valid JSON"},
		{"cut short", `{"from":1,"to":2`, "the body ends before its JSON object is complete"},
		{"cut in items", `{"from":1,"to":2,"headers":0,"items":[{"key":"a","value":`, "the body ends inside items[0].value"},
		{"missing from", `{"to":2,"headers":0,` + items + `}`, "from is missing"},
		{"missing to", `{"from":1,"headers":0,` + items + `}`, "to is missing"},
		{"missing headers", `{"from":1,"to":2,` + items + `}`, "headers is missing"},
		{"missing items", `{"from":1,"to":2,"headers":0}`, "items is missing"},
		{"null from", `{"from":null,"to":2,"headers":0,` + items + `}`, "from must be an integer, not null"},
		{"string from", `{"from":"1","to":2,"headers":0,` + items + `}`, "from must be an integer, not a string"},
		{"fraction to", `{"from":1,"to":2.5,"headers":0,` + items + `}`, "to must be an integer, not number 2.5"},
		{"exponent to", `{"from":1,"to":2e3,"headers":0,` + items + `}`, "to must be an integer, not number 2e3"},
		{"overflowing to", `{"from":1,"to":9223372036854775808,"headers":0,` + items + `}`, "to must be an integer, not number 9223372036854775808"},
		{"bool headers", `{"from":1,"to":2,"headers":true,` + items + `}`, "headers must be an integer, not a boolean"},
		{"object headers", `{"from":1,"to":2,"headers":{},` + items + `}`, "headers must be an integer, not an object"},
		{"null items", `{"from":1,"to":2,"headers":0,"items":null}`, "items must be a JSON array, not null"},
		{"object items", `{"from":1,"to":2,"headers":0,"items":{}}`, "items must be a JSON array, not an object"},
		{"from after to", `{"from":3,"to":2,"headers":0,` + items + `}`, "from (3) is after to (2)"},
		{"negative headers", `{"from":1,"to":2,"headers":-1,` + items + `}`, "headers must not be negative, not -1"},
		{"headers past the span", `{"from":1,"to":2,"headers":3,` + items + `}`, "headers (3) must be at most the 2 articles from 1 to 2"},
		{"headers near MaxInt64", `{"from":1,"to":1000,"headers":6900000000000000000,` + items + `}`, "headers (6900000000000000000) must be at most the 1000 articles"},
		{"unknown field", `{"from":1,"to":2,"headers":0,"extra":1,` + items + `}`, `unknown field "extra"`},
		{"field in another case", `{"From":1,"to":2,"headers":0,` + items + `}`, `unknown field "From"`},
		{"repeated field", `{"from":1,"to":2,"headers":0,"from":1,` + items + `}`, "from appears twice"},
		{"repeated items", `{"from":1,"to":2,"headers":0,` + items + `,` + items + `}`, "items appears twice"},
		{"item not an object", `{"from":1,"to":2,"headers":0,"items":[1]}`, "items[0] must be a JSON object, not a number"},
		{"item without key", `{"from":1,"to":2,"headers":0,"items":[{"key":"a","value":1},{"value":1}]}`, "items[1] has no key"},
		{"item with empty key", `{"from":1,"to":2,"headers":0,"items":[{"key":"","value":1}]}`, "items[0] has an empty key"},
		{"item with null key", `{"from":1,"to":2,"headers":0,"items":[{"key":null,"value":1}]}`, "items[0].key must be a string, not null"},
		{"item with number key", `{"from":1,"to":2,"headers":0,"items":[{"key":7,"value":1}]}`, "items[0].key must be a string, not a number"},
		{"item without value", `{"from":1,"to":2,"headers":0,"items":[{"key":"a"}]}`, `items[0] (key "a") has no value`},
		{"item with unknown field", `{"from":1,"to":2,"headers":0,"items":[{"key":"a","value":1,"Value":2}]}`, `items[0] has an unknown field "Value"`},
		{"item with repeated key", `{"from":1,"to":2,"headers":0,"items":[{"key":"a","key":"b","value":1}]}`, "items[0].key appears twice"},
		{"item with repeated value", `{"from":1,"to":2,"headers":0,"items":[{"key":"a","value":1,"value":2}]}`, "items[0].value appears twice"},
		{"item with bad value", `{"from":1,"to":2,"headers":0,"items":[{"key":"a","value":tru}]}`, "not valid JSON"},
		{"trailing object", `{"from":1,"to":2,"headers":0,` + items + `} {}`, "the body has an object after its JSON object"},
		{"trailing number", `{"from":1,"to":2,"headers":0,` + items + `}7`, "the body has a number after its JSON object"},
		{"trailing garbage", `{"from":1,"to":2,"headers":0,` + items + `}x`, "the body is not valid JSON"},
		{"trailing comma", `{"from":1,"to":2,"headers":0,` + items + `,}`, "the body is not valid JSON"},
		{"missing comma", `{"from":1 "to":2,"headers":0,` + items + `}`, "the body is not valid JSON"},
		{"invalid UTF-8 in key", `{"from":1,"to":2,"headers":0,"items":[{"key":"a` + "\xff" + `","value":1}]}`, "not valid UTF-8"},
		{"invalid UTF-8 in value", `{"from":1,"to":2,"headers":0,"items":[{"key":"a","value":"` + "\xc3(" + `"}]}`, "not valid UTF-8"},
		{"body ends in a rune", `{"from":1,"to":2,"headers":0,` + items + "}\xe2\x82", "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := decode(t, tt.body)
			require.ErrorIs(t, err, edgeframe.ErrBadBatch)
			require.NotErrorIs(t, err, edgeframe.ErrTooLarge)
			require.ErrorContains(t, err, tt.msg)
			require.True(t, strings.HasPrefix(err.Error(), "bad batch: "), err.Error())
			require.Zero(t, b)
		})
	}
}

// spaces is an endless reader of spaces, counting what it hands out.
type spaces struct{ n int64 }

func (s *spaces) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	s.n += int64(len(p))
	return len(p), nil
}

func TestDecodeBatchTooLarge(t *testing.T) {
	t.Parallel()
	valid := `{"from":1,"to":2,"headers":0,"items":[{"key":"k","value":"v"}]}`
	n := int64(len(valid))

	_, err := edgeframe.DecodeBatch(strings.NewReader(valid), n)
	require.NoError(t, err)

	for name, body := range map[string]string{
		"trailing space":   valid + " ",
		"cut by the limit": valid[:len(valid)-1] + "  ",
		"malformed early":  `{"from":"x"` + strings.Repeat(" ", int(n)),
		"bad UTF-8 early":  "\xff" + strings.Repeat(" ", int(n)),
	} {
		_, err = edgeframe.DecodeBatch(strings.NewReader(body), n)
		require.ErrorIs(t, err, edgeframe.ErrTooLarge, name)
		require.NotErrorIs(t, err, edgeframe.ErrBadBatch, name)
		require.ErrorContains(t, err, fmt.Sprintf("over %d bytes", n), name)
	}

	// The default limit is 64 MiB, and an endless body is read no further
	// than one byte past it.
	src := &spaces{}
	_, err = edgeframe.DecodeBatch(io.MultiReader(strings.NewReader(`x`), src), 0)
	require.ErrorIs(t, err, edgeframe.ErrTooLarge)
	require.ErrorContains(t, err, "over 67108864 bytes")
	require.Less(t, src.n, int64(edgeframe.DefaultMaxBatch+64<<10))
}

func TestDecodeBatchReadError(t *testing.T) {
	t.Parallel()
	_, err := edgeframe.DecodeBatch(io.MultiReader(strings.NewReader(`{"from":1,`), &failingReader{}), 0)
	require.ErrorIs(t, err, errDisk)
	require.NotErrorIs(t, err, edgeframe.ErrBadBatch)
	require.NotErrorIs(t, err, edgeframe.ErrTooLarge)
}

func TestBatchValidate(t *testing.T) {
	t.Parallel()
	ok := edgeframe.Batch{From: 1, To: 1, Items: []edgeframe.Item{{Key: "a", Value: json.RawMessage(`1`)}, {Key: "b"}}}
	require.NoError(t, edgeframe.ValidateBatch(ok))
	require.NoError(t, edgeframe.ValidateBatch(edgeframe.Batch{}), "no items is valid")

	tests := map[string]struct {
		b   edgeframe.Batch
		msg string
	}{
		"from after to":    {edgeframe.Batch{From: 2, To: 1}, "from (2) is after to (1)"},
		"negative headers": {edgeframe.Batch{Headers: -5}, "headers must not be negative"},
		"empty key":        {edgeframe.Batch{Items: []edgeframe.Item{{Key: "a"}, {}}}, "items[1] has an empty key"},
		"bad value":        {edgeframe.Batch{Items: []edgeframe.Item{{Key: "a", Value: json.RawMessage(`{`)}}}, `items[0] (key "a") has a value that is not valid JSON`},
	}
	for name, tt := range tests {
		err := edgeframe.ValidateBatch(tt.b)
		require.ErrorIs(t, err, edgeframe.ErrBadBatch, name)
		require.ErrorContains(t, err, tt.msg, name)
	}
}

func TestSentinelsAreDistinct(t *testing.T) {
	t.Parallel()
	all := []error{
		edgeframe.ErrFrameTooLarge, edgeframe.ErrTruncated, edgeframe.ErrCut, edgeframe.ErrUnknownType,
		edgeframe.ErrMalformed, edgeframe.ErrAborted, edgeframe.ErrBadBatch, edgeframe.ErrTooLarge,
		edgeindex.ErrInvalid,
	}
	for i, a := range all {
		for j, b := range all {
			require.Equal(t, i == j, errors.Is(a, b), "%v vs %v", a, b)
		}
	}
}

func TestMarshalBatch(t *testing.T) {
	t.Parallel()
	b := edgeframe.Batch{From: 1, To: 9, Headers: 9, Items: []edgeframe.Item{{Key: "k", Value: json.RawMessage(`{"a": [1, 2]}`)}}}
	body, err := edgeframe.MarshalBatch(b)
	require.NoError(t, err)
	back, err := edgeframe.DecodeBatch(bytes.NewReader(body), 0)
	require.NoError(t, err)
	require.Equal(t, b.From, back.From)
	require.JSONEq(t, `{"a": [1, 2]}`, string(back.Items[0].Value))
	body, err = edgeframe.MarshalBatch(edgeframe.Batch{From: 1, To: 1})
	require.NoError(t, err)
	require.JSONEq(t, `{"from": 1, "to": 1, "headers": 0, "items": []}`, string(body))
	for _, bad := range []edgeframe.Batch{
		{From: 2, To: 1},
		{From: 1, To: 2, Headers: -1},
		{From: 1, To: 2, Items: []edgeframe.Item{{Key: ""}}},
		{From: 1, To: 2, Items: []edgeframe.Item{{Key: "k", Value: json.RawMessage(`{bad`)}}},
	} {
		_, err := edgeframe.MarshalBatch(bad)
		require.ErrorIs(t, err, edgeframe.ErrBadBatch, "%+v", bad)
	}
}

// A batch large enough to be encoded on several goroutines comes out as
// json.Marshal writes it, item for item in order; a bad value in any run
// still fails the whole batch.
func TestMarshalBatchManyItems(t *testing.T) {
	t.Parallel()
	items := make([]edgeframe.Item, 5003) // runs of unequal length on any GOMAXPROCS
	for i := range items {
		items[i] = edgeframe.Item{Key: fmt.Sprintf("k<%d>", i),
			Value: json.RawMessage(fmt.Sprintf(`{"n": %d, "s": "<a & b>\u2028", "l": [1, 2]}`, i))}
		if i%7 == 0 {
			items[i].Value = nil
		}
	}
	b := edgeframe.Batch{From: 1, To: 9000, Headers: 9000, Items: items}
	body, err := edgeframe.MarshalBatch(b)
	require.NoError(t, err)
	want, err := json.Marshal(b)
	require.NoError(t, err)
	require.Equal(t, string(want), string(body))
	for _, at := range []int{0, 2500, 5002} {
		bad := slices.Clone(items)
		bad[at].Value = json.RawMessage(`{"n": }`)
		_, err := edgeframe.MarshalBatch(edgeframe.Batch{From: 1, To: 9000, Items: bad})
		require.ErrorIs(t, err, edgeframe.ErrBadBatch, "a bad value at %d", at)
	}
}

func TestDecodeBatchSize(t *testing.T) {
	t.Parallel()
	body := []byte(`{"from": 1, "to": 9, "headers": 9, "items": [{"key": "k", "value": {"a": 1}}]}`)
	want, err := edgeframe.DecodeBatch(bytes.NewReader(body), 0)
	require.NoError(t, err)
	n := int64(len(body))
	for _, size := range []int64{-1, 0, 1, n - 1, n, n + 1, 1 << 20} {
		// io.MultiReader hides the reader's length: only the hint says it.
		got, err := edgeframe.DecodeBatchSize(io.MultiReader(bytes.NewReader(body)), size, 0)
		require.NoError(t, err, "size %d", size)
		require.Equal(t, want, got, "size %d", size)
		_, err = edgeframe.DecodeBatchSize(io.MultiReader(bytes.NewReader(body)), size, n-1)
		require.ErrorIs(t, err, edgeframe.ErrTooLarge, "size %d", size)
	}
}
