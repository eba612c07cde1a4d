package release_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/nzb"
	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/sqlstore"
	"github.com/edgeindex/edgeindex/usenet"
)

// A release of two files of 5 parts, read from two providers' copies of
// one newsgroup: provider a holds parts 1, 2, 3 and 5 of the first file
// and the odd parts of the second, provider b parts 2 and 4 of the first
// and the even ones of the second (part 2 of the first on both). Neither
// provider's items complete it; together they do, as one release of the
// newsgroup whose NZB names each segment once.
func TestProvidersReleaseMergesTwoProvidersGroups(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store, err := sqlstore.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "db"), sqlstore.Config{})
	require.NoError(t, err)
	defer store.Close()
	const newsgroup = "alt.binaries.providers"
	held := map[string][2][]int{"a": {{1, 2, 3, 5}, {1, 3, 5}}, "b": {{2, 4}, {2, 4}}}
	files := []string{"set.part1.rar", "set.part2.rar"}

	// put stores, as a collating worker reading provider p's group would,
	// one item per file with the parts p holds, numbered p's way. Provider
	// a's items name the newsgroup, as collate writes them; b's name the
	// stored group NEWSGROUP@b, as an item written before collate stripped
	// the provider does.
	put := func(p string, first int64) {
		g := grouplease.ProviderGroup(newsgroup, p)
		_, err := store.AddGroup(ctx, grouplease.Group{Name: g, RangeSize: 100, ChunkSize: 100})
		require.NoError(t, err)
		_, err = store.AddRanges(ctx, grouplease.NewRanges{Group: g, From: first, To: first + 99})
		require.NoError(t, err)
		l, err := store.Grant(ctx, "worker-"+p, time.Minute)
		require.NoError(t, err)
		require.Equal(t, g, l.Range.Group)
		var items []batch.Item
		number := first
		for i, name := range files {
			b := usenet.Binary{Subject: fmt.Sprintf(`[%d/2] - "%s" yEnc`, i+1, name), Name: name, Poster: "Ann <ann@example.test>",
				Group: newsgroup, Date: "Sat, 04 May 2024 12:00:00 +0000", Total: 5}
			if p == "b" {
				b.Group = g
			}
			for _, n := range held[p][i] {
				b.Parts = append(b.Parts, usenet.Part{N: n, Article: number, MessageID: fmt.Sprintf("<%d.%d@example.test>", i, n), Bytes: 100})
				number++
			}
			v, err := json.Marshal(b)
			require.NoError(t, err)
			items = append(items, batch.Item{Key: b.Key(), Value: v})
		}
		_, err = store.Put(ctx, l.Range.ID, lease.Fence{Node: "worker-" + p, Token: l.Token}, batch.Batch{From: first, To: first + 99, Items: items})
		require.NoError(t, err)
	}
	builder, err := release.NewBuilder(release.Config{Store: store})
	require.NoError(t, err)
	only := func() release.Release {
		t.Helper()
		_, err := builder.Pass(ctx)
		require.NoError(t, err)
		page, err := store.Releases(ctx, release.Query{})
		require.NoError(t, err)
		require.Len(t, page.Releases, 1, "one release, whichever providers its parts came from")
		r, err := store.ReleaseByID(ctx, page.Releases[0].ID)
		require.NoError(t, err)
		return r
	}

	put("a", 1)
	r := only()
	require.False(t, r.Complete, "provider a alone does not complete it")
	require.Equal(t, [2]int64{7, 10}, [2]int64{r.PartsSeen, r.PartsExpected})

	put("b", 7000)
	r = only()
	require.True(t, r.Complete, "the two providers' parts together complete it: %+v", r)
	require.Equal(t, [2]int64{10, 10}, [2]int64{r.PartsSeen, r.PartsExpected})
	require.Equal(t, []string{newsgroup}, r.Groups, "the newsgroup, without a provider")
	require.Equal(t, int64(1000), r.Bytes, "part 2 of the first file, on both, counts once")
	require.Len(t, r.Files, 2)
	for _, f := range r.Files {
		require.True(t, f.Complete, f.Name)
		require.Equal(t, []string{newsgroup}, f.Groups, f.Name)
		require.Len(t, f.Parts, 5, f.Name)
		for i, p := range f.Parts {
			require.Equal(t, i+1, p.N, f.Name)
		}
	}
	page, err := store.Releases(ctx, release.Query{Group: newsgroup})
	require.NoError(t, err)
	require.Len(t, page.Releases, 1, "a search of the newsgroup finds it")

	var out bytes.Buffer
	require.NoError(t, nzb.Write(&out, r))
	for i := range files {
		for n := 1; n <= 5; n++ {
			id := fmt.Sprintf("%d.%d@example.test", i, n)
			require.Equal(t, 1, strings.Count(out.String(), ">"+id+"<"), "the NZB names segment %s once", id)
		}
	}
	require.Equal(t, 10, strings.Count(out.String(), "<segment "))
	require.NotContains(t, out.String(), newsgroup+"@", "the NZB's groups are newsgroups a downloader can read")
}
