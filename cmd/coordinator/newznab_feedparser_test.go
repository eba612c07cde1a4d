package main

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path"
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

// systemPython is Debian's Python, which python3-feedparser installs into.
const systemPython = "/usr/bin/python3"

// requireFeedparser skips the test unless Debian's python3-feedparser is
// importable by /usr/bin/python3; under EDGEINDEX_REQUIRE_NZBGET=1 it
// fails instead.
func requireFeedparser(t *testing.T) {
	t.Helper()
	out, err := exec.Command(systemPython, "-c", "import feedparser").CombinedOutput()
	if err == nil {
		return
	}
	if os.Getenv(nzbgettest.RequireEnv) == "1" {
		t.Fatalf("feedparser is required (%s=1): apt-get install python3-feedparser: %v\n%s", nzbgettest.RequireEnv, err, out)
	}
	t.Skipf("no feedparser for %s (apt-get install python3-feedparser): %v\n%s", systemPython, err, out)
}

// fpFeed is what testdata/sabnzbd_feedparser.py prints of a feed.
type fpFeed struct {
	Bozo          bool   `json:"bozo"`
	BozoException string `json:"bozo_exception"`
	Status        int    `json:"status"`
	Version       string `json:"version"`
	Title         string `json:"title"`
	Entries       []struct {
		Title         string `json:"title"`
		Link          string `json:"link"`
		ID            string `json:"id"`
		Published     string `json:"published"`
		PublishedUnix int64  `json:"published_unix"`
		Category      string `json:"category"`
		Enclosures    []struct {
			Href   string `json:"href"`
			Length string `json:"length"`
			Type   string `json:"type"`
		} `json:"enclosures"`
		// Newznab is the entry's attrs as SABnzbd keeps them: the last
		// value of each name.
		Newznab        map[string]string `json:"newznab"`
		UsenetdateUnix int64             `json:"usenetdate_unix"`
		// Attrs are every attr, name and value, in order.
		Attrs [][2]string `json:"attrs"`
	} `json:"entries"`
}

// TestFeedparserReadsSearchFeed reads serve's search feed with the parser
// SABnzbd uses, Debian's python3-feedparser, patched as SABnzbd patches
// it (the newznab namespace and its attr handler; see
// testdata/sabnzbd_feedparser.py), and checks every value it reads
// against the store: four releases (an episode, a daily show, a movie
// cross-posted to two groups, an ebook; posters with quotes, "&" and
// "<") posted into INN and indexed by serve --source nntp:// with
// collating workers; the episode's NZB grabbed twice first. Each entry's
// title, link, id, published date and enclosure (url, length, type), and
// every newznab:attr (category parent and subcategory, size, files,
// grabs, poster, group, usenetdate, guid, password, season, episode) must
// be the store's. Every document fetched is well-formed (xmllint).
func TestFeedparserReadsSearchFeed(t *testing.T) {
	t.Parallel()
	requireFeedparser(t)
	nzbgettest.RequireINN(t)
	nzbgettest.XMLLint(t)
	const group, other = "alt.binaries.edgeindex.feed", "alt.binaries.edgeindex.films"
	inn := inntest.Start(t)
	inn.NewGroup(t, group)
	inn.NewGroup(t, other)

	rng := rand.New(rand.NewPCG(18, 2))
	base := time.Now().UTC().Truncate(time.Second).Add(-3 * time.Hour)
	ups := []upRelease{
		{name: "Some.Show.S02E05.1080p.WEB.h264-GRP", poster: `"Shows & Co" <shows@example.test>`, groups: []string{group}, files: []upFile{
			{name: "Some.Show.S02E05.1080p.WEB.h264-GRP.part01.rar", data: testContent(rng, 9_000)},
			{name: "Some.Show.S02E05.1080p.WEB.h264-GRP.part02.rar", data: testContent(rng, 3_000)},
			{name: "Some.Show.S02E05.1080p.WEB.h264-GRP.par2", data: testContent(rng, 800)},
		}},
		{name: "Some.Talk.Show.2026.11.29.720p.WEB.h264-GRP", poster: "talk@example.test (Talk <Poster>)", groups: []string{group}, files: []upFile{
			{name: "Some.Talk.Show.2026.11.29.720p.WEB.h264-GRP.part01.rar", data: testContent(rng, 7_000)},
			{name: "Some.Talk.Show.2026.11.29.720p.WEB.h264-GRP.part02.rar", data: testContent(rng, 2_000)},
		}},
		{name: "Other.Movie.2023.1080p.BluRay.x264-FLM", poster: "Film Poster <films@example.test>", groups: []string{group, other}, files: []upFile{
			{name: "Other.Movie.2023.1080p.BluRay.x264-FLM.part01.rar", data: testContent(rng, 8_000)},
			{name: "Other.Movie.2023.1080p.BluRay.x264-FLM.part02.rar", data: testContent(rng, 4_000)},
		}},
		{name: "Some.Author.A.Book.Title.2024.RETAIL.EPUB.eBook-BKS", poster: "Books <books@example.test>", groups: []string{group}, files: []upFile{
			{name: "Some.Author.A.Book.Title.2024.RETAIL.EPUB.eBook-BKS.rar", data: testContent(rng, 6_000)},
			{name: "Some.Author.A.Book.Title.2024.RETAIL.EPUB.eBook-BKS.nfo", data: []byte("A Book Title\r\n.by Some Author\r\n")},
		}},
	}
	var arts []inntest.Article
	for i, up := range ups {
		arts = append(arts, releaseArticles(rng, up, 3_000, base.Add(time.Duration(i)*time.Minute))...)
	}
	rng.Shuffle(len(arts), func(i, j int) { arts[i], arts[j] = arts[j], arts[i] })
	inn.Post(t, arts)

	data := t.TempDir()
	token, err := run(t, data, "node", "add", "edge-1")
	require.NoError(t, err)
	for _, g := range []string{group, other} {
		_, err = run(t, data, "group", "add", g, "--range-size", "40", "--chunk-size", "20", "--plan", "tail,history")
		require.NoError(t, err)
	}
	key := addUser(t, data, "sabnzbd")
	// Post-processing off: it could change a release's attrs between the
	// store's read below and the feed's.
	serve := startNewznabServe(t, data, "--postproc=false", "--source", "nntp://"+inn.Addr(), "--nntp-conns", "2", "--poll", "50ms",
		"--repair-delay", "10ms", "--release-interval", "50ms")
	stopWorkers := startCollators(t, serve.base, token, 2)
	store, err := sqlstore.Open(t.Context(), "sqlite://"+data+"/edgeindex.db", sqlstore.Config{})
	require.NoError(t, err)
	defer store.Close()

	api := serve.nz + "/api?apikey=" + url.QueryEscape(key) + "&"
	// Every article indexed and every release built: the movie is in
	// both groups only once both are read.
	want := map[string]int64{}
	for _, a := range arts {
		for _, g := range strings.Split(a.Newsgroups, ",") {
			want[g]++
		}
	}
	require.Eventually(t, func() bool { return settled(t, store, want) }, 45*time.Second, 50*time.Millisecond,
		"indexing and release building settle")
	found := search(t, api+"t=search", "search.xml")
	require.Len(t, found.Items, len(ups), "%v", found.titles())
	apiGet(t, serve.nz+"/api?t=caps", "caps.xml", http.StatusOK, "text/xml")

	// The store's releases are what was posted.
	stored := map[int64]release.Release{}
	byName := map[string]release.Release{}
	for _, it := range found.Items {
		id, err := strconv.ParseInt(it.attr("guid")[0], 10, 64)
		require.NoError(t, err)
		r, err := store.ReleaseByID(t.Context(), id)
		require.NoError(t, err)
		byName[r.Name] = r
	}
	for _, up := range ups {
		r, ok := byName[up.name]
		require.True(t, ok, "%s was built: %v", up.name, keys(byName))
		require.Equal(t, up.poster, r.Poster)
		require.Equal(t, slices.Sorted(slices.Values(up.groups)), r.Groups)
		require.True(t, r.Complete)
		require.Len(t, r.Files, len(up.files))
		require.Equal(t, len(up.files), r.FilesSeen)
		var size int64
		for _, f := range r.Files {
			size += f.Bytes
		}
		require.Equal(t, size, r.Bytes)
	}
	tv, daily := byName[ups[0].name], byName[ups[1].name]
	require.Equal(t, 5040, tv.Category, "an HD episode")
	require.Equal(t, &release.Episode{Season: 2, Episode: 5}, tv.Episode)
	require.Equal(t, 5, daily.Category/1000, "a daily show is TV: %d", daily.Category)
	require.Equal(t, &release.Episode{Season: 2026, Episode: 1129, Daily: true}, daily.Episode)
	require.Equal(t, 2, byName[ups[2].name].Category/1000, "a movie: %d", byName[ups[2].name].Category)
	require.Equal(t, 7, byName[ups[3].name].Category/1000, "a book: %d", byName[ups[3].name].Category)

	// Two grabs of the episode's NZB.
	for range 2 {
		apiGet(t, api+"t=get&id="+strconv.FormatInt(tv.ID, 10), "grab.nzb", http.StatusOK, "application/x-nzb")
	}
	for _, r := range byName {
		r, err := store.ReleaseByID(t.Context(), r.ID)
		require.NoError(t, err)
		stored[r.ID] = r
	}
	require.Equal(t, int64(2), stored[tv.ID].Grabs)

	// feedparser reads the feed; the same document is well-formed.
	feedURL := api + "t=search"
	all := search(t, feedURL, "feed.xml")
	require.Equal(t, len(ups), all.Response.Total)
	out, err := exec.Command(systemPython, "testdata/sabnzbd_feedparser.py", feedURL).Output()
	require.NoError(t, err, "%s", out)
	var fp fpFeed
	require.NoError(t, json.Unmarshal(out, &fp), "%s", out)
	require.False(t, fp.Bozo, "feedparser finds the feed well-formed: %s", fp.BozoException)
	require.Equal(t, http.StatusOK, fp.Status)
	require.Equal(t, "rss20", fp.Version)
	require.NotEmpty(t, fp.Title)
	require.Len(t, fp.Entries, len(ups))

	checked := map[string]int{}
	for i, e := range fp.Entries {
		// The entry's id is the release's page; its last path segment
		// the release id, which the guid attr gives too.
		u, err := url.Parse(e.ID)
		require.NoError(t, err)
		id, err := strconv.ParseInt(path.Base(u.Path), 10, 64)
		require.NoError(t, err, "the id %q ends in the release id", e.ID)
		r, ok := stored[id]
		require.True(t, ok, "entry %d: release %d", i, id)
		require.Equal(t, r.Name, e.Title)
		require.Equal(t, all.Items[i].Title, e.Title, "the feed's order, newest first")
		require.Equal(t, r.Posted.Unix(), e.PublishedUnix, "%s: published %q", r.Name, e.Published)
		require.NotEmpty(t, e.Category)

		require.Len(t, e.Enclosures, 1)
		enc := e.Enclosures[0]
		require.Equal(t, "application/x-nzb", enc.Type)
		require.Equal(t, strconv.FormatInt(r.Bytes, 10), enc.Length)
		require.Equal(t, enc.Href, e.Link, "the link is the NZB too")
		get, err := url.Parse(enc.Href)
		require.NoError(t, err)
		require.Equal(t, serve.nz+"/api", get.Scheme+"://"+get.Host+get.Path)
		require.Equal(t, url.Values{"t": {"get"}, "id": {strconv.FormatInt(r.ID, 10)}, "apikey": {key}}, get.Query())

		// Every attr, against the store.
		parent := r.Category / 1000 * 1000
		want := map[string][]string{
			"category":   {strconv.Itoa(parent), strconv.Itoa(r.Category)},
			"size":       {strconv.FormatInt(r.Bytes, 10)},
			"files":      {strconv.Itoa(r.FilesSeen)},
			"grabs":      {strconv.FormatInt(r.Grabs, 10)},
			"poster":     {r.Poster},
			"group":      r.Groups,
			"usenetdate": {r.Posted.UTC().Format(time.RFC1123Z)},
			"guid":       {strconv.FormatInt(r.ID, 10)},
			"password":   {"0"},
			"nfo":        {"0"},
		}
		if parent == r.Category {
			want["category"] = want["category"][1:]
		}
		if ep := r.Episode; ep != nil {
			want["season"] = []string{strconv.Itoa(ep.Season)}
			switch {
			case ep.Daily:
				want["episode"] = []string{strconv.Itoa(ep.Episode/100) + "/" + strconv.Itoa(ep.Episode%100)}
			case ep.Episode != 0:
				want["episode"] = []string{strconv.Itoa(ep.Episode)}
			}
		}
		got := map[string][]string{}
		for _, a := range e.Attrs {
			got[a[0]] = append(got[a[0]], a[1])
			checked[a[0]]++
		}
		if ep := r.Episode; ep != nil && ep.Daily {
			// A daily episode is MM/DD, zero-padded or not: compare
			// the numbers.
			if eps := got["episode"]; len(eps) == 1 {
				m, d, _ := strings.Cut(eps[0], "/")
				mi, _ := strconv.Atoi(m)
				di, _ := strconv.Atoi(d)
				got["episode"] = []string{strconv.Itoa(mi) + "/" + strconv.Itoa(di)}
			}
		}
		require.Equal(t, want, got, "%s: every newznab:attr is the store's", r.Name)
		require.Equal(t, r.Posted.Unix(), e.UsenetdateUnix, "%s: feedparser reads usenetdate", r.Name)

		// SABnzbd's own view: the last value of each name.
		for name, vs := range want {
			require.Equal(t, vs[len(vs)-1], e.Newznab[name], "%s: SABnzbd reads %s", r.Name, name)
		}
	}
	t.Logf("feedparser read %d entries; attrs checked: %v", len(fp.Entries), checked)

	// A search the parser reads with no entries, and an error it is
	// given: both well-formed.
	none := search(t, api+"t=search&q=nothing+matches+this", "none.xml")
	require.Empty(t, none.Items)
	require.Contains(t, string(apiGet(t, api+"t=nosuch", "nosuch.xml", http.StatusOK, "text/xml")), `code="202"`)

	stopWorkers()
	serve.stop(t)
}
