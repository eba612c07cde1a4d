package edgeframe

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDecodeBatches(t *testing.T) {
	body := `{"batches":[{"range":3,"token":7,"batch":{"from":1,"to":2,"headers":2,"items":[{"key":"a","value":{"x":1}}],"final":true}},` +
		`{"batch":{"from":5,"to":5,"headers":0,"items":[]},"token":1,"range":4}]}`
	bs, err := DecodeBatches(strings.NewReader(body), -1, 0, 0)
	require.NoError(t, err)
	require.Equal(t, []RangeBatch{
		{Range: 3, Token: 7, Batch: Batch{From: 1, To: 2, Headers: 2, Items: []Item{{Key: "a", Value: json.RawMessage(`{"x":1}`)}}, Final: true}},
		{Range: 4, Token: 1, Batch: Batch{From: 5, To: 5, Items: []Item{}}},
	}, bs)
	again, err := MarshalBatches(bs)
	require.NoError(t, err)
	bs2, err := DecodeBatches(bytes.NewReader(again), int64(len(again)), 0, 0)
	require.NoError(t, err)
	require.Equal(t, bs, bs2)
}

func TestDecodeBatchesRefuses(t *testing.T) {
	ok := `{"from":1,"to":1,"headers":0,"items":[]}`
	entry := func(rng, tok string) string { return `{"range":` + rng + `,"token":` + tok + `,"batch":` + ok + `}` }
	for _, c := range []struct{ body, says string }{
		{``, "the body is empty"},
		{`[]`, "must be a JSON object"},
		{`{}`, "batches is missing"},
		{`{"batches":[]}`, "batches is empty"},
		{`{"batches":[` + entry("1", "1") + `],"more":1}`, `unknown field "more"`},
		{`{"batches":[` + entry("1", "1") + `],"batches":[]}`, "batches appears twice"},
		{`{"batches":[` + entry("0", "1") + `]}`, "batches[0].range must be positive"},
		{`{"batches":[` + entry("1", "-2") + `]}`, "batches[0].token must be positive"},
		{`{"batches":[` + entry("1", "1") + `,` + entry("1", "2") + `]}`, "batches[1].range 1 appears in an earlier entry"},
		{`{"batches":[{"range":1,"token":1}]}`, "batches[0].batch is missing"},
		{`{"batches":[{"range":1,"range":1,"token":1,"batch":` + ok + `}]}`, "batches[0].range appears twice"},
		{`{"batches":[{"range":1,"token":1,"batch":` + ok + `,"x":1}]}`, `batches[0] has an unknown field "x"`},
		{`{"batches":[{"range":1.5,"token":1,"batch":` + ok + `}]}`, "batches[0].range must be an integer"},
		{`{"batches":[{"range":1,"token":1,"batch":{"from":2,"to":1,"headers":0,"items":[]}}]}`, "batches[0].batch: from (2) is after to (1)"},
		{`{"batches":[{"range":1,"token":1,"batch":{"from":1,"to":1,"headers":0,"items":[{"key":"","value":1}]}}]}`, "batches[0].batch: items[0] has an empty key"},
		{`{"batches":[` + entry("1", "1") + `]} 1`, "after its JSON object"},
		{`{"batches":[` + entry("1", "1") + `,` + entry("2", "1") + `,` + entry("3", "1") + `]}`, "at most 2"},
	} {
		_, err := DecodeBatches(strings.NewReader(c.body), -1, 0, 2)
		require.ErrorIs(t, err, ErrBadBatch, c.body)
		require.ErrorContains(t, err, c.says, c.body)
	}
	big := `{"batches":[` + entry("1", "1") + `]}`
	_, err := DecodeBatches(strings.NewReader(big), -1, int64(len(big)-1), 0)
	require.ErrorIs(t, err, ErrTooLarge)
	_, err = MarshalBatches(nil)
	require.ErrorIs(t, err, ErrBadBatch)
}

// FuzzDecodeBatches decodes arbitrary bytes as a POST /v1/batches body. The
// seed corpus is in testdata/fuzz/FuzzDecodeBatches. Invariants:
//   - DecodeBatches never panics and refuses only with ErrBadBatch or
//     ErrTooLarge, the latter exactly when the body is over the limit;
//   - what it accepts is valid JSON that encoding/json, with unknown fields
//     disallowed, decodes to the same entries, each batch one ValidateBatch
//     accepts, at most 4 of them, of distinct positive ranges and tokens;
//   - what the fast path accepts, the slow one accepts with the same result;
//   - an accepted body survives MarshalBatches and DecodeBatches again.
func FuzzDecodeBatches(f *testing.F) {
	const max = 4
	f.Fuzz(func(t *testing.T, data []byte) {
		if fb, ok := decodeBatchesFast(data, max); ok && len(data) <= fuzzMaxBatch {
			sb, err := decodeBatchesSlow(bytes.NewReader(data), fuzzMaxBatch, max)
			require.NoError(t, err, "the fast path accepted what the slow one refuses")
			require.Equal(t, sb, fb)
		}
		bs, err := DecodeBatches(bytes.NewReader(data), int64(len(data)), fuzzMaxBatch, max)
		if len(data) > fuzzMaxBatch {
			require.ErrorIs(t, err, ErrTooLarge)
			return
		}
		if err != nil {
			require.ErrorIs(t, err, ErrBadBatch)
			require.Nil(t, bs)
			return
		}
		require.True(t, json.Valid(data))
		require.NotEmpty(t, bs)
		require.LessOrEqual(t, len(bs), max)
		var std struct {
			Batches []struct {
				Range, Token *int64
				Batch        json.RawMessage
			}
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&std))
		require.Len(t, std.Batches, len(bs))
		ranges := map[int64]bool{}
		for i, e := range std.Batches {
			require.Equal(t, bs[i].Range, *e.Range)
			require.Equal(t, bs[i].Token, *e.Token)
			require.Positive(t, bs[i].Range)
			require.Positive(t, bs[i].Token)
			require.False(t, ranges[bs[i].Range])
			ranges[bs[i].Range] = true
			require.NoError(t, ValidateBatch(bs[i].Batch))
			one, err := DecodeBatch(bytes.NewReader(e.Batch), 0)
			require.NoError(t, err)
			require.Equal(t, one, bs[i].Batch)
		}
		again, err := MarshalBatches(bs)
		require.NoError(t, err)
		bs2, err := DecodeBatches(bytes.NewReader(again), -1, 0, max)
		require.NoError(t, err)
		require.Len(t, bs2, len(bs))
		for i := range bs {
			require.Equal(t, bs[i].Range, bs2[i].Range)
			require.Equal(t, bs[i].Token, bs2[i].Token)
			require.Equal(t, len(bs[i].Batch.Items), len(bs2[i].Batch.Items))
		}
	})
}
