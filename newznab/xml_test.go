package newznab

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"net/url"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/internal/nzbgettest"
	"github.com/edgeindex/edgeindex/nzb"
	"github.com/edgeindex/edgeindex/release"
)

// The documents as a client reads them back.

type rssDoc struct {
	XMLName xml.Name `xml:"rss"`
	Version string   `xml:"version,attr"`
	Channel struct {
		Title    string `xml:"title"`
		Link     string `xml:"link"`
		Response struct {
			Offset string `xml:"offset,attr"`
			Total  string `xml:"total,attr"`
		} `xml:"http://www.newznab.com/DTD/2010/feeds/attributes/ response"`
		APILimits struct {
			APICurrent  string `xml:"apicurrent,attr"`
			APIMax      string `xml:"apimax,attr"`
			GrabCurrent string `xml:"grabcurrent,attr"`
			GrabMax     string `xml:"grabmax,attr"`
		} `xml:"http://www.newznab.com/DTD/2010/feeds/attributes/ apilimits"`
		Items []rssItem `xml:"item"`
	} `xml:"channel"`
}

type rssItem struct {
	Title string `xml:"title"`
	GUID  struct {
		PermaLink string `xml:"isPermaLink,attr"`
		Value     string `xml:",chardata"`
	} `xml:"guid"`
	Link        string `xml:"link"`
	Comments    string `xml:"comments"`
	PubDate     string `xml:"pubDate"`
	Category    string `xml:"category"`
	Description string `xml:"description"`
	Enclosure   struct {
		URL    string `xml:"url,attr"`
		Length string `xml:"length,attr"`
		Type   string `xml:"type,attr"`
	} `xml:"enclosure"`
	Attrs []struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	} `xml:"http://www.newznab.com/DTD/2010/feeds/attributes/ attr"`
}

// attrs returns an item's newznab attrs by name, in order.
func (it rssItem) attrs() map[string][]string {
	m := map[string][]string{}
	for _, a := range it.Attrs {
		m[a.Name] = append(m[a.Name], a.Value)
	}
	return m
}

type capsDocXML struct {
	XMLName xml.Name `xml:"caps"`
	Server  struct {
		Version string `xml:"version,attr"`
		Title   string `xml:"title,attr"`
		URL     string `xml:"url,attr"`
	} `xml:"server"`
	Limits struct {
		Max     string `xml:"max,attr"`
		Default string `xml:"default,attr"`
	} `xml:"limits"`
	Registration struct {
		Available string `xml:"available,attr"`
		Open      string `xml:"open,attr"`
	} `xml:"registration"`
	Searching struct {
		Items []struct {
			XMLName   xml.Name
			Available string `xml:"available,attr"`
			Params    string `xml:"supportedParams,attr"`
		} `xml:",any"`
	} `xml:"searching"`
	Categories []struct {
		ID   string `xml:"id,attr"`
		Name string `xml:"name,attr"`
		Subs []struct {
			ID   string `xml:"id,attr"`
			Name string `xml:"name,attr"`
		} `xml:"subcat"`
	} `xml:"categories>category"`
}

type errorDocXML struct {
	XMLName     xml.Name `xml:"error"`
	Code        string   `xml:"code,attr"`
	Description string   `xml:"description,attr"`
}

// wellFormed reads every token of doc strictly.
func wellFormed(t testing.TB, doc []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		require.NoError(t, err, "%s", doc)
	}
}

func decode[T any](t testing.TB, doc []byte) T {
	t.Helper()
	wellFormed(t, doc)
	var v T
	require.NoError(t, xml.Unmarshal(doc, &v), "%s", doc)
	return v
}

// xmllint checks each document with xmllint --noout, in a subtest that
// skips without xmllint (fails under EDGEINDEX_REQUIRE_NZBGET=1).
func xmllint(t *testing.T, docs ...[]byte) {
	t.Helper()
	t.Run("xmllint", func(t *testing.T) {
		path := nzbgettest.XMLLint(t)
		for _, doc := range docs {
			cmd := exec.Command(path, "--noout", "--nonet", "-")
			cmd.Stdin = bytes.NewReader(doc)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "xmllint: %s\n%s", out, doc)
		}
	})
}

// nameBeforeValue: NZBGet reads an attr's name before its value.
var attrOrder = regexp.MustCompile(`<newznab:attr [^>]*>`)
var attrShape = regexp.MustCompile(`^<newznab:attr name="[^"]*" value="[^"]*"/>$`)

func checkAttrOrder(t testing.TB, doc []byte) {
	t.Helper()
	for _, m := range attrOrder.FindAll(doc, -1) {
		require.Regexp(t, attrShape, string(m))
	}
}

func TestCapsDoc(t *testing.T) {
	doc := capsDoc(capsInfo{Title: `Mine & "yours" <x>`, Base: "http://h:1/nz", Max: 100, Default: 50})
	c := decode[capsDocXML](t, doc)
	require.Equal(t, "1.0", c.Server.Version)
	require.Equal(t, `Mine & "yours" <x>`, c.Server.Title)
	require.Equal(t, "http://h:1/nz/", c.Server.URL)
	require.Equal(t, "100", c.Limits.Max)
	require.Equal(t, "50", c.Limits.Default)
	require.Equal(t, "no", c.Registration.Available)
	require.Equal(t, "no", c.Registration.Open)
	got := map[string]string{}
	for _, s := range c.Searching.Items {
		got[s.XMLName.Local] = s.Available + " " + s.Params
	}
	require.Equal(t, map[string]string{
		"search": "yes q", "tv-search": "yes q,season,ep", "movie-search": "yes q",
		"audio-search": "no q", "book-search": "no q",
	}, got)
	require.Len(t, c.Categories, 8)
	names := map[string]string{}
	for _, p := range c.Categories {
		names[p.ID] = p.Name
		for _, s := range p.Subs {
			names[s.ID] = p.Name + " > " + s.Name
			n, err := strconv.Atoi(s.ID)
			require.NoError(t, err)
			require.Equal(t, p.ID, strconv.Itoa(parentOf(n)))
		}
	}
	require.Equal(t, "TV > HD", names["5040"])
	require.Equal(t, "Movies > UHD", names["2045"])
	require.Equal(t, "Books > Comics", names["7030"])
	require.Equal(t, "Other > Hashed", names["8020"])
	require.Equal(t, "Console", names["1000"])
	xmllint(t, doc)
}

func TestErrorDoc(t *testing.T) {
	var docs [][]byte
	for _, e := range []*apiError{
		errorf(codeRequestLimit, "Request limit reached"),
		errorf(codeNoFunction, "No such function (t=%s)", "<\x00\xff&\"'\r\n"),
	} {
		doc := errorDoc(e)
		require.True(t, bytes.HasPrefix(doc, []byte(`<?xml version="1.0" encoding="UTF-8"?>`)))
		got := decode[errorDocXML](t, doc)
		require.Equal(t, strconv.Itoa(e.Code), got.Code)
		require.Equal(t, nzb.Text(e.Description), got.Description)
		docs = append(docs, doc)
	}
	xmllint(t, docs...)
}

func TestCategoryName(t *testing.T) {
	for id, want := range map[int]string{5040: "TV > HD", 5000: "TV", 5999: "TV", 8010: "Other > Misc", 9000: "Other", 0: "Other", 4010: "PC > 0day"} {
		require.Equal(t, want, CategoryName(id), id)
	}
	cats := Categories()
	cats[0].Name = "changed"
	cats[1].Subs[0].Name = "changed"
	require.Equal(t, "Console", CategoryName(1000))
	require.Equal(t, "Movies > SD", CategoryName(2030))
	require.Equal(t, "Movies", CategoryName(2010), "a standard category no release gets is named by its parent")
	for _, p := range Categories() {
		for _, s := range p.Subs {
			name, ok := release.CategoryName(s.ID)
			require.True(t, ok, "caps lists %d, which Categorize never gives", s.ID)
			require.Equal(t, name, CategoryName(s.ID))
		}
	}
}

// sampleRelease is a release as a listing gives it.
func sampleRelease(id int64, name, poster string, groups ...string) release.Release {
	posted := time.Date(2026, 11, 29, 20, 15, 0, 0, time.UTC)
	return release.Release{ID: id, Name: name, Poster: poster, Groups: groups, Posted: posted, Last: posted,
		FilesSeen: 12, FilesComplete: 12, FilesExpected: 12, Complete: true, Bytes: 123456789,
		Category: 5040, Episode: &release.Episode{Season: 1, Episode: 2}, Grabs: 3}
}

func TestFeedDoc(t *testing.T) {
	hostile := "Evil <b>&amp;</b> \"q\" 'a' ]]> \x00\x01\x1f\x7f \xff\xfe \uFFFE\uFFFF \r\n\tend"
	daily := sampleRelease(8, "Daily.Show.2026.03.05.720p", "p@x")
	daily.Episode = &release.Episode{Season: 2026, Episode: 305, Daily: true}
	daily.Category = 8000
	pack := sampleRelease(9, "Show.S02.1080p", "p@x", "alt.binaries.tv")
	pack.Episode = &release.Episode{Season: 2}
	none := sampleRelease(10, "Film.2026", "p@x", "alt.binaries.movies")
	none.Episode, none.Category, none.Posted = nil, 2040, time.Time{}
	none.Updated = time.Date(2026, 11, 1, 1, 2, 3, 0, time.FixedZone("x", 3600))
	f := feed{
		Title: "edgeindex", Base: "http://127.0.0.1:5076/nz", Key: "k&y=1 /+",
		Offset: 100, Total: 1234,
		Account: Account{Name: "u", Requests: 7, RequestLimit: 100, Grabs: 2},
		Releases: []release.Release{
			sampleRelease(7, hostile, hostile, "alt.binaries.tv", hostile),
			daily, pack, none,
		},
	}
	doc := feedDoc(f)
	require.Contains(t, string(doc), `xmlns:newznab="`+Namespace+`"`)
	checkAttrOrder(t, doc)
	got := decode[rssDoc](t, doc)
	require.Equal(t, "2.0", got.Version)
	require.Equal(t, "edgeindex", got.Channel.Title)
	require.Equal(t, "100", got.Channel.Response.Offset)
	require.Equal(t, "1234", got.Channel.Response.Total)
	require.Equal(t, "7", got.Channel.APILimits.APICurrent)
	require.Equal(t, "100", got.Channel.APILimits.APIMax)
	require.Equal(t, "2", got.Channel.APILimits.GrabCurrent)
	require.Empty(t, got.Channel.APILimits.GrabMax, "no grab limit: no grabmax")
	require.Len(t, got.Channel.Items, 4)

	it := got.Channel.Items[0]
	require.Equal(t, nzb.Text(hostile), it.Title)
	require.Equal(t, "true", it.GUID.PermaLink)
	require.Equal(t, "http://127.0.0.1:5076/nz/details/7", it.GUID.Value)
	get := "http://127.0.0.1:5076/nz/api?t=get&id=7&apikey=" + url.QueryEscape("k&y=1 /+")
	require.Equal(t, get, it.Link)
	require.Equal(t, "http://127.0.0.1:5076/nz/details/7#comments", it.Comments)
	require.Equal(t, "Sun, 29 Nov 2026 20:15:00 +0000", it.PubDate)
	pub, err := time.Parse(time.RFC1123Z, it.PubDate)
	require.NoError(t, err)
	require.True(t, pub.Equal(f.Releases[0].Posted))
	require.Equal(t, "TV > HD", it.Category)
	require.Equal(t, get, it.Enclosure.URL)
	u, err := url.Parse(it.Enclosure.URL)
	require.NoError(t, err)
	require.Equal(t, "k&y=1 /+", u.Query().Get("apikey"))
	require.Equal(t, "7", u.Query().Get("id"))
	require.Equal(t, "123456789", it.Enclosure.Length)
	require.Equal(t, "application/x-nzb", it.Enclosure.Type)
	require.Equal(t, map[string][]string{
		"category":   {"5000", "5040"},
		"size":       {"123456789"},
		"files":      {"12"},
		"grabs":      {"3"},
		"poster":     {nzb.Text(hostile)},
		"group":      {"alt.binaries.tv", nzb.Text(hostile)},
		"usenetdate": {"Sun, 29 Nov 2026 20:15:00 +0000"},
		"guid":       {"7"},
		"password":   {"0"},
		"nfo":        {"0"},
		"season":     {"1"},
		"episode":    {"2"},
	}, it.attrs())

	a := got.Channel.Items[1].attrs()
	require.Equal(t, []string{"2026"}, a["season"])
	require.Equal(t, []string{"03/05"}, a["episode"])
	require.Equal(t, []string{"8000"}, a["category"], "a parent category is one attr")
	require.Equal(t, "Other", got.Channel.Items[1].Category)
	require.Nil(t, a["group"])

	a = got.Channel.Items[2].attrs()
	require.Equal(t, []string{"2"}, a["season"])
	require.Nil(t, a["episode"], "a season pack has no episode")

	it = got.Channel.Items[3]
	a = it.attrs()
	require.Nil(t, a["season"])
	require.Nil(t, a["episode"])
	require.Equal(t, "Sun, 01 Nov 2026 00:02:03 +0000", it.PubDate, "no posting date: the update's, in UTC")
	require.Equal(t, "Movies > HD", it.Category)

	empty := feedDoc(feed{Title: "edgeindex", Base: "http://h"})
	e := decode[rssDoc](t, empty)
	require.Empty(t, e.Channel.Items)
	require.Equal(t, "0", e.Channel.Response.Total)
	xmllint(t, doc, empty)
}

func TestHeaderText(t *testing.T) {
	require.Equal(t, "a  b � c�", headerText("a\r\nb \xff c\x00"))
	// A poster's name reaches the downloader, which shows it and names a
	// directory after it: no C1 control, no bidi override or other format
	// character, no line or paragraph separator turns it around.
	require.Equal(t, "Show gpj.exe x y z", headerText("Show\u202egpj.exe\u0085x\u2028y\u2029z\u200b"))
	long := headerText(string(bytes.Repeat([]byte("é"), nzb.MaxFileName)))
	require.LessOrEqual(t, len(long), nzb.MaxFileName)
	require.True(t, utf8Valid(long))
}

func utf8Valid(s string) bool { return string([]rune(s)) == s }

// For the external tests (api_test.go, example_test.go), which import
// sqlstore and so cannot be in this package.
type (
	RSSDoc   = rssDoc
	RSSItem  = rssItem
	CapsDoc  = capsDocXML
	ErrorDoc = errorDocXML
)

func Decode[T any](t testing.TB, doc []byte) T { t.Helper(); return decode[T](t, doc) }
func XMLLint(t *testing.T, docs ...[]byte)     { t.Helper(); xmllint(t, docs...) }
func CheckAttrOrder(t testing.TB, doc []byte)  { t.Helper(); checkAttrOrder(t, doc) }
func ItemAttrs(it rssItem) map[string][]string { return it.attrs() }

// feedparserScript reads a feed from stdin with feedparser, the parser
// SABnzbd uses, with the newznab namespace mapped and each attr kept by
// name (the last of a name wins), as SABnzbd does, and prints what it
// read as JSON.
const feedparserScript = `
import json, sys, feedparser
from feedparser.mixin import _FeedParserMixin as M
M.namespaces["http://www.newznab.com/DTD/2010/feeds/attributes/"] = "newznab"
def start_attr(self, attrs):
    ctx = self._get_context()
    ctx.setdefault("newznab", {})
    if "name" in attrs and "value" in attrs:
        ctx["newznab"][attrs["name"]] = attrs["value"]
M._start_newznab_attr = start_attr
d = feedparser.parse(sys.stdin.buffer.read())
out = {"bozo": int(d.bozo), "entries": []}
for e in d.entries:
    enc = e.enclosures[0] if e.enclosures else {}
    out["entries"].append({"title": e.title, "link": e.link, "url": enc.get("href", ""),
        "length": enc.get("length", ""), "type": enc.get("type", ""),
        "published": list(e.published_parsed[:6]), "attrs": e.get("newznab", {})})
json.dump(out, sys.stdout)
`

// TestFeedparser: feedparser, as SABnzbd sets it up, reads a feed with a
// hostile release whole, with its enclosure and newznab attrs. It skips
// without Debian's python3-feedparser.
func TestFeedparser(t *testing.T) {
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import feedparser").Run(); err != nil {
		t.Skipf("no feedparser for %s (apt-get install python3-feedparser): %v", python, err)
	}
	hostile := "Evil <b>&amp;</b> \"q\" ]]> \x01 \xff end"
	daily := sampleRelease(8, "Daily.Show.2026.11.29", "p@x", "alt.binaries.tv")
	daily.Episode = &release.Episode{Season: 2026, Episode: 1129, Daily: true}
	doc := feedDoc(feed{Title: "edgeindex", Base: "http://127.0.0.1:5076", Key: "0123abcd", Total: 2,
		Releases: []release.Release{sampleRelease(7, hostile, hostile, "alt.binaries.tv"), daily}})
	cmd := exec.Command(python, "-c", feedparserScript)
	cmd.Stdin = bytes.NewReader(doc)
	out, err := cmd.Output()
	require.NoError(t, err, "%s", out)
	var got struct {
		Bozo    int
		Entries []struct {
			Title, Link, URL, Length, Type string
			Published                      []int
			Attrs                          map[string]string
		}
	}
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	require.Zero(t, got.Bozo, "feedparser read the feed as well-formed")
	require.Len(t, got.Entries, 2)
	e := got.Entries[0]
	require.Equal(t, nzb.Text(hostile), e.Title)
	get := "http://127.0.0.1:5076/api?t=get&id=7&apikey=0123abcd"
	require.Equal(t, get, e.Link)
	require.Equal(t, get, e.URL)
	require.Equal(t, "123456789", e.Length)
	require.Equal(t, nzb.ContentType, e.Type)
	require.Equal(t, []int{2026, 11, 29, 20, 15, 0}, e.Published)
	require.Equal(t, "5040", e.Attrs["category"])
	require.Equal(t, "123456789", e.Attrs["size"])
	require.Equal(t, nzb.Text(hostile), e.Attrs["poster"])
	require.Equal(t, "7", e.Attrs["guid"])
	require.Equal(t, "1", e.Attrs["season"])
	require.Equal(t, "2", e.Attrs["episode"])
	require.Equal(t, "2026", got.Entries[1].Attrs["season"])
	require.Equal(t, "11/29", got.Entries[1].Attrs["episode"])
}
