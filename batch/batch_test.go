package batch_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/batch"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	const next, end = 100, 199
	cases := []struct {
		name     string
		b        batch.Batch
		want     batch.Outcome
		err, is2 error
	}{
		{"stored", batch.Batch{From: 100, To: 149}, batch.Accept, nil, nil},
		{"to the end", batch.Batch{From: 100, To: 199}, batch.Accept, nil, nil},
		{"duplicate", batch.Batch{From: 50, To: 99}, batch.Duplicate, nil, nil},
		{"gap", batch.Batch{From: 101, To: 120}, batch.Gap, batch.ErrGap, edgeindex.ErrConflict},
		{"overlap", batch.Batch{From: 90, To: 120}, batch.Overlap, batch.ErrOverlap, edgeindex.ErrConflict},
		{"overlap at next", batch.Batch{From: 99, To: 100}, batch.Overlap, batch.ErrOverlap, edgeindex.ErrConflict},
		{"from after to", batch.Batch{From: 120, To: 110}, batch.Malformed, batch.ErrMalformed, edgeindex.ErrInvalid},
		{"past end", batch.Batch{From: 100, To: 200}, batch.Malformed, batch.ErrMalformed, edgeindex.ErrInvalid},
		{"negative headers", batch.Batch{From: 100, To: 110, Headers: -1}, batch.Malformed, batch.ErrMalformed, edgeindex.ErrInvalid},
		{"headers as many as the span", batch.Batch{From: 100, To: 110, Headers: 11}, batch.Accept, nil, nil},
		{"headers past the span", batch.Batch{From: 100, To: 110, Headers: 12}, batch.Malformed, batch.ErrMalformed, edgeindex.ErrInvalid},
		{"headers near MaxInt64", batch.Batch{From: 100, To: 199, Headers: 6_900_000_000_000_000_000}, batch.Malformed, batch.ErrMalformed, edgeindex.ErrInvalid},
		{"empty key", batch.Batch{From: 100, To: 110, Items: []batch.Item{{Key: "a"}, {}}}, batch.Malformed, batch.ErrMalformed, edgeindex.ErrInvalid},
		{"malformed beats duplicate", batch.Batch{From: 10, To: 20, Items: []batch.Item{{}}}, batch.Malformed, batch.ErrMalformed, edgeindex.ErrInvalid},
	}
	for _, c := range cases {
		got, err := batch.Classify(next, end, c.b)
		require.Equal(t, c.want, got, c.name)
		if c.err == nil {
			require.NoError(t, err, c.name)
			continue
		}
		require.ErrorIs(t, err, c.err, c.name)
		require.ErrorIs(t, err, c.is2, c.name)
	}
}

func ExampleClassify() {
	// A range 1000..1999 whose batches reach 1499: next is 1500.
	for _, b := range []batch.Batch{{From: 1500, To: 1599}, {From: 1000, To: 1499}, {From: 1600, To: 1699}} {
		outcome, err := batch.Classify(1500, 1999, b)
		fmt.Println(outcome == batch.Accept, outcome == batch.Duplicate, err)
	}
	// Output:
	// true false <nil>
	// false true <nil>
	// false false batch gap: conflict: batch starts at 1600 but the range's next is 1500
}

func TestHeadersFit(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		from, to, headers int64
		want              bool
	}{
		{1, 1, 0, true}, {1, 1, 1, true}, {1, 1, 2, false},
		{1, 1000, 1000, true}, {1, 1000, 1001, false}, {1, 1000, -1, false},
		{2, 1, 0, false},
		{0, math.MaxInt64, math.MaxInt64, true},
		{math.MinInt64, math.MaxInt64, math.MaxInt64, true},
		{-5, -1, 5, true}, {-5, -1, 6, false},
		{100, 199, math.MaxInt64, false},
	} {
		require.Equal(t, c.want, batch.HeadersFit(c.from, c.to, c.headers), "%d..%d, %d headers", c.from, c.to, c.headers)
	}
}
