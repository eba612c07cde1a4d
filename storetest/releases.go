package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/usenet"
)

// The release store's cases (release.Store): building from the results
// feed with the cursor in the same transaction (Build), exactly once under
// concurrent builders (ExactlyOnce), listing (Paging) and bad input. A
// backend that is no release.Store skips them.

// releases returns e's release store, or skips.
func releases(t *testing.T, e *env) release.Store {
	t.Helper()
	rs, ok := e.Backend.(release.Store)
	if !ok {
		t.Skip("the backend implements no release.Store")
	}
	return rs
}

// posted is one binary as a test posts it: its parts seen in one item.
type posted struct {
	poster, subject, group string
	date                   time.Time
	total                  int
	parts                  []int
}

// item makes the results feed item a collator emits for p.
func (p posted) item(t *testing.T) batch.Item {
	t.Helper()
	sub, ok := usenet.ParseSubject(fmt.Sprintf("%s (1/%d)", p.subject, p.total))
	require.True(t, ok, p.subject)
	b := usenet.Binary{Subject: sub.Base, Name: sub.Name, Poster: p.poster, Group: p.group,
		Date: p.date.Format(time.RFC1123Z), Total: p.total}
	for _, n := range p.parts {
		b.Parts = append(b.Parts, usenet.Part{N: n, Article: int64(n), MessageID: fmt.Sprintf("<%d.%s@x>", n, sub.Name), Bytes: 1000})
	}
	b.Complete = len(p.parts) == p.total
	v, err := json.Marshal(b)
	require.NoError(t, err)
	return batch.Item{Key: b.Key(), Value: v}
}

// store puts items as batches of one range per group, items in the order
// given, and returns how many it stored.
func (e *env) storeItems(t *testing.T, ps []posted) int {
	t.Helper()
	byGroup := map[string][]batch.Item{}
	var groups []string
	for _, p := range ps {
		if _, ok := byGroup[p.group]; !ok {
			groups = append(groups, p.group)
		}
		byGroup[p.group] = append(byGroup[p.group], p.item(t))
	}
	for _, g := range groups {
		if _, err := e.Group(e.ctx, g); err != nil {
			e.group(t, g, false)
		}
		r := e.ranges(t, g, 1, 100, lease.LaneHistory)[0]
		l, err := e.Grant(e.ctx, "builder-test", ttl)
		require.NoError(t, err)
		require.Equal(t, r.ID, l.Range.ID)
		items := byGroup[g]
		half := len(items) / 2 // two batches, so the feed has two transactions
		_, err = e.Put(e.ctx, r.ID, fence(l), batch.Batch{From: 1, To: 50, Items: items[:half]})
		require.NoError(t, err)
		_, err = e.Put(e.ctx, r.ID, fence(l), batch.Batch{From: 51, To: 100, Items: items[half:]})
		require.NoError(t, err)
	}
	return len(ps)
}

func (e *env) builder(t *testing.T, rs release.Store, consumer string, page int) *release.Builder {
	t.Helper()
	b, err := release.NewBuilder(release.Config{Store: rs, Feed: e.Backend, Consumer: consumer, PageSize: page,
		Window: 6 * time.Hour, Clock: e.clock})
	require.NoError(t, err)
	return b
}

// build runs b's passes until its consumer has consumed want items in all.
// PostgreSQL's feed shows an item only once no transaction that could
// precede it is running (ReadFeed), so a pass may stop short; the bound
// is ReadFeed's.
func build(t *testing.T, e *env, rs release.Store, b *release.Builder, consumer string, want int64) int64 {
	t.Helper()
	var got int64
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := b.Pass(e.ctx)
		require.NoError(t, err)
		got += n
		cur, err := rs.ReleaseCursor(e.ctx, consumer)
		require.NoError(t, err)
		if cur.Items >= want {
			require.Equal(t, want, cur.Items, "the cursor counts every item once")
			return got
		}
		require.True(t, time.Now().Before(deadline), "the builder consumed %d of %d items", cur.Items, want)
		time.Sleep(5 * time.Millisecond)
	}
}

// pieces reads a release in pieces, as the Newznab front door does.
type pieces interface {
	ReleaseDetails(ctx context.Context, id int64, files int) (release.Release, error)
	ReleaseFiles(ctx context.Context, id int64, each func(release.File) error) error
}

// checkPieces checks, on a backend that reads releases in pieces, that
// the pieces of full agree with it: the release alone, its first files
// each with the count of its parts instead of them, and every file with
// its parts, in order; and that an error of each ends ReleaseFiles.
func checkPieces(t *testing.T, e *env, rs release.Store, full release.Release) {
	t.Helper()
	ps, ok := rs.(pieces)
	if !ok {
		return
	}
	want := full
	want.Files = nil
	alone, err := ps.ReleaseDetails(e.ctx, full.ID, 0)
	require.NoError(t, err)
	require.Equal(t, want, alone)
	for _, n := range []int{1, len(full.Files) + 1} {
		d, err := ps.ReleaseDetails(e.ctx, full.ID, n)
		require.NoError(t, err)
		require.Len(t, d.Files, min(n, len(full.Files)))
		for i, f := range d.Files {
			w := full.Files[i]
			w.Seen, w.Parts = len(w.Parts), nil
			require.Equal(t, w, f, "file %d of %d", i, n)
		}
	}
	var files []release.File
	require.NoError(t, ps.ReleaseFiles(e.ctx, full.ID, func(f release.File) error {
		files = append(files, f)
		return nil
	}))
	require.Equal(t, full.Files, files)
	stop := errors.New("stop")
	calls := 0
	err = ps.ReleaseFiles(e.ctx, full.ID, func(release.File) error { calls++; return stop })
	if len(full.Files) > 0 {
		require.ErrorIs(t, err, stop)
		require.Equal(t, 1, calls)
	}
}

// all lists every release of group (all groups when empty), with files.
func all(t *testing.T, e *env, rs release.Store, group string) map[string][]release.Release {
	t.Helper()
	out := map[string][]release.Release{}
	cursor := ""
	for {
		p, err := rs.Releases(e.ctx, release.Query{Group: group, After: cursor, Limit: 3})
		require.NoError(t, err)
		if len(p.Releases) == 0 {
			require.Equal(t, cursor, p.Next)
			return out
		}
		for _, r := range p.Releases {
			require.Nil(t, r.Files, "a listing has no files")
			full, err := rs.ReleaseByID(e.ctx, r.ID)
			require.NoError(t, err)
			checkPieces(t, e, rs, full)
			out[r.Name] = append(out[r.Name], full)
		}
		cursor = p.Next
	}
}

func testReleasesBuild(t *testing.T, e *env) {
	rs := releases(t, e)
	day := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	const alice, bob = "Alice <a@example.test>", "Bob <b@example.test>"
	ps := []posted{
		// Alice's release of three files, [n/3]; the second file's parts
		// come in two items (a range boundary), the nfo in two groups.
		{alice, `[1/3] - "Show.S01E01.part1.rar" yEnc`, "g.one", day, 4, []int{1, 2, 3, 4}},
		{bob, `"Show.S01E01.part1.rar" yEnc`, "g.one", day, 2, []int{1, 2}}, // Bob's: another release
		{alice, `[2/3] - "Show.S01E01.part2.rar" yEnc`, "g.one", day.Add(time.Minute), 3, []int{1}},
		{"text poster", "not a binary", "g.one", day, 1, nil}, // skipped: no parts
		{alice, `[2/3] - "Show.S01E01.part2.rar" yEnc`, "g.one", day.Add(time.Minute), 3, []int{2, 3}},
		{alice, `[3/3] - "Show.S01E01.nfo" yEnc`, "g.one", day.Add(2 * time.Minute), 1, []int{1}},
		{alice, `[3/3] - "Show.S01E01.nfo" yEnc`, "g.two", day.Add(2 * time.Minute), 1, []int{1}},
		// The same name by Alice two days later: another release; it
		// misses part 2 of 3 and one of its two files.
		{alice, `[1/2] - "Show.S01E01.part1.rar" yEnc`, "g.two", day.Add(48 * time.Hour), 3, []int{1, 3}},
	}
	n := e.storeItems(t, ps)
	b := e.builder(t, rs, "releases", 2)
	require.Equal(t, int64(n), build(t, e, rs, b, "releases", int64(n)))
	cur, err := rs.ReleaseCursor(e.ctx, "releases")
	require.NoError(t, err)
	require.Equal(t, e.clock.Now().UTC(), cur.At)
	st := b.Stats()
	require.Equal(t, int64(1), st.Skipped)
	require.Equal(t, int64(3), st.Created)

	again, err := b.Pass(e.ctx)
	require.NoError(t, err)
	require.Zero(t, again, "nothing new: nothing consumed")

	rels := all(t, e, rs, "")
	require.Len(t, rels["Show.S01E01"], 3)
	byPoster := map[string][]release.Release{}
	for _, r := range rels["Show.S01E01"] {
		byPoster[r.Poster] = append(byPoster[r.Poster], r)
	}
	require.Len(t, byPoster[alice], 2)
	first, later := byPoster[alice][0], byPoster[alice][1]
	require.Less(t, first.ID, later.ID)

	require.Equal(t, []string{"g.one", "g.two"}, first.Groups)
	require.Equal(t, day, first.Posted)
	require.Equal(t, day.Add(2*time.Minute), first.Last)
	require.Equal(t, [4]int{3, 3, 3, 0}, [4]int{first.FilesSeen, first.FilesComplete, first.FilesExpected, 0})
	require.Equal(t, [2]int64{8, 8}, [2]int64{first.PartsSeen, first.PartsExpected})
	require.Equal(t, int64(8000), first.Bytes)
	require.True(t, first.Complete)
	require.Equal(t, e.clock.Now().UTC(), first.Updated)
	require.Len(t, first.Files, 3)
	names := []string{}
	for _, f := range first.Files {
		names = append(names, f.Name)
		require.True(t, f.Complete, f.Name)
	}
	require.Equal(t, []string{"Show.S01E01.nfo", "Show.S01E01.part1.rar", "Show.S01E01.part2.rar"}, names, "files sorted by name")
	require.Equal(t, []string{"g.one", "g.two"}, first.Files[0].Groups, "the nfo was read in both groups")
	require.Equal(t, []int{1, 2, 3}, partNumbers(first.Files[2]), "the split file's items merged")

	require.Equal(t, []string{"g.two"}, later.Groups)
	require.Equal(t, [3]int{1, 0, 2}, [3]int{later.FilesSeen, later.FilesComplete, later.FilesExpected})
	require.Equal(t, [2]int64{2, 3}, [2]int64{later.PartsSeen, later.PartsExpected})
	require.False(t, later.Complete)
	require.InDelta(t, 66.7, later.Completion(), 0.1)

	bobs := byPoster[bob][0]
	require.True(t, bobs.Complete)
	require.Equal(t, 1, bobs.FilesSeen)

	// Listing a group: the releases with a file read in it.
	inTwo := all(t, e, rs, "g.two")
	require.Len(t, inTwo["Show.S01E01"], 2)

	// A part that comes later (a repair) joins its file and release.
	late := []posted{{alice, `[1/2] - "Show.S01E01.part1.rar" yEnc`, "g.three", day.Add(48 * time.Hour), 3, []int{2}}}
	e.storeItems(t, late)
	require.Equal(t, int64(1), build(t, e, rs, b, "releases", int64(n+1)))
	got, err := rs.ReleaseByID(e.ctx, later.ID)
	require.NoError(t, err)
	require.Equal(t, [2]int64{3, 3}, [2]int64{got.PartsSeen, got.PartsExpected})
	require.Equal(t, 1, got.FilesComplete)
	require.False(t, got.Complete, "one of its two files was never seen")
	require.Equal(t, []string{"g.three", "g.two"}, got.Groups)
	require.Len(t, all(t, e, rs, "g.three")["Show.S01E01"], 1)
}

func partNumbers(f release.File) []int {
	var out []int
	for _, p := range f.Parts {
		out = append(out, p.N)
	}
	return out
}

// testReleasesExactlyOnce runs builders that share a consumer at once: each
// item is consumed once (the cursor's count), and the releases are those
// one builder alone makes. A page read from a cursor that moved writes
// nothing.
func testReleasesExactlyOnce(t *testing.T, e *env) {
	rs := releases(t, e)
	day := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	var ps []posted
	for i := range 60 {
		poster := fmt.Sprintf("poster%d", i%3)
		rel := fmt.Sprintf("Rel%02d", i%10)
		ps = append(ps, posted{poster, fmt.Sprintf(`[%d/6] - "%s.part%d.rar" yEnc`, i/10+1, rel, i/10+1), "g.once",
			day.Add(time.Duration(i) * time.Second), 2, []int{1, 2}})
	}
	n := e.storeItems(t, ps)

	// A stale page: nothing is written, and the error says so.
	stale := release.Update{Consumer: "stale", After: "0.1", Next: "0.2", Items: 1,
		Files: []release.File{{Key: "k", Poster: "p", Subject: `"x.rar"`, Date: day, Total: 1,
			Parts: []usenet.Part{{N: 1, MessageID: "<m>", Bytes: 1}}}}}
	_, err := rs.PutReleases(e.ctx, stale)
	require.ErrorIs(t, err, release.ErrCursorMoved)
	require.ErrorIs(t, err, edgeindex.ErrConflict)
	p, err := rs.Releases(e.ctx, release.Query{})
	require.NoError(t, err)
	require.Empty(t, p.Releases, "a refused page writes nothing")
	cur, err := rs.ReleaseCursor(e.ctx, "stale")
	require.NoError(t, err)
	require.Equal(t, "", cur.After)

	var wg sync.WaitGroup
	builders := make([]*release.Builder, 4)
	errs := make([]error, len(builders))
	for i := range builders {
		builders[i] = e.builder(t, rs, "shared", 3)
		wg.Go(func() { _, errs[i] = builders[i].Pass(e.ctx) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	// Passes stop at an empty page; more take what the feed showed late.
	build(t, e, rs, builders[0], "shared", int64(n))
	var items int64
	for _, b := range builders {
		items += b.Stats().Items
	}
	require.Equal(t, int64(n), items, "the builders' counts add up to the feed")

	rels := all(t, e, rs, "g.once")
	require.Len(t, rels, 10)
	for name, list := range rels {
		require.Len(t, list, 3, "%s: one release per poster", name)
		for _, r := range list {
			require.Equal(t, 2, r.FilesSeen, name)
			require.Equal(t, 6, r.FilesExpected, name)
			require.Equal(t, [2]int64{4, 4}, [2]int64{r.PartsSeen, r.PartsExpected})
			require.False(t, r.Complete, "2 of 6 files")
		}
	}
}

func testReleasesPaging(t *testing.T, e *env) {
	rs := releases(t, e)
	day := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	var ps []posted
	for i := range 25 {
		g := "g.even"
		if i%2 == 1 {
			g = "g.odd"
		}
		ps = append(ps, posted{"p", fmt.Sprintf(`"page%02d.nfo" yEnc`, i), g, day, 1, []int{1}})
	}
	n := e.storeItems(t, ps)
	build(t, e, rs, e.builder(t, rs, "releases", 0), "releases", int64(n))
	var ids []int64
	cursor := ""
	for {
		p, err := rs.Releases(e.ctx, release.Query{After: cursor, Limit: 10})
		require.NoError(t, err)
		require.LessOrEqual(t, len(p.Releases), 10)
		if len(p.Releases) == 0 {
			require.Equal(t, cursor, p.Next, "an empty page keeps the cursor")
			break
		}
		for _, r := range p.Releases {
			ids = append(ids, r.ID)
		}
		cursor = p.Next
	}
	require.Len(t, ids, 25)
	require.True(t, slices.IsSorted(ids))
	require.Len(t, all(t, e, rs, "g.odd"), 12)
	require.Len(t, all(t, e, rs, "g.even"), 13)
}

func testReleasesBadInput(t *testing.T, e *env) {
	rs := releases(t, e)
	for _, bad := range []string{"x", "-1", "1.2"} {
		_, err := rs.Releases(e.ctx, release.Query{After: bad})
		require.ErrorIs(t, err, release.ErrBadCursor, bad)
		require.ErrorIs(t, err, edgeindex.ErrInvalid, bad)
	}
	for _, limit := range []int{-1, release.MaxQueryLimit + 1} {
		_, err := rs.Releases(e.ctx, release.Query{Limit: limit})
		require.ErrorIs(t, err, edgeindex.ErrInvalid)
	}
	_, err := rs.Releases(e.ctx, release.Query{Group: "no.such.group"})
	require.ErrorIs(t, err, edgeindex.ErrNotFound)
	_, err = rs.ReleaseByID(e.ctx, 12345)
	require.ErrorIs(t, err, release.ErrNotFound)
	require.ErrorIs(t, err, edgeindex.ErrNotFound)
	if ps, ok := rs.(pieces); ok {
		_, err = ps.ReleaseDetails(e.ctx, 12345, 10)
		require.ErrorIs(t, err, release.ErrNotFound)
		err = ps.ReleaseFiles(e.ctx, 12345, func(release.File) error { panic("no release, no file") })
		require.ErrorIs(t, err, release.ErrNotFound)
	}
	day := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	good := release.File{Key: "k", Date: day, Total: 1, Parts: []usenet.Part{{N: 1, MessageID: "<m>"}}}
	// A file that names no feed items keeps its parts in the store.
	direct := good
	direct.Subject, direct.Poster = `"direct.rar" yEnc`, "p"
	direct.Parts = []usenet.Part{{N: 1, MessageID: "<d1>", Bytes: 5}}
	applied, err := rs.PutReleases(e.ctx, release.Update{Consumer: "direct", Next: "0.1", Items: 1, Files: []release.File{direct}})
	require.NoError(t, err)
	require.Equal(t, release.Applied{Created: 1, Files: 1}, applied)
	p, err := rs.Releases(e.ctx, release.Query{})
	require.NoError(t, err)
	require.Len(t, p.Releases, 1)
	got, err := rs.ReleaseByID(e.ctx, p.Releases[0].ID)
	require.NoError(t, err)
	require.Equal(t, direct.Parts, got.Files[0].Parts)
	require.Equal(t, "direct", got.Name)

	for name, u := range map[string]release.Update{
		"no consumer":   {Next: "0.1", Items: 1, Files: []release.File{good}},
		"no next":       {Consumer: "c", Items: 1, Files: []release.File{good}},
		"bad next":      {Consumer: "c", Next: "x", Items: 1, Files: []release.File{good}},
		"few items":     {Consumer: "c", Next: "0.1", Items: 0, Files: []release.File{good}},
		"no key":        {Consumer: "c", Next: "0.1", Items: 1, Files: []release.File{{Date: day}}},
		"no date":       {Consumer: "c", Next: "0.1", Items: 1, Files: []release.File{{Key: "k"}}},
		"negative wind": {Consumer: "c", Next: "0.1", Items: 1, Window: -1, Files: []release.File{good}},
	} {
		_, err := rs.PutReleases(e.ctx, u)
		require.ErrorIs(t, err, edgeindex.ErrInvalid, name)
	}
}
