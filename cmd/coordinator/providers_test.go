package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/collate"
	"github.com/edgeindex/edgeindex/edge"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/internal/inntest"
	"github.com/edgeindex/edgeindex/internal/nzbgettest"
	"github.com/edgeindex/edgeindex/internal/yenctest"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/sqlstore"
	"github.com/edgeindex/edgeindex/usenet"
)

// TestProvidersMergeOneReleaseFromTwoINNs is the proof that several
// providers make one release: a release of two multi-part yEnc files is
// posted into two throwaway INN servers, each holding a different part of
// it (server a the odd parts of each file, server b the even ones, part 1
// of the first file on both), numbered differently (b holds other posts
// first). serve reads both (--source a=nntp://... --source b=nntp://...),
// the group is added once per provider (group add G --provider a, then
// --provider b), and collating workers index them. With a's group alone
// the release is incomplete, and neither group's binaries are complete;
// with both, the release builder merges them into one complete release of
// the newsgroup, whose NZB names each segment once, and NZBGet, given both
// servers, rebuilds every file with the original's SHA-256. Given server a
// alone, NZBGet cannot. Without INN or NZBGet it skips, unless
// EDGEINDEX_REQUIRE_INN=1 and EDGEINDEX_REQUIRE_NZBGET=1.
func TestProvidersMergeOneReleaseFromTwoINNs(t *testing.T) {
	t.Parallel()
	nzbgettest.NZBGet(t)
	nzbgettest.RequireINN(t)
	nzbgettest.XMLLint(t)
	const group = "alt.binaries.edgeindex.providers"
	inns := map[string]*inntest.Server{"a": inntest.Start(t), "b": inntest.Start(t)}
	for _, inn := range inns {
		inn.NewGroup(t, group)
	}

	rng := rand.New(rand.NewPCG(19, 2))
	const name, poster = "Two.Providers.2026", "Provider Poster <providers@example.test>"
	files := []upFile{
		{name: "Two.Providers.2026.part1.rar", data: testContent(rng, 22_000)},
		{name: "Two.Providers.2026.part2.rar", data: testContent(rng, 14_000)},
	}
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	posted := map[string][]inntest.Article{"b": inntest.Generate(25, group)} // b numbers the release's parts after these
	for i, f := range files {
		for _, p := range yenctest.Encode(f.name, f.data, 4_000, yenctest.DefaultLine) {
			a := inntest.Article{
				MessageID:  fmt.Sprintf("<providers-%d-%d.%x@example.test>", i+1, p.Number, rng.Uint64()),
				From:       poster,
				Newsgroups: group,
				Subject:    fmt.Sprintf(`[%02d/%02d] - "%s" yEnc (%d/%d)`, i+1, len(files), f.name, p.Number, p.Total),
				Date:       base.Add(time.Duration(10*i+p.Number) * time.Second).Format(time.RFC1123Z),
				Body:       p.Body,
			}
			if p.Number%2 == 1 {
				posted["a"] = append(posted["a"], a)
			}
			if p.Number%2 == 0 || (i == 0 && p.Number == 1) {
				posted["b"] = append(posted["b"], a)
			}
		}
	}
	readers := map[string]string{}
	for p, inn := range inns {
		inn.Post(t, posted[p])
		readers[p] = inn.StartReader(t).Addr()
	}

	data := t.TempDir()
	token, err := run(t, data, "node", "add", "edge-1")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	serve := startServe(t, data, "--source", "a=nntp://"+inns["a"].Addr(), "--source", "b=nntp://"+inns["b"].Addr(),
		"--nntp-conns", "2", "--poll", "50ms", "--repair-delay", "10ms", "--release-interval", "50ms")
	var wg sync.WaitGroup
	wctx, stopWorkers := context.WithCancel(ctx)
	defer wg.Wait()
	defer stopWorkers()
	for range 2 {
		col, err := collate.New(collate.Config{})
		require.NoError(t, err)
		cl, err := edge.NewClient(edge.Config{BaseURL: serve.base, Token: strings.TrimSpace(token)})
		require.NoError(t, err)
		w, err := edge.NewWorker(edge.WorkerConfig{Client: cl, Handler: col, Idle: 20 * time.Millisecond,
			Lanes: []lease.Lane{lease.LaneTail, lease.LaneHistory}})
		require.NoError(t, err)
		wg.Go(func() { w.Run(wctx) })
	}
	store, err := sqlstore.Open(ctx, "sqlite://"+data+"/edgeindex.db", sqlstore.Config{})
	require.NoError(t, err)
	defer store.Close()

	// settled waits until every planned group has read its provider's
	// articles, every range is done and the builder has consumed the feed.
	settled := func(providers ...string) {
		t.Helper()
		require.Eventually(t, func() bool {
			plans, err := store.Plans(ctx)
			require.NoError(t, err)
			if len(plans) != len(providers) {
				return false
			}
			for _, p := range plans {
				_, provider := grouplease.SplitGroup(p.Group)
				if p.High != int64(len(posted[provider])) || p.Lag != 0 || p.Missing.Waiting+p.Missing.Repairing > 0 {
					return false
				}
				rs, err := store.Ranges(ctx, grouplease.RangeFilter{Group: p.Group, Limit: 10000})
				require.NoError(t, err)
				for _, r := range rs {
					if r.State != lease.StateDone {
						return false
					}
				}
			}
			cur, err := store.ReleaseCursor(ctx, release.DefaultConsumer)
			require.NoError(t, err)
			return cur.Items == int64(len(readFeed(t, store, "")))
		}, 90*time.Second, 50*time.Millisecond, "indexing and release building did not settle")
	}
	ours := func() release.Release {
		t.Helper()
		page, err := store.Releases(ctx, release.Query{Group: group})
		require.NoError(t, err)
		var found []release.Release
		for _, r := range page.Releases {
			if r.Poster == poster {
				found = append(found, r)
			}
		}
		require.Len(t, found, 1, "one release, whichever providers its parts came from")
		full, err := store.ReleaseByID(ctx, found[0].ID)
		require.NoError(t, err)
		return full
	}
	var parts int64
	for _, f := range files {
		parts += int64(len(yenctest.Encode(f.name, f.data, 4_000, 0)))
	}

	// Provider a alone: its parts, no file complete.
	_, err = run(t, data, "group", "add", group, "--provider", "a", "--range-size", "40", "--chunk-size", "20", "--plan", "tail,history")
	require.NoError(t, err)
	settled("a")
	r := ours()
	require.False(t, r.Complete, "provider a alone does not complete the release")
	require.Zero(t, r.FilesComplete)
	require.Equal(t, [2]int64{int64(len(posted["a"])), parts}, [2]int64{r.PartsSeen, r.PartsExpected})

	// Then provider b: the same newsgroup, its own group, ranges and plan.
	_, err = run(t, data, "group", "add", group, "--provider", "b", "--range-size", "40", "--chunk-size", "20", "--plan", "tail,history")
	require.NoError(t, err)
	settled("a", "b")
	for _, p := range []string{"a", "b"} {
		g := grouplease.ProviderGroup(group, p)
		items := 0
		for _, it := range readFeed(t, store, g) {
			var b usenet.Binary
			require.NoError(t, json.Unmarshal(it.Value, &b))
			if b.Poster != poster {
				continue
			}
			items++
			require.False(t, b.Complete, "%s: no binary is complete from provider %s alone", b.Name, p)
			require.Equal(t, group, b.Group, "items name the newsgroup, not %s", g)
		}
		require.Positive(t, items, "provider %s's group gave items", p)
	}
	r = ours()
	require.True(t, r.Complete, "the two providers' parts complete the release: %+v", r)
	require.Equal(t, name, r.Name)
	require.Equal(t, [3]int{2, 2, 2}, [3]int{r.FilesSeen, r.FilesComplete, r.FilesExpected})
	require.Equal(t, [2]int64{parts, parts}, [2]int64{r.PartsSeen, r.PartsExpected}, "part 1 of the first file, on both, counts once")
	require.Equal(t, []string{group}, r.Groups)

	file := filepath.Join(t.TempDir(), strconv.FormatInt(r.ID, 10)+".nzb")
	fetchNZB(t, serve.base, data, r.ID, file)
	dtd, err := filepath.Abs("../../nzb/testdata/nzb-1.1.dtd")
	require.NoError(t, err)
	nzbgettest.Validate(t, dtd, file)
	nzbBytes, err := os.ReadFile(file)
	require.NoError(t, err)
	nzbText := string(nzbBytes)
	require.Equal(t, int(parts), strings.Count(nzbText, "<segment "), "the NZB names each segment once")
	require.NotContains(t, nzbText, group+"@", "the NZB names the newsgroup")

	sums := map[string]string{}
	for _, f := range files {
		sum := sha256.Sum256(f.data)
		sums[f.name] = hex.EncodeToString(sum[:])
	}
	res := nzbgettest.DownloadFrom(t, []string{readers["a"], readers["b"]}, file)
	require.Equal(t, sums, res.Files, "NZBGet, given both servers, rebuilt every file with the original's SHA-256; its log:\n%s", res.Log)
	t.Logf("NZBGet rebuilt %s from two servers: %d files, %d parts (a %d, b %d articles), every SHA-256 the original's",
		name, len(res.Files), parts, len(posted["a"]), len(posted["b"]))

	alone := nzbgettest.Download(t, readers["a"], file)
	require.NotEqual(t, sums, alone.Files, "server a alone cannot rebuild the files")
	for name, sum := range alone.Files {
		require.NotEqual(t, sums[name], sum, "%s rebuilt from server a alone", name)
	}

	stopWorkers()
	wg.Wait()
	serve.stop(t)
}
