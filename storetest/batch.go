package storetest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/lease"
)

func testBatchRules(t *testing.T, e *env) {
	e.group(t, "g", false)
	e.ranges(t, "g", 1000, 1099, lease.LaneHistory)
	l := e.grant(t, "a")
	id, f := l.Range.ID, fence(l)
	put := func(b batch.Batch) (batch.Result, error) { return e.Put(e.ctx, id, f, b) }

	res, err := put(batch.Batch{From: 1000, To: 1009, Headers: 9, Items: items("a", "b")})
	require.NoError(t, err)
	require.Equal(t, batch.Result{Next: 1010}, res)

	res, err = put(batch.Batch{From: 1000, To: 1009, Headers: 9, Items: items("a", "b")})
	require.NoError(t, err)
	require.Equal(t, batch.Result{Next: 1010, Duplicate: true}, res, "a retry is a duplicate, not an error")

	for name, c := range map[string]struct {
		b    batch.Batch
		want error
	}{
		"gap":           {batch.Batch{From: 1011, To: 1020}, batch.ErrGap},
		"overlap":       {batch.Batch{From: 1005, To: 1020}, batch.ErrOverlap},
		"from after to": {batch.Batch{From: 1010, To: 1009}, batch.ErrMalformed},
		"past the end":  {batch.Batch{From: 1010, To: 1100}, batch.ErrMalformed},
		"empty key":     {batch.Batch{From: 1010, To: 1019, Items: []batch.Item{{Key: "k"}, {Key: ""}}}, batch.ErrMalformed},
		"neg headers":   {batch.Batch{From: 1010, To: 1019, Headers: -1}, batch.ErrMalformed},
	} {
		_, err := put(c.b)
		require.ErrorIs(t, err, c.want, name)
	}
	_, err = put(batch.Batch{From: 1011, To: 1020})
	require.ErrorIs(t, err, edgeindex.ErrConflict, "a gap is a conflict")
	_, err = put(batch.Batch{From: 1010, To: 1100})
	require.ErrorIs(t, err, edgeindex.ErrInvalid, "a malformed batch is invalid")

	r := e.get(t, id)
	require.Equal(t, int64(1010), r.Next, "refused batches change nothing")
	require.Equal(t, int64(9), r.Headers)
	require.Len(t, e.feed(t, "g", 100, 2), 2, "only the first batch's items are stored")

	// An empty batch (no items) advances next too: articles without results.
	res, err = put(batch.Batch{From: 1010, To: 1099, Headers: 90})
	require.NoError(t, err)
	require.Equal(t, int64(1100), res.Next)
}

func testResultsFeed(t *testing.T, e *env) {
	e.group(t, "g1", false)
	e.group(t, "g2", false)
	e.ranges(t, "g1", 1, 100, lease.LaneHistory)
	e.ranges(t, "g2", 1, 100, lease.LaneHistory)
	want := map[string][]string{}
	for range 2 {
		l := e.grant(t, "a")
		for from := int64(1); from <= 100; from += 25 {
			var keys []string
			for i := range 7 {
				keys = append(keys, fmt.Sprintf("%s-%d-%d", l.Range.Group, from, i))
			}
			_, err := e.Put(e.ctx, l.Range.ID, fence(l), batch.Batch{From: from, To: from + 24, Headers: 25, Items: items(keys...)})
			require.NoError(t, err)
			want[l.Range.Group] = append(want[l.Range.Group], keys...)
		}
	}
	read := func(group string, limit int) []batch.Stored {
		return e.feed(t, group, limit, len(want[group]))
	}
	keysOf := func(s []batch.Stored) []string {
		var out []string
		for _, it := range s {
			out = append(out, it.Key)
		}
		return out
	}
	g1 := read("g1", 5)
	require.Equal(t, want["g1"], keysOf(g1), "every item once, in storage order")
	require.Equal(t, want["g2"], keysOf(read("g2", 3)))
	all := e.feed(t, "", 4, 56)
	require.Len(t, all, 56)
	require.Equal(t, `{"k":"g1-1-0"}`, string(g1[0].Value))
	require.Equal(t, int64(1), g1[0].From)
	require.Equal(t, int64(25), g1[0].To)
	require.NotZero(t, g1[0].Range)

	for _, bad := range []string{"x", "1.", ".1", "-1.2", "1.2.3"} {
		_, err := e.Results(e.ctx, batch.Query{After: bad})
		require.ErrorIs(t, err, edgeindex.ErrInvalid, bad)
	}
	_, err := e.Results(e.ctx, batch.Query{Limit: -1})
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
	_, err = e.Results(e.ctx, batch.Query{Group: "nope"})
	require.ErrorIs(t, err, edgeindex.ErrNotFound)
}

// testItemValues: every value comes back from the feed byte for byte,
// whichever way the store writes it: a call of two small batches (on
// PostgreSQL one statement, the values packed side by side) and a batch
// of more items than take a COPY. An absent value is JSON null.
func testItemValues(t *testing.T, e *env) {
	e.group(t, "g", false)
	e.ranges(t, "g", 1, 300, lease.LaneHistory) // three ranges of 100
	odd := []json.RawMessage{
		json.RawMessage(`{"s":"ü€𝄞 \u0000 \"quoted\""}`), nil, json.RawMessage(`[1,2.5e3,true,null]`),
		json.RawMessage(`"` + strings.Repeat("é", 40_000) + `"`), json.RawMessage(`{}`), json.RawMessage(`0`),
	}
	want := map[string]string{}
	value := func(key string, v json.RawMessage) batch.Item {
		want[key] = string(v)
		if v == nil {
			want[key] = "null"
		}
		return batch.Item{Key: key, Value: v}
	}
	var small [2][]batch.Item
	for i, v := range odd {
		small[i%2] = append(small[i%2], value(fmt.Sprintf("small-%d", i), v))
	}
	a, b := e.grant(t, "a"), e.grant(t, "a")
	answers, err := e.PutMany(e.ctx, []batch.Entry{
		{RangeID: a.Range.ID, Fence: fence(a), Batch: batch.Batch{From: a.Range.Start, To: a.Range.Start, Items: small[0]}},
		{RangeID: b.Range.ID, Fence: fence(b), Batch: batch.Batch{From: b.Range.Start, To: b.Range.Start, Items: small[1]}},
	}, 0)
	require.NoError(t, err)
	for _, an := range answers {
		require.NoError(t, an.Err)
	}
	var many []batch.Item
	for i := range 600 {
		many = append(many, value(fmt.Sprintf("many-%d", i), json.RawMessage(fmt.Sprintf(`{"n":%d,"s":"ß%s"}`, i, strings.Repeat("x", i)))))
	}
	many = append(many, value("many-odd", odd[0]), value("many-absent", nil))
	c := e.grant(t, "a")
	_, err = e.Put(e.ctx, c.Range.ID, fence(c), batch.Batch{From: c.Range.Start, To: c.Range.Start, Items: many})
	require.NoError(t, err)

	got := map[string]string{}
	for _, it := range e.feed(t, "g", 1000, len(want)) {
		got[it.Key] = string(it.Value)
	}
	require.Equal(t, want, got)
}

func (e *env) feed(t *testing.T, group string, limit, want int) []batch.Stored {
	t.Helper()
	return ReadFeed(t, e.Backend, group, limit, want)
}

// ReadFeed reads a store's results feed page by page until it has want
// items, then checks that nothing more comes. A backend may show an item
// only once no transaction that could precede it is running (PostgreSQL's
// feed does), so an empty page before want is polled again, within a bound.
func ReadFeed(t *testing.T, s batch.Store, group string, limit, want int) []batch.Stored {
	t.Helper()
	var all []batch.Stored
	cursor := ""
	deadline := time.Now().Add(30 * time.Second)
	for len(all) < want {
		p, err := s.Results(t.Context(), batch.Query{Group: group, After: cursor, Limit: limit})
		require.NoError(t, err)
		require.LessOrEqual(t, len(p.Results), limit)
		if len(p.Results) == 0 {
			require.Equal(t, cursor, p.Next, "an empty page keeps the cursor")
			require.True(t, time.Now().Before(deadline), "the feed showed %d of %d items", len(all), want)
			time.Sleep(5 * time.Millisecond)
			continue
		}
		all = append(all, p.Results...)
		cursor = p.Next
	}
	p, err := s.Results(t.Context(), batch.Query{Group: group, After: cursor, Limit: limit})
	require.NoError(t, err)
	require.Empty(t, p.Results, "the feed has no more than was stored")
	return all
}
