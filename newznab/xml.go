package newznab

import (
	"bytes"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/edgeindex/edgeindex/nzb"
	"github.com/edgeindex/edgeindex/release"
)

// Namespace is the newznab attributes namespace of the feeds. Clients
// match it exactly and NZBGet also needs the prefix "newznab:".
const Namespace = "http://www.newznab.com/DTD/2010/feeds/attributes/"

// Content types of the API's answers.
const (
	FeedType = "application/rss+xml; charset=utf-8" // searches and details
	XMLType  = "text/xml; charset=utf-8"            // caps and errors
)

// prolog starts every XML document the API writes.
const prolog = `<?xml version="1.0" encoding="UTF-8"?>` + "\n"

var (
	textEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "\r", "&#13;")
	attrEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;",
		"\t", "&#9;", "\n", "&#10;", "\r", "&#13;")
)

// xmlText is s as XML character data: what nzb.Text makes of it (U+FFFD
// for what XML cannot carry), escaped, so that a reader reads back
// nzb.Text(s).
func xmlText(s string) string { return textEscaper.Replace(nzb.Text(s)) }

// xmlAttr is s as a double-quoted attribute value, read back as
// nzb.Text(s) (tabs and line ends are escaped, so they survive
// attribute-value normalization).
func xmlAttr(s string) string { return attrEscaper.Replace(nzb.Text(s)) }

// Bounds of what the handler writes for one release, whatever the store
// holds: a hostile name must not make a feed or a page huge.
const (
	// MaxField is the most bytes of one text of an item or a page row
	// (name, poster, group, file name), before XML or HTML escaping; a
	// longer one is cut on a character boundary and ends in "…".
	MaxField = 1 << 10
	// MaxGroups is the most groups written for one release.
	MaxGroups = 8
	// MaxFiles is the most files a details page lists; a line says how
	// many more there are.
	MaxFiles = 100
)

// ellipsis marks a text capText cut.
const ellipsis = "…"

// capText is clean(s) in at most MaxField bytes: when it is longer, the
// part of it that fits before an ellipsis, cut on a character boundary.
// Only the first MaxField bytes of s are ever cleaned.
func capText(s string, clean func(string) string) string {
	if len(s) <= MaxField {
		if t := clean(s); len(t) <= MaxField {
			return t
		}
	}
	n := min(len(s), MaxField)
	for i := 0; i < utf8.UTFMax-1 && n > 0 && n < len(s) && !utf8.RuneStart(s[n]); i++ {
		n--
	}
	t := clean(s[:n])
	n = min(len(t), MaxField-len(ellipsis))
	for n > 0 && n < len(t) && !utf8.RuneStart(t[n]) {
		n--
	}
	return t[:n] + ellipsis
}

// feedText is s as an item carries it: nzb.Text of it, capped.
func feedText(s string) string { return capText(s, nzb.Text) }

// writer builds one document.
type writer struct{ bytes.Buffer }

func (w *writer) raw(ss ...string) {
	for _, s := range ss {
		w.WriteString(s)
	}
}

// elem writes <name>text</name> on a line of its own.
func (w *writer) elem(indent, name, text string) {
	w.raw(indent, "<", name, ">", xmlText(text), "</", name, ">\n")
}

// attr writes ` name="value"`.
func (w *writer) attr(name, value string) {
	w.raw(" ", name, `="`, xmlAttr(value), `"`)
}

// newznabAttr writes <newznab:attr name value/>, name before value.
func (w *writer) newznabAttr(name, value string) {
	w.raw("   <newznab:attr")
	w.attr("name", name)
	w.attr("value", value)
	w.raw("/>\n")
}

// errorDoc returns the XML of a Newznab error.
func errorDoc(e *apiError) []byte {
	var w writer
	w.raw(prolog, "<error")
	w.attr("code", strconv.Itoa(e.Code))
	w.attr("description", e.Description)
	w.raw("/>\n")
	return w.Bytes()
}

// capsInfo is what caps tells.
type capsInfo struct {
	Title, Base  string
	Max, Default int
}

// Version is the server version caps gives.
const Version = "1.0"

// capsDoc returns the XML of caps: only the functions and parameters the
// API implements.
func capsDoc(c capsInfo) []byte {
	var w writer
	w.raw(prolog, "<caps>\n  <server")
	w.attr("version", Version)
	w.attr("title", c.Title)
	w.attr("strapline", "Usenet releases, indexed by edgeindex")
	w.attr("url", c.Base+"/")
	w.raw("/>\n  <limits")
	w.attr("max", strconv.Itoa(c.Max))
	w.attr("default", strconv.Itoa(c.Default))
	w.raw("/>\n")
	w.raw(`  <registration available="no" open="no"/>`, "\n")
	w.raw("  <searching>\n")
	for _, s := range []struct{ name, available, params string }{
		{"search", "yes", "q"},
		{"tv-search", "yes", "q,season,ep"},
		{"movie-search", "yes", "q"},
		{"audio-search", "no", "q"},
		{"book-search", "no", "q"},
	} {
		w.raw("    <", s.name)
		w.attr("available", s.available)
		w.attr("supportedParams", s.params)
		w.raw("/>\n")
	}
	w.raw("  </searching>\n  <categories>\n")
	for _, p := range categories {
		w.raw("    <category")
		w.attr("id", strconv.Itoa(p.ID))
		w.attr("name", p.Name)
		if len(p.Subs) == 0 {
			w.raw("/>\n")
			continue
		}
		w.raw(">\n")
		for _, s := range p.Subs {
			w.raw("      <subcat")
			w.attr("id", strconv.Itoa(s.ID))
			w.attr("name", s.Name)
			w.raw("/>\n")
		}
		w.raw("    </category>\n")
	}
	w.raw("  </categories>\n</caps>\n")
	return w.Bytes()
}

// feed is what a search or details answers.
type feed struct {
	Title string // the indexer's
	Base  string // the base URL links carry
	Key   string // the API key the get links carry
	// Offset and Total are the page's offset and the matches in all.
	Offset, Total int
	Account       Account
	Releases      []release.Release
}

// detailsURL is the page's URL of release id.
func detailsURL(base string, id int64) string {
	return base + "/details/" + strconv.FormatInt(id, 10)
}

// boolAttr is a flag attr's value: "1" or "0".
func boolAttr(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// getURL is the API URL of release id's NZB, carrying the key.
func getURL(base, key string, id int64) string {
	return base + "/api?t=get&id=" + strconv.FormatInt(id, 10) + "&apikey=" + url.QueryEscape(key)
}

// date formats t as RFC 1123 with a numeric zone, in UTC.
func date(t time.Time) string { return t.UTC().Format(time.RFC1123Z) }

// feedDoc returns the RSS 2.0 document of f, in the newznab namespace.
func feedDoc(f feed) []byte {
	var w writer
	w.raw(prolog, `<rss version="2.0" xmlns:newznab="`, Namespace, `">`, "\n <channel>\n")
	w.elem("  ", "title", f.Title)
	w.elem("  ", "description", f.Title+" Newznab feed")
	w.elem("  ", "link", f.Base+"/")
	w.raw("  <newznab:response")
	w.attr("offset", strconv.Itoa(f.Offset))
	w.attr("total", strconv.Itoa(f.Total))
	w.raw("/>\n  <newznab:apilimits")
	w.attr("apicurrent", strconv.FormatInt(f.Account.Requests, 10))
	if f.Account.RequestLimit > 0 {
		w.attr("apimax", strconv.FormatInt(f.Account.RequestLimit, 10))
	}
	w.attr("grabcurrent", strconv.FormatInt(f.Account.Grabs, 10))
	if f.Account.GrabLimit > 0 {
		w.attr("grabmax", strconv.FormatInt(f.Account.GrabLimit, 10))
	}
	w.raw("/>\n")
	for i := range f.Releases {
		w.item(f, &f.Releases[i])
	}
	w.raw(" </channel>\n</rss>\n")
	return w.Bytes()
}

// item writes one release as an <item>.
func (w *writer) item(f feed, r *release.Release) {
	id := strconv.FormatInt(r.ID, 10)
	details := detailsURL(f.Base, r.ID)
	get := getURL(f.Base, f.Key, r.ID)
	posted := r.Posted
	if posted.IsZero() {
		posted = r.Updated
	}
	w.raw("  <item>\n")
	w.elem("   ", "title", feedText(r.Name))
	w.raw(`   <guid isPermaLink="true">`, xmlText(details), "</guid>\n")
	w.elem("   ", "link", get)
	w.elem("   ", "comments", details+"#comments")
	w.elem("   ", "pubDate", date(posted))
	w.elem("   ", "category", CategoryName(r.Category))
	if r.PostProc.NFO != "" {
		// Only t=details reads the NFO: its text is the description.
		// nfo.Decode bounded it and left no control character.
		w.elem("   ", "description", nzb.Text(r.PostProc.NFO))
	}
	w.raw("   <enclosure")
	w.attr("url", get)
	w.attr("length", strconv.FormatInt(r.Bytes, 10))
	w.attr("type", nzb.ContentType)
	w.raw("/>\n")
	if parent := parentOf(r.Category); parent != r.Category {
		w.newznabAttr("category", strconv.Itoa(parent))
	}
	w.newznabAttr("category", strconv.Itoa(r.Category))
	w.newznabAttr("size", strconv.FormatInt(r.Bytes, 10))
	w.newznabAttr("files", strconv.Itoa(r.FilesSeen))
	w.newznabAttr("grabs", strconv.FormatInt(r.Grabs, 10))
	w.newznabAttr("poster", feedText(r.Poster))
	for _, g := range r.Groups[:min(len(r.Groups), MaxGroups)] {
		w.newznabAttr("group", feedText(g))
	}
	w.newznabAttr("usenetdate", date(posted))
	w.newznabAttr("guid", id)
	w.newznabAttr("password", strconv.Itoa(r.PostProc.Password))
	w.newznabAttr("nfo", boolAttr(r.PostProc.HasNFO))
	if id, ok := strings.CutPrefix(r.PostProc.IMDb, "tt"); ok {
		w.newznabAttr("imdb", id)
	}
	if tvdb := r.PostProc.TVDB; tvdb != "" && strings.Trim(tvdb, "0123456789") == "" {
		w.newznabAttr("tvdbid", tvdb)
	}
	if e := r.Episode; e != nil {
		season, episode := strconv.Itoa(e.Season), strconv.Itoa(e.Episode)
		if e.Daily {
			episode = fmt.Sprintf("%02d/%02d", e.Episode/100, e.Episode%100)
		}
		w.newznabAttr("season", season)
		if e.Episode != 0 {
			w.newznabAttr("episode", episode)
		}
	}
	w.raw("  </item>\n")
}
