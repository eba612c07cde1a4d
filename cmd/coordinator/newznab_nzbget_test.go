package main

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/internal/inntest"
	"github.com/edgeindex/edgeindex/internal/nzbgettest"
	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// tvRelease is an episode of Some.Show as a TV group has it: two RAR
// volumes and a PAR2 index.
func tvRelease(rng *rand.Rand, name, group string) upRelease {
	return upRelease{name: name, poster: "Show Poster <shows@example.test>", groups: []string{group}, files: []upFile{
		{name: name + ".part01.rar", data: testContent(rng, 14_000)},
		{name: name + ".part02.rar", data: testContent(rng, 6_500)},
		{name: name + ".par2", data: testContent(rng, 1_200)},
	}}
}

// sums are the SHA-256 of a release's files, by name, as NZBGet's files
// are compared.
func sums(r upRelease) map[string]string {
	out := map[string]string{}
	for _, f := range r.files {
		sum := sha256.Sum256(f.data)
		out[f.name] = hex.EncodeToString(sum[:])
	}
	return out
}

// TestNZBGetFeedRebuildsEpisodes is the proof that a downloader subscribed
// to edgeindex's TV feed gets the episodes posted after it subscribed,
// and nothing else. INN holds a group; serve indexes it with a tail plan
// (--poll 2s) and collating workers, and serves --newznab. NZBGet 21, in
// server mode, subscribes to /api?t=search&cat=5000&apikey=KEY with its
// own user's key (Backlog=no, Interval=1, PauseNzb=no), reading articles
// from INN's nnrpd.
//
// The order of events makes NZBGet's first fetch one of an empty feed,
// so that what it queues later is what it found new in the feed, whatever
// Backlog does on a first fetch:
//
//  1. a few text posts, so that the tail's first poll splits the group
//     after them (a tail plans only the articles after its first poll);
//  2. NZBGet starts and fetches the feed: the user's request count, kept
//     by the store, shows the fetch, and the feed has no item then;
//  3. an episode (Some.Show.S01E02.720p.HDTV.x264-GRP: two .rar and a
//     .par2, category 5040) and a movie are posted; the tail indexes them
//     and the release builder builds them; search finds both, and
//     cat=5000 the episode alone;
//  4. fetchfeed: NZBGet queues the episode's enclosure and rebuilds its
//     three files with the posted bytes' SHA-256;
//  5. S01E03 is posted; t=tvsearch&q=some+show&season=1&ep=3 finds it
//     alone once the tail has read it; fetchfeed, and NZBGet rebuilds it
//     too.
//
// Throughout, NZBGet's queue and history never hold the movie; at the end
// the store counts one grab for each episode, none for the movie, and two
// for NZBGet's user. Every caps, search, error and NZB document fetched
// is well-formed (xmllint --noout); the NZBs are valid NZB 1.1.
func TestNZBGetFeedRebuildsEpisodes(t *testing.T) {
	t.Parallel()
	nzbgettest.NZBGet(t)
	nzbgettest.RequireINN(t)
	nzbgettest.XMLLint(t)
	const group = "alt.binaries.edgeindex.tv"
	inn := inntest.Start(t)
	inn.NewGroup(t, group)
	reader := inn.StartReader(t)
	rng := rand.New(rand.NewPCG(18, 8))
	start := time.Now().UTC().Truncate(time.Second).Add(-2 * time.Hour)

	// 1. Text posts, then serve with a tail plan, which splits the group
	// after them.
	const texts = 3
	inn.Post(t, textArticles(texts, group, start))
	data := t.TempDir()
	token, err := run(t, data, "node", "add", "edge-1")
	require.NoError(t, err)
	_, err = run(t, data, "group", "add", group, "--range-size", "40", "--chunk-size", "20", "--plan", "tail")
	require.NoError(t, err)
	feedKey := addUser(t, data, "nzbget")
	key := addUser(t, data, "tester") // the test's own requests, apart from NZBGet's
	serve := startNewznabServe(t, data, "--source", "nntp://"+inn.Addr(), "--nntp-conns", "2", "--poll", "2s",
		"--repair-delay", "10ms", "--release-interval", "50ms")
	stopWorkers := startCollators(t, serve.base, token, 2)
	store, err := sqlstore.Open(t.Context(), "sqlite://"+data+"/edgeindex.db", sqlstore.Config{})
	require.NoError(t, err)
	defer store.Close()
	require.Eventually(t, func() bool {
		plans, err := store.Plans(t.Context())
		require.NoError(t, err)
		return len(plans) == 1 && plans[0].Polled && plans[0].TailNext == texts+1
	}, 30*time.Second, 50*time.Millisecond, "the tail splits the group after the text posts")

	api := serve.nz + "/api?apikey=" + url.QueryEscape(key) + "&"
	apiGet(t, serve.nz+"/api?t=caps", "caps.xml", http.StatusOK, "text/xml")
	bad := apiGet(t, serve.nz+"/api?t=search&cat=5000&apikey=0123456789abcdef0123456789abcdef", "error.xml", http.StatusOK, "text/xml")
	require.Contains(t, string(bad), `code="100"`)
	tvFeed := serve.nz + "/api?t=search&cat=5000&apikey=" + url.QueryEscape(feedKey)
	require.Empty(t, search(t, api+"t=search&cat=5000", "empty.xml").Items, "nothing indexed yet")

	// 2. NZBGet subscribes, and reads the empty feed.
	nz := nzbgettest.StartServer(t, nzbgettest.ServerConfig{News: reader.Addr(),
		Feeds:   []nzbgettest.Feed{{Name: "edgeindex", URL: tvFeed, Interval: 1}},
		Options: []string{"ParRename=no"}})
	requests := func() (requests, grabs int64) {
		accounts, err := store.Accounts(t.Context(), time.Now())
		require.NoError(t, err)
		for _, a := range accounts {
			if a.Name == "nzbget" {
				return a.Requests, a.Grabs
			}
		}
		t.Fatalf("no user nzbget in %+v", accounts)
		return 0, 0
	}
	require.Eventually(t, func() bool { n, _ := requests(); return n >= 1 }, 30*time.Second, 50*time.Millisecond,
		"NZBGet fetches its feed when it starts")
	require.Empty(t, nz.Queue(t), "the feed had no item")
	t.Logf("NZBGet's first fetch: an empty feed")

	releases := map[string]release.Release{} // by name, as the store has them
	// seen collects every name NZBGet's queue and history ever showed.
	seen := map[string]bool{}
	watch := func() []nzbgettest.Item {
		h := nz.History(t)
		for _, it := range append(nz.Queue(t), h...) {
			seen[cmp.Or(it.NZBName, it.Name)+" <"+it.URL+">"] = true
		}
		return h
	}
	// downloaded waits for NZBGet's history to show release name done,
	// and checks the files it rebuilt.
	downloaded := func(up upRelease) {
		t.Helper()
		var done nzbgettest.Item
		require.Eventually(t, func() bool {
			for _, it := range watch() {
				if it.Kind == "NZB" && strings.Contains(it.Name, up.name) {
					done = it
					return true
				}
			}
			return false
		}, 45*time.Second, 100*time.Millisecond, "NZBGet downloads %s from the feed", up.name)
		require.True(t, strings.HasPrefix(done.Status, "SUCCESS"), "%+v\n%s", done, nz.Log())
		require.Equal(t, releases[up.name].ID, enclosureID(t, done.URL, feedKey), "NZBGet fetched the feed's enclosure: %q", done.URL)
		require.Equal(t, sums(up), nzbgettest.Files(t, done.DestDir), "NZBGet rebuilt %s's files with the posted bytes; its log:\n%s",
			up.name, nz.Log())
		t.Logf("NZBGet rebuilt %s from the feed (%s, %s): %d files, every SHA-256 the original's", up.name, done.Status,
			filepath.Base(done.DestDir), len(up.files))
	}

	// 3. An episode and a movie are posted and indexed.
	e02 := tvRelease(rng, "Some.Show.S01E02.720p.HDTV.x264-GRP", group)
	movie := upRelease{name: "Other.Movie.2023.1080p.BluRay.x264-FLM", poster: "Film Poster <films@example.test>", groups: []string{group},
		files: []upFile{
			{name: "Other.Movie.2023.1080p.BluRay.x264-FLM.part01.rar", data: testContent(rng, 12_000)},
			{name: "Other.Movie.2023.1080p.BluRay.x264-FLM.part02.rar", data: testContent(rng, 5_000)},
		}}
	arts := append(releaseArticles(rng, e02, 4_000, start.Add(time.Minute)), releaseArticles(rng, movie, 4_000, start.Add(2*time.Minute))...)
	rng.Shuffle(len(arts), func(i, j int) { arts[i], arts[j] = arts[j], arts[i] })
	inn.Post(t, arts)
	require.Eventually(t, func() bool { return settled(t, store, map[string]int64{group: int64(texts + len(arts))}) },
		45*time.Second, 50*time.Millisecond, "the tail indexes both releases and the builder builds them")
	found := search(t, api+"t=search", "search.xml")
	require.Equal(t, []string{movie.name, e02.name}, found.titles(), "newest first")
	tv := search(t, api+"t=search&cat=5000", "tv.xml")
	require.Equal(t, []string{e02.name}, tv.titles(), "cat=5000 keeps the movie out")
	require.Equal(t, []string{"5000", "5040"}, tv.Items[0].attr("category"))
	require.Equal(t, 1, tv.Response.Total)
	for _, it := range found.Items {
		id, err := strconv.ParseInt(it.attr("guid")[0], 10, 64)
		require.NoError(t, err)
		r, err := store.ReleaseByID(t.Context(), id)
		require.NoError(t, err)
		require.Equal(t, it.Title, r.Name)
		releases[r.Name] = r
	}
	require.Equal(t, 5040, releases[e02.name].Category, "the episode is TV HD")
	require.NotEqual(t, 5, releases[movie.name].Category/1000, "the movie is no TV: %d", releases[movie.name].Category)

	// 4. NZBGet finds the episode in its feed, and only it.
	n, _ := requests()
	nz.FetchFeed(t, 1)
	require.Eventually(t, func() bool { m, _ := requests(); return m > n }, 30*time.Second, 50*time.Millisecond, "fetchfeed fetches")
	downloaded(e02)

	// 5. A new episode: the tail reads it, search finds it by itself,
	// and NZBGet gets it from the feed.
	e03 := tvRelease(rng, "Some.Show.S01E03.720p.HDTV.x264-GRP", group)
	inn.Post(t, releaseArticles(rng, e03, 4_000, start.Add(time.Hour)))
	var ep rss
	require.Eventually(t, func() bool {
		ep = search(t, api+"t=tvsearch&q=some+show&season=1&ep=3", "tvsearch.xml")
		return len(ep.Items) > 0
	}, 45*time.Second, 100*time.Millisecond, "the tail indexes the new episode")
	require.Equal(t, []string{e03.name}, ep.titles(), "season 1 episode 3 alone")
	id, err := strconv.ParseInt(ep.Items[0].attr("guid")[0], 10, 64)
	require.NoError(t, err)
	releases[e03.name], err = store.ReleaseByID(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, 5040, releases[e03.name].Category)
	require.Equal(t, &release.Episode{Season: 1, Episode: 3}, releases[e03.name].Episode)
	require.Equal(t, []string{"1"}, ep.Items[0].attr("season"))
	require.Equal(t, []string{"3"}, ep.Items[0].attr("episode"))
	require.Equal(t, []string{e02.name}, search(t, api+"t=tvsearch&q=some+show&season=1&ep=2", "tvsearch2.xml").titles())
	require.Equal(t, []string{e03.name, e02.name}, search(t, api+"t=tvsearch&q=some+show&season=1", "season.xml").titles())
	n, _ = requests()
	nz.FetchFeed(t, 1)
	require.Eventually(t, func() bool { m, _ := requests(); return m > n }, 30*time.Second, 50*time.Millisecond, "fetchfeed fetches")
	downloaded(e03)

	// Nothing but the episodes was ever queued, and the store counted
	// NZBGet's two grabs.
	watch()
	t.Logf("NZBGet's queue and history showed: %v", keys(seen))
	for s := range seen {
		require.True(t, strings.Contains(s, e02.name) || strings.Contains(s, e03.name), "NZBGet queued only the episodes: %q", s)
		require.NotContains(t, s, movie.name)
	}
	_, grabs := requests()
	require.Equal(t, int64(2), grabs, "NZBGet's user grabbed two NZBs")
	all := search(t, api+"t=search", "all.xml")
	got := map[string]string{}
	for _, it := range all.Items {
		got[it.Title] = it.attr("grabs")[0]
	}
	require.Equal(t, map[string]string{e02.name: "1", e03.name: "1", movie.name: "0"}, got, "grabs")
	nz.Shutdown(t)
	require.Equal(t, []string{e03.name, e02.name}, search(t, tvFeed, "nzbget-feed.xml").titles(),
		"the feed NZBGet reads: the episodes, newest first")

	// Every NZB the feed points to is well-formed and valid NZB 1.1.
	dtd, err := filepath.Abs("../../nzb/testdata/nzb-1.1.dtd")
	require.NoError(t, err)
	for _, it := range all.Items {
		require.True(t, strings.HasPrefix(it.Enclosure.URL, serve.nz+"/api?"), it.Enclosure.URL)
		u, err := url.Parse(it.Enclosure.URL)
		require.NoError(t, err)
		require.Equal(t, key, u.Query().Get("apikey"), "the enclosure carries the key")
		name := fmt.Sprintf("%s.nzb", it.attr("guid")[0])
		doc := apiGet(t, it.Enclosure.URL, name, http.StatusOK, "application/x-nzb")
		file := filepath.Join(t.TempDir(), name)
		require.NoError(t, os.WriteFile(file, doc, 0o600))
		nzbgettest.Validate(t, dtd, file)
	}
	missing := apiGet(t, api+"t=get&id=999999", "missing.xml", http.StatusOK, "text/xml")
	require.Contains(t, string(missing), `code="300"`)

	stopWorkers()
	serve.stop(t)
	require.True(t, slices.ContainsFunc(strings.Split(nz.Log(), "\n"), func(l string) bool { return strings.Contains(l, "new item") }),
		"NZBGet's log tells of new items")
}
