package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
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
	"github.com/edgeindex/edgeindex/internal/inntest"
	"github.com/edgeindex/edgeindex/internal/nzbgettest"
	"github.com/edgeindex/edgeindex/internal/tooltest"
	"github.com/edgeindex/edgeindex/internal/yenctest"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// feedItem is a Newznab feed's item, as a client reads it.
type feedItem struct {
	Title       string `xml:"title"`
	Description string `xml:"description"`
	Attrs       []struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	} `xml:"http://www.newznab.com/DTD/2010/feeds/attributes/ attr"`
}

// Issue 29's proof, end to end against a real INN: releases made with
// Debian's tools are posted, indexed by serve and its worker, and
// post-processed from their article bodies: the obfuscated release (a
// random stem, a PAR2 set made by par2cmdline over the real name) is
// found by its real name in its real category; the NFO shows in
// t=details and on the page; the archives made by 7z -p -mhe=on and
// zip -P carry password=1 and password=0 hides them; and NZBGet still
// rebuilds every file byte for byte.
func TestPostProcINN(t *testing.T) {
	t.Parallel()
	nzbgettest.NZBGet(t)
	nzbgettest.RequireINN(t)
	const group = "alt.binaries.edgeindex.postproc"
	inn := inntest.Start(t)
	inn.NewGroup(t, group)
	rng := rand.New(rand.NewPCG(29, 1))
	dir := t.TempDir()
	file := func(name string, data []byte) string {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o600))
		return name
	}
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		return b
	}

	const real, hash = "Ocean.Documentary.2024.1080p.WEB.x264-GRP.mkv", "f3a9c2e71b8d4f6a0c5e9b2d7f1a8c4e"
	file(real, testContent(rng, 90_000))
	tooltest.Run(t, dir, "par2", "par2", "create", "-q", "-s30000", "-r10", "-n1", "set.par2", real)
	file("show.nfo", []byte("\xc9\xcd\xcd\xbb\r\n\xba Title: Deep Sea Life \xba\r\nhttps://www.imdb.com/title/tt7654321/\r\n"))
	file("show.mkv", testContent(rng, 30_000))
	file("movie.mkv", testContent(rng, 70_000))
	tooltest.Run(t, dir, "7z", "p7zip-full", "a", "-bd", "-psecret", "-mhe=on", "secret.7z", "movie.mkv")
	tooltest.Run(t, dir, "zip", "zip", "-q", "-P", "secret", "secret.zip", "movie.mkv")
	tooltest.Run(t, dir, "zip", "zip", "-q", "plain.zip", "movie.mkv")

	type posted struct{ name, from string } // as posted, from the file in dir
	rels := []struct {
		name  string // the name edgeindex should give it
		files []posted
	}{
		{"Ocean.Documentary.2024.1080p.WEB.x264-GRP", []posted{{hash + ".mkv", real}, {hash + ".par2", "set.par2"}, {hash + ".vol0+1.par2", "set.vol0+1.par2"}}},
		{"Deep.Sea.Life.S01E01.720p.HDTV.x264-GRP", []posted{{"Deep.Sea.Life.S01E01.720p.HDTV.x264-GRP.nfo", "show.nfo"}, {"Deep.Sea.Life.S01E01.720p.HDTV.x264-GRP.mkv", "show.mkv"}}},
		{"Secret.Movie.2024.1080p.BluRay.x264-GRP", []posted{{"Secret.Movie.2024.1080p.BluRay.x264-GRP.7z", "secret.7z"}}},
		{"Zipped.Movie.2023.720p.BluRay.x264-GRP", []posted{{"Zipped.Movie.2023.720p.BluRay.x264-GRP.zip", "secret.zip"}}},
		{"Plain.Movie.2022.720p.BluRay.x264-GRP", []posted{{"Plain.Movie.2022.720p.BluRay.x264-GRP.zip", "plain.zip"}}},
	}
	var arts []inntest.Article
	base := time.Date(2024, 5, 4, 12, 0, 0, 0, time.UTC)
	for _, r := range rels {
		for i, f := range r.files {
			for _, p := range yenctest.Encode(f.name, read(f.from), 20_000, yenctest.DefaultLine) {
				arts = append(arts, inntest.Article{
					MessageID:  fmt.Sprintf("<pp-%d-%d-%x@example.test>", len(arts), p.Number, rng.Uint64()),
					From:       "Poster <poster@example.test>",
					Newsgroups: group,
					Subject:    fmt.Sprintf(`[%d/%d] - "%s" yEnc (%d/%d)`, i+1, len(r.files), f.name, p.Number, p.Total),
					Date:       base.Add(time.Duration(len(arts)) * time.Second).Format(time.RFC1123Z),
					Body:       p.Body,
				})
			}
		}
	}
	inn.Post(t, arts)
	reader := inn.StartReader(t)

	data := t.TempDir()
	token, err := run(t, data, "node", "add", "edge-1")
	require.NoError(t, err)
	_, err = run(t, data, "group", "add", group, "--range-size", "20", "--chunk-size", "10", "--plan", "tail,history")
	require.NoError(t, err)
	out, err := run(t, data, "user", "add", "alice")
	require.NoError(t, err)
	key := strings.TrimSpace(out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:])
	nz := make(chan string, 1)
	serve := startServeWith(t, data, func(m *Main) { m.NewznabReady = func(a string) { nz <- a } },
		"--source", "nntp://"+inn.Addr(), "--nntp-conns", "3", "--poll", "50ms", "--release-interval", "50ms",
		"--newznab", "127.0.0.1:0", "--min-completion", "1")
	front := "http://" + <-nz
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	col, err := collate.New(collate.Config{})
	require.NoError(t, err)
	cl, err := edge.NewClient(edge.Config{BaseURL: serve.base, Token: strings.TrimSpace(token)})
	require.NoError(t, err)
	w, err := edge.NewWorker(edge.WorkerConfig{Client: cl, Handler: col, Idle: 20 * time.Millisecond,
		Lanes: []lease.Lane{lease.LaneTail, lease.LaneHistory}})
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Go(func() { w.Run(ctx) })
	defer wg.Wait()
	defer cancel()

	store, err := sqlstore.Open(ctx, "sqlite://"+data+"/edgeindex.db", sqlstore.Config{})
	require.NoError(t, err)
	defer store.Close()
	built := map[string]release.Release{}
	require.Eventually(t, func() bool {
		page, err := store.Releases(ctx, release.Query{Limit: 100})
		require.NoError(t, err)
		done := 0
		for _, r := range page.Releases {
			built[r.Name] = r
			if r.PostProc.State == release.PostDone {
				done++
			}
		}
		return len(page.Releases) == len(rels) && done == len(rels)
	}, 120*time.Second, 100*time.Millisecond, "every release built and post-processed")

	api := func(q string) []feedItem {
		t.Helper()
		res, err := http.Get(front + "/api?" + q + "&apikey=" + key)
		require.NoError(t, err)
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		var doc struct {
			Items []feedItem `xml:"channel>item"`
		}
		require.NoError(t, xml.Unmarshal(body, &doc), "%s", body)
		return doc.Items
	}
	attrs := func(it feedItem) map[string][]string {
		m := map[string][]string{}
		for _, a := range it.Attrs {
			m[a.Name] = append(m[a.Name], a.Value)
		}
		return m
	}

	// The obfuscated release, by its real name, in its real category.
	items := api("t=search&q=" + url.QueryEscape("ocean documentary"))
	require.Len(t, items, 1)
	require.Equal(t, "Ocean.Documentary.2024.1080p.WEB.x264-GRP", items[0].Title)
	require.Contains(t, attrs(items[0])["category"], "2040")
	ocean := built["Ocean.Documentary.2024.1080p.WEB.x264-GRP"]
	require.True(t, ocean.PostProc.Renamed)
	// Its movie has its real name (matched by its first 16 KiB), beside
	// the name it was posted as.
	res, err := http.Get(front + "/details/" + strconv.FormatInt(ocean.ID, 10) + "?apikey=" + key)
	require.NoError(t, err)
	page, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	require.Contains(t, string(page), real+` <span class="muted posted-as">posted as `+hash+`.mkv</span>`)

	// The NFO, by t=details and on the page.
	show := built["Deep.Sea.Life.S01E01.720p.HDTV.x264-GRP"]
	items = api("t=details&id=" + strconv.FormatInt(show.ID, 10))
	require.Len(t, items, 1)
	require.Equal(t, "╔══╗\n║ Title: Deep Sea Life ║\nhttps://www.imdb.com/title/tt7654321/\n", items[0].Description)
	require.Equal(t, []string{"1"}, attrs(items[0])["nfo"])
	require.Equal(t, []string{"7654321"}, attrs(items[0])["imdb"])
	res, err = http.Get(front + "/details/" + strconv.FormatInt(show.ID, 10) + "?apikey=" + key)
	require.NoError(t, err)
	page, err = io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	require.Contains(t, string(page), `<pre class="nfo" id="nfo">╔══╗`)

	// Passwords, and password=0.
	want := map[string]string{"Secret.Movie.2024.1080p.BluRay.x264-GRP": "1", "Zipped.Movie.2023.720p.BluRay.x264-GRP": "1",
		"Plain.Movie.2022.720p.BluRay.x264-GRP": "0", "Ocean.Documentary.2024.1080p.WEB.x264-GRP": "0",
		"Deep.Sea.Life.S01E01.720p.HDTV.x264-GRP": "0"}
	items = api("t=search")
	require.Len(t, items, len(rels))
	for _, it := range items {
		require.Equal(t, []string{want[it.Title]}, attrs(it)["password"], it.Title)
	}
	var shown []string
	for _, it := range api("t=search&password=0") {
		shown = append(shown, it.Title)
	}
	require.ElementsMatch(t, []string{"Plain.Movie.2022.720p.BluRay.x264-GRP", "Ocean.Documentary.2024.1080p.WEB.x264-GRP",
		"Deep.Sea.Life.S01E01.720p.HDTV.x264-GRP"}, shown)

	// NZBGet rebuilds every file it downloads byte for byte. It holds
	// back a PAR2 volume (recovery data, read only to repair), and
	// renames the obfuscated movie by the same PAR2 set, to the name
	// edgeindex found.
	var bodies int
	for _, r := range rels {
		b := built[r.name]
		bodies += b.PostProc.Bodies
		t.Logf("%s: %d bodies read (%s)", r.name, b.PostProc.Bodies, b.PostProc.Reason)
		nzbFile := filepath.Join(t.TempDir(), strconv.FormatInt(b.ID, 10)+".nzb")
		fetchNZB(t, serve.base, data, b.ID, nzbFile)
		got := nzbgettest.Download(t, reader.Addr(), nzbFile)
		sums := map[string]string{} // by the file posted from
		for _, f := range r.files {
			sum := sha256.Sum256(read(f.from))
			sums[hex.EncodeToString(sum[:])] = f.from
		}
		rebuilt := map[string]bool{}
		for name, sum := range got.Files {
			from, ok := sums[sum]
			require.True(t, ok, "%s: NZBGet rebuilt %s, whose bytes no posted file has; its log:\n%s", r.name, name, got.Log)
			rebuilt[from] = true
			if from == real {
				require.Equal(t, real, filepath.Base(name), "NZBGet renamed the movie by its PAR2 set")
			}
		}
		for _, f := range r.files {
			if !strings.Contains(f.name, ".vol") {
				require.True(t, rebuilt[f.from], "%s: NZBGet rebuilt %s; its log:\n%s", r.name, f.name, got.Log)
			}
		}
	}
	t.Logf("%d articles; post-processing read %d bodies for %d releases", len(arts), bodies, len(rels))
	cancel()
	wg.Wait()
	serve.stop(t)
}
