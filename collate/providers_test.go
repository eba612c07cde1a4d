package collate_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/collate"
	"github.com/edgeindex/edgeindex/edge"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/overview"
	"github.com/edgeindex/edgeindex/usenet"
)

// providerPost is the overview line of part n of 6 of one binary, as
// provider's server numbers it: article first+i, the same message-id on
// every provider.
func providerPost(number int64, n int) string {
	return string(overview.Append(nil, overview.Overview{
		Number: number, Subject: fmt.Sprintf(`"file.bin" yEnc (%d/6)`, n), From: "poster <p@example.invalid>",
		Date: "Mon, 02 Jan 2006 15:04:05 +0000", MessageID: fmt.Sprintf("<part%d@example.invalid>", n), Bytes: 1000, Lines: 10,
	}))
}

// One binary read from two providers, each holding some of its parts
// numbered its own way: each provider's range gives an item of the
// newsgroup (not NEWSGROUP@PROVIDER) with the same key, neither complete,
// and the two merged are complete with each part once.
func TestProvidersBinaryOfTwoProvidersIsOneBinary(t *testing.T) {
	t.Parallel()
	const newsgroup = "alt.binaries.providers"
	held := map[string][]int{"a": {1, 3, 5, 2}, "b": {2, 4, 6}} // part 2 is on both
	firstNumber := map[string]int64{"a": 1, "b": 5000}
	var items []usenet.Binary
	for i, p := range []string{"a", "b"} {
		c := newCollator(t, collate.Config{})
		var lines []string
		for j, n := range held[p] {
			lines = append(lines, providerPost(firstNumber[p]+int64(j), n))
		}
		r := lease.Range{ID: int64(i + 1), Group: grouplease.ProviderGroup(newsgroup, p), Start: firstNumber[p], End: firstNumber[p] + 9}
		out, err := c.HandleChunk(context.Background(), edge.Chunk{Range: r, From: r.Start, To: r.End, Data: gz(t, lines...)})
		require.NoError(t, err)
		require.Len(t, out.Items, 1, "a plain range flushes its incomplete binary at its end")
		b := decode(t, out.Items[0])
		require.Equal(t, newsgroup, b.Group, "the item names the newsgroup, not %s", r.Group)
		require.False(t, b.Complete, "provider %s alone does not complete the binary", p)
		items = append(items, b)
	}
	require.Equal(t, items[0].Key(), items[1].Key(), "one binary, one key, whichever provider it was read from")

	m := usenet.Merge(items[0], items[1])
	require.True(t, m.Complete, "the two providers' parts together complete it")
	require.Equal(t, []int{1, 2, 3, 4, 5, 6}, partNumbers(m.Parts), "each part once; part 2, on both, too")
	require.Equal(t, newsgroup, m.Group)
	for _, p := range m.Parts {
		require.Equal(t, fmt.Sprintf("<part%d@example.invalid>", p.N), p.MessageID)
	}
	ids := func(parts []usenet.Part) (out []string) {
		for _, p := range parts {
			out = append(out, p.MessageID)
		}
		return out
	}
	require.Equal(t, ids(m.Parts), ids(usenet.Merge(items[1], items[0]).Parts),
		"the same articles in either order: part 2, on both, is one article (numbered differently on each)")
}

// When two items of one binary name different articles for one part
// number, the first item's is kept, unless it has no message-id and the
// other has one.
func TestProvidersMergeOnePartNumberTwoMessageIDs(t *testing.T) {
	t.Parallel()
	part := func(n int, id string) usenet.Part { return usenet.Part{N: n, MessageID: id, Bytes: 10} }
	a := usenet.Binary{Subject: "s", Poster: "p", Total: 3, Parts: []usenet.Part{part(1, "<a1@x>"), part(2, ""), part(3, "<a3@x>")}}
	b := usenet.Binary{Subject: "s", Poster: "p", Total: 3, Parts: []usenet.Part{part(1, "<b1@x>"), part(2, "<b2@x>")}}
	m := usenet.Merge(a, b)
	require.True(t, m.Complete)
	require.Equal(t, []usenet.Part{part(1, "<a1@x>"), part(2, "<b2@x>"), part(3, "<a3@x>")}, m.Parts)
	m = usenet.Merge(b, a)
	require.Equal(t, []usenet.Part{part(1, "<b1@x>"), part(2, "<b2@x>"), part(3, "<a3@x>")}, m.Parts)
}

func partNumbers(parts []usenet.Part) []int {
	out := make([]int, len(parts))
	for i, p := range parts {
		out[i] = p.N
	}
	return out
}
