package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
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

// upFile is one file a test posts: its name, its bytes, and its parts'
// subjects.
type upFile struct {
	name    string
	data    []byte
	subject func(part, parts int) string
	skip    int // a part never posted, or 0
}

// upRelease is one release a test posts.
type upRelease struct {
	name, poster string
	groups       []string
	files        []upFile
}

// testContent is n random bytes with a run of 4s, which yEnc writes as
// "." (4+42), so some encoded lines start with a dot and are dot-stuffed
// on the wire.
func testContent(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.UintN(256))
	}
	run := min(n, 1500)
	at := rng.IntN(n - run + 1)
	for i := at; i < at+run; i++ {
		b[i] = 4
	}
	return b
}

// TestNZBGetRebuildsReleases is the proof that what edgeindex indexes from
// headers alone is right: three releases of multi-part yEnc files, in
// subject styles that differ, one of them cross-posted to two groups, are
// posted into INN interleaved with other posts, with a fourth release
// that misses one part; the coordinator (--source nntp://) and two
// collating workers index both groups, and serve's release builder builds
// the releases. Each complete release's NZB (release store + package nzb,
// through `coordinator nzb ID -o FILE`) is valid against the NZB 1.1 DTD
// (xmllint), and NZBGet, reading from INN's nnrpd, rebuilds every file
// with the original's SHA-256. The incomplete release is reported
// incomplete with the right counts. Without NZBGet, xmllint or INN it
// skips, unless EDGEINDEX_REQUIRE_NZBGET=1 (and EDGEINDEX_REQUIRE_INN=1).
func TestNZBGetRebuildsReleases(t *testing.T) {
	t.Parallel()
	nzbgettest.NZBGet(t)
	nzbgettest.RequireINN(t)
	nzbgettest.XMLLint(t)
	const group, cross = "alt.binaries.edgeindex.nzb", "alt.binaries.edgeindex.cross"
	inn := inntest.Start(t)
	inn.NewGroup(t, group)
	inn.NewGroup(t, cross)

	rng := rand.New(rand.NewPCG(13, 1))
	rels := []upRelease{
		{name: "Alpha.Set.2024", poster: "Alpha Poster <alpha@example.test>", groups: []string{group, cross}, files: []upFile{
			{name: "Alpha.Set.2024.part1.rar", data: testContent(rng, 18_000)},
			{name: "Alpha.Set.2024.part2.rar", data: testContent(rng, 9_500)},
			{name: "Alpha.Set.2024.nfo", data: []byte("Alpha Set 2024\r\n\r\n.dots at the start\r\n..and two\r\nend\r\n")},
		}},
		{name: "bravo.show.s01e01", poster: "bravo@example.test (Bravo Uploader)", groups: []string{group}, files: []upFile{
			{name: "bravo.show.s01e01.mkv", data: testContent(rng, 23_000)},
			{name: "bravo.show.s01e01.sfv", data: []byte("bravo.show.s01e01.mkv 0badc0de\n")},
		}},
		{name: "charlie", poster: `"Charlie" <charlie@example.invalid>`, groups: []string{group}, files: []upFile{
			{name: "charlie.7z.001", data: testContent(rng, 16_000)},
			{name: "charlie.7z.002", data: testContent(rng, 7_000)},
		}},
		{name: "delta", poster: "Delta <delta@example.test>", groups: []string{group}, files: []upFile{
			{name: "delta.rar", data: testContent(rng, 20_000), skip: 3},
			{name: "delta.par2", data: testContent(rng, 3_000)},
		}},
	}
	// Subject styles: [n/N] with quotes; a prefix, a counter and a size;
	// (n/N) before the name; quotes alone.
	for i := range rels[0].files {
		rels[0].files[i].subject = func(p, n int) string {
			return fmt.Sprintf(`[%02d/%02d] - "%s" yEnc (%d/%d)`, i+1, len(rels[0].files), rels[0].files[i].name, p, n)
		}
	}
	for i := range rels[1].files {
		f := &rels[1].files[i]
		f.subject = func(p, n int) string {
			return fmt.Sprintf(`Bravo.Show.S01E01 [%d/%d] - "%s" %.1f KB yEnc (%d/%d)`, i+1, len(rels[1].files), f.name,
				float64(len(f.data))/1024, p, n)
		}
	}
	for i := range rels[2].files {
		rels[2].files[i].subject = func(p, n int) string {
			return fmt.Sprintf(`(%02d/%02d) "%s" yEnc (%d/%d)`, i+1, len(rels[2].files), rels[2].files[i].name, p, n)
		}
	}
	for i := range rels[3].files {
		rels[3].files[i].subject = func(p, n int) string { return fmt.Sprintf(`"%s" yEnc (%d/%d)`, rels[3].files[i].name, p, n) }
	}

	// Every part as an article; the parts of each file in order, the files
	// of all releases interleaved with each other and with other posts
	// (inntest.Generate: other posters' binaries and text).
	base := time.Date(2024, 5, 4, 12, 0, 0, 0, time.UTC)
	type queue struct{ arts []inntest.Article }
	var queues []*queue
	for _, r := range rels {
		for _, f := range r.files {
			q := &queue{}
			for _, p := range yenctest.Encode(f.name, f.data, 4_000, yenctest.DefaultLine) {
				if p.Number == f.skip {
					continue
				}
				q.arts = append(q.arts, inntest.Article{
					MessageID:  fmt.Sprintf("<%s.%d.%x@nzbget.example.test>", strings.ReplaceAll(f.name, ".", "-"), p.Number, rng.Uint64()),
					From:       r.poster,
					Newsgroups: strings.Join(r.groups, ","),
					Subject:    f.subject(p.Number, p.Total),
					Body:       p.Body,
					Extra:      []inntest.Header{{Name: "X-Newsposter", Value: "edgeindex nzbget test"}},
				})
			}
			queues = append(queues, q)
		}
	}
	queues = append(queues, &queue{arts: inntest.Generate(60, group)})
	var arts []inntest.Article
	dotted := 0
	for len(queues) > 0 {
		i := rng.IntN(len(queues))
		a := queues[i].arts[0]
		queues[i].arts = queues[i].arts[1:]
		if len(queues[i].arts) == 0 {
			queues = slices.Delete(queues, i, i+1)
		}
		a.Date = base.Add(time.Duration(len(arts)) * time.Second).Format(time.RFC1123Z)
		if a.HasDotLine() && strings.Contains(a.MessageID, "nzbget.example.test") {
			dotted++
		}
		arts = append(arts, a)
	}
	require.Positive(t, dotted, "some yEnc lines start with a dot and are dot-stuffed on the wire")
	inn.Post(t, arts)
	reader := inn.StartReader(t)

	// The coordinator indexes both groups from INN, and builds releases.
	data := t.TempDir()
	token, err := run(t, data, "node", "add", "edge-1")
	require.NoError(t, err)
	for _, g := range []string{group, cross} {
		_, err = run(t, data, "group", "add", g, "--range-size", "40", "--chunk-size", "20", "--plan", "tail,history")
		require.NoError(t, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	serve := startServe(t, data, "--source", "nntp://"+inn.Addr(), "--nntp-conns", "2", "--poll", "50ms", "--repair-delay", "10ms",
		"--release-interval", "50ms")
	baseURL := serve.base
	var wg sync.WaitGroup
	wctx, stopWorkers := context.WithCancel(ctx)
	defer stopWorkers()
	for range 2 {
		col, err := collate.New(collate.Config{})
		require.NoError(t, err)
		cl, err := edge.NewClient(edge.Config{BaseURL: baseURL, Token: strings.TrimSpace(token)})
		require.NoError(t, err)
		w, err := edge.NewWorker(edge.WorkerConfig{Client: cl, Handler: col, Idle: 20 * time.Millisecond,
			Lanes: []lease.Lane{lease.LaneTail, lease.LaneHistory}})
		require.NoError(t, err)
		wg.Go(func() { w.Run(wctx) })
	}
	defer wg.Wait()
	defer stopWorkers()

	store, err := sqlstore.Open(ctx, "sqlite://"+data+"/edgeindex.db", sqlstore.Config{})
	require.NoError(t, err)
	defer store.Close()

	// Every range done, and the release builder has consumed every item
	// of the feed.
	want := map[string]int{group: len(arts)}
	for _, a := range arts {
		if strings.Contains(a.Newsgroups, cross) {
			want[cross]++
		}
	}
	require.Eventually(t, func() bool {
		plans, err := store.Plans(ctx)
		require.NoError(t, err)
		if len(plans) != 2 {
			return false
		}
		for _, p := range plans {
			if p.High != int64(want[p.Group]) || p.Lag != 0 || p.Missing.Waiting+p.Missing.Repairing > 0 {
				return false
			}
		}
		for _, g := range []string{group, cross} {
			rs, err := store.Ranges(ctx, grouplease.RangeFilter{Group: g, Limit: 10000})
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

	// Our releases, by poster and name.
	built := map[string]release.Release{}
	cursor := ""
	for {
		p, err := store.Releases(ctx, release.Query{After: cursor, Limit: 50})
		require.NoError(t, err)
		if len(p.Releases) == 0 {
			break
		}
		for _, r := range p.Releases {
			built[r.Poster+"|"+r.Name] = r
		}
		cursor = p.Next
	}
	// Ranges of 40 articles split files: some come as several items, which
	// the builder merges.
	items := map[string]int{}
	for _, it := range readFeed(t, store, "") {
		items[it.Key]++
	}
	split := 0
	for _, r := range built {
		if !strings.Contains(r.Poster, "example.") || r.Name == "" {
			continue
		}
		full, err := store.ReleaseByID(ctx, r.ID)
		require.NoError(t, err)
		for _, f := range full.Files {
			if items[f.Key] > 1 {
				split++
			}
		}
	}
	require.Positive(t, split, "some file came as several items")
	t.Logf("%d articles, %d items, %d releases; %d files came in several items", len(arts), len(readFeed(t, store, "")), len(built), split)

	dtd, err := filepath.Abs("../../nzb/testdata/nzb-1.1.dtd")
	require.NoError(t, err)
	for _, up := range rels {
		r, ok := built[up.poster+"|"+up.name]
		require.True(t, ok, "release %s of %s was built; built: %v", up.name, up.poster, keys(built))
		wantGroups := slices.Sorted(slices.Values(up.groups))
		require.Equal(t, wantGroups, r.Groups, up.name)
		require.Equal(t, len(up.files), r.FilesSeen, up.name)
		var parts, size int64
		for _, f := range up.files {
			parts += int64(len(yenctest.Encode(f.name, f.data, 4_000, 0)))
		}
		full, err := store.ReleaseByID(ctx, r.ID)
		require.NoError(t, err)
		for _, f := range full.Files {
			size += f.Bytes
		}
		require.Equal(t, size, r.Bytes, "the size is the sum of the parts' bytes")
		require.WithinRange(t, r.Posted, base, base.Add(time.Duration(len(arts))*time.Second), "posted when its first file was")

		file := filepath.Join(t.TempDir(), strconv.FormatInt(r.ID, 10)+".nzb")
		fetchNZB(t, baseURL, data, r.ID, file)
		nzbgettest.Validate(t, dtd, file)

		if up.name == "delta" {
			// One part of delta.rar never posted: incomplete, with the
			// right counts.
			require.False(t, r.Complete)
			require.Equal(t, [3]int{2, 1, 0}, [3]int{r.FilesSeen, r.FilesComplete, r.FilesExpected})
			require.Equal(t, [2]int64{parts - 1, parts}, [2]int64{r.PartsSeen, r.PartsExpected})
			for _, f := range full.Files {
				if f.Name == "delta.rar" {
					require.False(t, f.Complete)
					require.Equal(t, []int{1, 2, 4, 5}, partNumbers(f.Parts))
				}
			}
			continue
		}
		require.True(t, r.Complete, "%s: %+v", up.name, r)
		require.Equal(t, [2]int64{parts, parts}, [2]int64{r.PartsSeen, r.PartsExpected}, up.name)
		require.Equal(t, len(up.files), r.FilesExpected, up.name)

		// NZBGet rebuilds every file, byte for byte.
		res := nzbgettest.Download(t, reader.Addr(), file)
		sums := map[string]string{}
		for _, f := range up.files {
			sum := sha256.Sum256(f.data)
			sums[f.name] = hex.EncodeToString(sum[:])
		}
		require.Equal(t, sums, res.Files, "%s: NZBGet rebuilt every file with the original's SHA-256; its log:\n%s", up.name, res.Log)
		t.Logf("NZBGet rebuilt %s: %d files, %d parts, every SHA-256 the original's", up.name, len(res.Files), parts)
	}

	stopWorkers()
	wg.Wait()
	serve.stop(t)
}

// fetchNZB writes release id's NZB to file, as an indexer's users get it:
// GET /v1/releases/{id}/nzb with the admin token; and checks that the
// coordinator nzb command writes the same bytes.
func fetchNZB(t *testing.T, baseURL, data string, id int64, file string) {
	t.Helper()
	token, err := os.ReadFile(filepath.Join(data, "admin.token"))
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(t.Context(), "GET", fmt.Sprintf("%s/v1/releases/%d/nzb", baseURL, id), nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	require.Equal(t, "application/x-nzb", resp.Header.Get("Content-Type"))
	require.Contains(t, resp.Header.Get("Content-Disposition"), ".nzb")
	require.NoError(t, os.WriteFile(file, body, 0o600))

	viaCommand := file + ".cmd"
	_, err = run(t, data, "nzb", strconv.FormatInt(id, 10), "-o", viaCommand)
	require.NoError(t, err)
	b, err := os.ReadFile(viaCommand)
	require.NoError(t, err)
	require.Equal(t, string(body), string(b), "the route and the command write the same NZB")
}

func partNumbers(parts []usenet.Part) []int {
	var out []int
	for _, p := range parts {
		out = append(out, p.N)
	}
	return out
}

func keys[V any](m map[string]V) []string {
	return slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	})
}
