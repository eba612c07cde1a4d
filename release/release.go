package release

import (
	"context"
	"fmt"
	"net/mail"
	"slices"
	"strings"
	"time"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/internal/saturate"
	"github.com/edgeindex/edgeindex/usenet"
)

// Sentinel errors, tested with errors.Is. They wrap the edgeindex package's, so
// a caller that maps those to HTTP statuses maps these too.
var (
	// ErrCursorMoved means the consumer's cursor is no longer the one the
	// page was read from: another builder consumed it. Nothing was written;
	// read the cursor again.
	ErrCursorMoved = fmt.Errorf("release cursor moved: %w", edgeindex.ErrConflict)
	// ErrBadCursor means a listing cursor was not one a Page handed out.
	ErrBadCursor = fmt.Errorf("bad cursor: %w", edgeindex.ErrInvalid)
	// ErrNotFound means no release has that id.
	ErrNotFound = fmt.Errorf("release: %w", edgeindex.ErrNotFound)
)

// File is one file of a release: a binary (the items of one key merged
// with usenet.Merge), with every group it was read in.
type File struct {
	Key     string `json:"key"`     // the binary's key (usenet.Key)
	Subject string `json:"subject"` // usenet.Binary.Subject: the subject without its part counter
	Name    string `json:"name"`    // the file name from the subject
	// RealName is the name post-processing found for it in the
	// release's PAR2 set (its first 16 KiB matched), or "".
	RealName string `json:"realName,omitempty"`
	Poster   string `json:"poster"`
	// Date is when it was posted: the earliest Date header of its items
	// that parses, else when the builder first saw it.
	Date     time.Time     `json:"date"`
	Groups   []string      `json:"groups"` // sorted, one each
	Total    int           `json:"total"`  // the parts the binary has
	Complete bool          `json:"complete"`
	Bytes    int64         `json:"bytes"` // the sum of its parts' bytes
	Parts    []usenet.Part `json:"parts"` // ascending by N, one per part number
	// Items are the ids of the feed items it was merged from
	// (batch.Stored.ID), ascending. A store may keep a file's parts in
	// those items rather than twice.
	Items []int64 `json:"items,omitempty"`
	// Seen counts its parts where Parts are not read: a store's summary
	// of a release (a details page) sets it; 0 where Parts are filled.
	Seen int `json:"-"`
}

// FromBinary makes a File of one item of the results feed. Its group is
// the binary's newsgroup without a provider (an item written before
// collate stripped it may name NEWSGROUP@PROVIDER), so the same binary read
// from several providers is one file of one newsgroup. A date that does
// not parse is the zero time. A total past usenet.MaxTotal, which no
// subject can give, counts as MaxTotal: totals are summed into a
// release's, which must not wrap.
func FromBinary(key string, b usenet.Binary) File {
	f := File{Key: key, Subject: validText(b.Subject), Name: validText(b.Name), Poster: validText(b.Poster),
		Total: min(b.Total, usenet.MaxTotal), Complete: b.Complete, Parts: b.Parts}
	if newsgroup, _ := grouplease.SplitGroup(b.Group); newsgroup != "" {
		f.Groups = []string{newsgroup}
	}
	f.Date, _ = ParseDate(b.Date)
	f.Bytes = partBytes(f.Parts)
	return f
}

// Merge returns the union of two items of one file: parts as usenet.Merge
// joins them, the groups and items of both, the earlier date. Neither f
// nor g is changed.
func (f File) Merge(g File) File {
	b := usenet.Merge(f.binary(), g.binary())
	out := f
	out.Parts, out.Complete, out.Total = b.Parts, b.Complete, b.Total
	if out.Subject == "" {
		out.Subject = g.Subject
	}
	if out.Name == "" {
		out.Name = g.Name
	}
	if out.Poster == "" {
		out.Poster = g.Poster
	}
	if out.Date.IsZero() || (!g.Date.IsZero() && g.Date.Before(out.Date)) {
		out.Date = g.Date
	}
	out.Groups = unionSorted(f.Groups, g.Groups)
	out.Items = slices.Concat(f.Items, g.Items)
	slices.Sort(out.Items)
	out.Items = slices.Compact(out.Items)
	out.Bytes = partBytes(out.Parts)
	return out
}

// binary is f as a usenet.Binary, for usenet.Merge.
func (f File) binary() usenet.Binary {
	return usenet.Binary{Subject: f.Subject, Name: f.Name, Poster: f.Poster, Total: f.Total, Complete: f.Complete, Parts: f.Parts}
}

// partBytes sums the parts' sizes. The sizes come from nodes' items (and
// from their providers' overview lines before that), so a negative one
// counts as 0 and the sum saturates at MaxInt64 rather than wrapping.
func partBytes(parts []usenet.Part) int64 {
	var n int64
	for _, p := range parts {
		n = saturate.Add(n, max(p.Bytes, 0))
	}
	return n
}

// unionSorted returns the sorted union of two sorted lists without
// repeats, as a new slice.
func unionSorted(a, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	out = append(out, a...)
	out = append(out, b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// ParseDate parses a Date header as Usenet posts have it (RFC 5322, and
// the obsolete forms net/mail accepts), in UTC.
func ParseDate(s string) (time.Time, error) {
	t, err := mail.ParseDate(strings.TrimSpace(s))
	if err != nil {
		return time.Time{}, err
	}
	return t.UTC(), nil
}

// Release is a set of files one poster posted together: the files whose
// subjects share a set name (ParseSet), posted within the builder's window
// of each other.
type Release struct {
	ID     int64    `json:"id"`
	Key    string   `json:"key"`  // SetKey(poster, Set.Key)
	Name   string   `json:"name"` // Set.Name of its first file
	Poster string   `json:"poster"`
	Groups []string `json:"groups"` // every group a file of it was read in, sorted
	// Posted is the date of its earliest file, Last of its latest.
	Posted time.Time `json:"posted"`
	Last   time.Time `json:"last"`
	// FilesSeen counts its files, FilesComplete those with every part.
	// FilesExpected is the largest file count of their subjects' file
	// counters (Set.Files: 15 for a file 01 of 15), or 0 when they have
	// none.
	FilesSeen     int `json:"filesSeen"`
	FilesComplete int `json:"filesComplete"`
	FilesExpected int `json:"filesExpected"`
	// PartsSeen counts the parts of its files that were read, and
	// PartsExpected the parts its files have (their totals). Parts of files
	// not seen at all are not counted: FilesExpected shows those.
	PartsSeen     int64 `json:"partsSeen"`
	PartsExpected int64 `json:"partsExpected"`
	// Complete: every file has every part, and at least FilesExpected
	// files were seen.
	Complete bool      `json:"complete"`
	Bytes    int64     `json:"bytes"`   // the sum of its parts' bytes
	Updated  time.Time `json:"updated"` // when a page of the feed last changed it
	// Category is its Newznab category (Categorize of its name and
	// groups): a subcategory such as 5040 (TV HD), or a parent's "other"
	// such as 8010. The builder sets it whenever the release changes.
	Category int `json:"category"`
	// Episode is the TV episode its name gives (ParseEpisode), or nil.
	Episode *Episode `json:"episode,omitempty"`
	// Grabs counts the downloads of its NZB through the Newznab API.
	Grabs int64 `json:"grabs"`
	// PostProc is what post-processing (package postproc) found reading a
	// few of its articles' bodies; its zero value until it has.
	PostProc PostProc `json:"postProc"`
	// Files are its files, sorted by name, with their parts;
	// Store.ReleaseByID fills them, a listing leaves them nil.
	Files []File `json:"files,omitempty"`
}

// PostProc is what post-processing found of a release, and how far it
// got.
type PostProc struct {
	// State is PostPending, PostDone or PostFailed (for good: its tries
	// are spent); Attempts counts the tries, Reason says why the last
	// failed.
	State    PostState `json:"state"`
	Attempts int       `json:"attempts,omitempty"`
	Reason   string    `json:"reason,omitempty"`
	// Renamed says its name came from its PAR2 set or its NFO (the
	// builder then keeps it).
	Renamed bool `json:"renamed,omitempty"`
	// Password is the Newznab password attr: 0 none, 1 passworded, 2
	// potentially.
	Password int `json:"password"`
	// HasNFO says an NFO was read; NFO is its text, which only
	// Store.ReleaseByID and a details read fill.
	HasNFO bool   `json:"hasNfo,omitempty"`
	NFO    string `json:"nfo,omitempty"`
	// IMDb and TVDB are ids its NFO links to.
	IMDb string `json:"imdb,omitempty"`
	TVDB string `json:"tvdb,omitempty"`
	// Bodies counts the article bodies it read.
	Bodies int `json:"bodies,omitempty"`
	// FileNames are the real names it found, by file key (File.Key);
	// the store's reads of the files set File.RealName from them.
	FileNames map[string]string `json:"-"`
}

// PostState is how far a release's post-processing got.
type PostState int

// The states of post-processing.
const (
	PostPending PostState = 0
	PostDone    PostState = 1
	PostFailed  PostState = 2
)

// Completion is the share of the expected parts that were seen, from 0 to
// 100, as NNTmux shows it.
func (r *Release) Completion() float64 {
	if r.PartsExpected == 0 {
		return 0
	}
	return 100 * float64(r.PartsSeen) / float64(r.PartsExpected)
}

// add counts a file into the release's totals; sign -1 takes it out.
func (r *Release) add(f *File, sign int) {
	r.FilesSeen += sign
	if f.Complete {
		r.FilesComplete += sign
	}
	r.PartsSeen += int64(sign * len(f.Parts))
	r.PartsExpected += int64(sign * f.Total)
	if sign > 0 {
		r.Bytes = saturate.Add(r.Bytes, f.Bytes)
	} else {
		r.Bytes = max(0, r.Bytes-f.Bytes) // both are sizes: no overflow
	}
}

// settle recomputes Complete.
func (r *Release) settle() {
	r.Complete = r.FilesSeen > 0 && r.FilesComplete == r.FilesSeen && r.FilesSeen >= r.FilesExpected
}

// Query selects a page of releases. The zero Query reads the first page of
// every group.
type Query struct {
	Group string // empty: every group; else the releases with a file read in it
	After string // an opaque cursor from a previous Page; empty: the start
	Limit int    // 0: 100; at most 1000
}

// Page is one page of releases, oldest first (by id), without their files.
// Next is the cursor to read what comes after this page; with nothing new
// it is the cursor asked for.
type Page struct {
	Releases []Release `json:"releases"`
	Next     string    `json:"next"`
}

// DefaultConsumer is the name of the builder's cursor in the store when
// Config.Consumer is empty.
const DefaultConsumer = "releases"

// Cursor is how far a consumer has read the results feed.
type Cursor struct {
	Consumer string    `json:"consumer"`
	After    string    `json:"after"` // the feed cursor to read from; empty: the start
	Items    int64     `json:"items"` // items consumed so far
	At       time.Time `json:"at"`    // when it last moved; zero before the first page
}

// Update is what a builder makes of one page of the results feed, for
// Store.PutReleases to apply in one transaction with the cursor.
type Update struct {
	Consumer string
	// After is the cursor the page was read from, Next the cursor after it.
	After, Next string
	// Items counts the page's items, Files (some items merged by key, some
	// skipped) included.
	Items int
	// Files are the page's binaries, one per key, with groups and dates.
	Files []File
	// Sets are the Set of each file (ParseSet of its Subject), made by the
	// builder outside the transaction; nil: Needs and Assign make them.
	Sets []Set
	// Window: a file joins a release of its set and poster when its date
	// is within Window of the release's [Posted, Last].
	Window time.Duration
}

// Applied counts what PutReleases changed.
type Applied struct {
	Created int `json:"created"` // new releases
	Changed int `json:"changed"` // existing releases that got a file or parts
	Files   int `json:"files"`   // files added or merged
}

// Store keeps releases and the builder's cursor. sqlstore implements it on
// SQLite and PostgreSQL.
type Store interface {
	// ReleaseCursor returns the consumer's cursor; one that never moved
	// has After "".
	ReleaseCursor(ctx context.Context, consumer string) (Cursor, error)
	// PutReleases applies one page of the feed: it reads what Needs(u)
	// names, assigns u's files to releases (Assign), writes them, and moves the consumer's cursor from
	// u.After to u.Next, in one transaction. When the stored cursor is not
	// u.After it writes nothing and returns ErrCursorMoved.
	PutReleases(ctx context.Context, u Update) (Applied, error)
	// Releases pages through releases by id, without their files. An
	// unknown group is edgeindex.ErrNotFound.
	Releases(ctx context.Context, q Query) (Page, error)
	// ReleaseByID returns one release with its files and their parts, or
	// ErrNotFound. (Release is lease.Store's: a range given back.)
	ReleaseByID(ctx context.Context, id int64) (Release, error)
}

// Feed is the results feed the builder consumes: every batch.Store is one.
type Feed interface {
	Results(ctx context.Context, q batch.Query) (batch.Page, error)
}

// MaxQueryLimit is the largest Query.Limit.
const MaxQueryLimit = 1000

// CheckQuery applies Query's defaults and bounds; stores call it.
func CheckQuery(q Query) (Query, error) {
	if q.Limit == 0 {
		q.Limit = 100
	}
	if q.Limit < 0 || q.Limit > MaxQueryLimit {
		return q, edgeindex.Invalidf("releases: limit %d must be 1 to %d", q.Limit, MaxQueryLimit)
	}
	return q, nil
}
