package collate_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/collate"
	"github.com/edgeindex/edgeindex/edge"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/overview"
	"github.com/edgeindex/edgeindex/sources"
	"github.com/edgeindex/edgeindex/usenet"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const group = "alt.binaries.test"

// fetch returns the synthetic chunk of span.
func fetch(t testing.TB, span lease.Span) []byte {
	t.Helper()
	src, err := sources.NewSynthetic(sources.SyntheticConfig{})
	require.NoError(t, err)
	gz, err := src.Fetch(context.Background(), group, span)
	require.NoError(t, err)
	return gz
}

// expected reads span's synthetic lines and groups them into binaries
// without ParseSubject: by poster and the subject up to its last " (",
// which is how the synthetic source writes them.
type expectedSet struct {
	complete map[string]usenet.Binary // by Key
	partial  int                      // binaries with some parts outside span
	parts    int                      // binary parts in span
}

func expected(t *testing.T, span lease.Span) expectedSet {
	t.Helper()
	bins := map[string]*usenet.Binary{}
	err := overview.ReadChunk(fetch(t, span), func(o overview.Overview) error {
		i := strings.LastIndex(o.Subject, " (")
		var p, total int
		if _, err := fmt.Sscanf(o.Subject[i:], " (%d/%d)", &p, &total); err != nil {
			return err
		}
		base := o.Subject[:i]
		k := usenet.Key(o.From, base, total)
		b := bins[k]
		if b == nil {
			b = &usenet.Binary{Subject: base, Poster: o.From, Total: total, Group: group, Date: o.Date}
			bins[k] = b
		}
		b.Parts = append(b.Parts, usenet.Part{N: p, Article: o.Number, MessageID: o.MessageID, Bytes: o.Bytes})
		return nil
	})
	require.NoError(t, err)
	ex := expectedSet{complete: map[string]usenet.Binary{}}
	for k, b := range bins {
		ex.parts += len(b.Parts)
		if len(b.Parts) == b.Total {
			b.Complete = true
			ex.complete[k] = *b
		} else {
			ex.partial++
		}
	}
	require.Equal(t, int(span.Len()), ex.parts, "every synthetic line is a binary part")
	return ex
}

func decode(t *testing.T, it batch.Item) usenet.Binary {
	t.Helper()
	var b usenet.Binary
	require.NoError(t, json.Unmarshal(it.Value, &b))
	require.Equal(t, b.Key(), it.Key)
	return b
}

// handleRange feeds a Collator the chunks of r, of chunkSize, in order, and
// returns the items and the headers.
func handleRange(t *testing.T, c *collate.Collator, r lease.Range, chunkSize int64) ([]batch.Item, int64) {
	t.Helper()
	var items []batch.Item
	var headers int64
	for _, s := range lease.Spans(r.Start, r.End, chunkSize) {
		out, err := c.HandleChunk(context.Background(), edge.Chunk{Ordered: true, Range: r, From: s.From, To: s.To, Data: fetch(t, s)})
		require.NoError(t, err)
		require.NotNil(t, out.Items)
		items = append(items, out.Items...)
		headers += out.Headers
	}
	return items, headers
}

// requireComplete checks that items are exactly the complete binaries of ex,
// each once, with all its parts.
func requireComplete(t *testing.T, ex expectedSet, items []batch.Item) {
	t.Helper()
	seen := map[string]bool{}
	for _, it := range items {
		b := decode(t, it)
		require.False(t, seen[it.Key], "item %s emitted twice", it.Key)
		seen[it.Key] = true
		want, ok := ex.complete[it.Key]
		require.True(t, ok, "item %s (%s) is not a complete binary of the span", it.Key, b.Subject)
		require.Equal(t, strings.Trim(strings.SplitN(want.Subject, `"`, 3)[1], `"`), b.Name)
		b.Name = ""
		require.Equal(t, want, b)
	}
	require.Len(t, seen, len(ex.complete))
}

func newCollator(t *testing.T, cfg collate.Config) *collate.Collator {
	t.Helper()
	c, err := collate.New(cfg)
	require.NoError(t, err)
	return c
}

// The span starts and ends inside releases, so some binaries are cut; the
// chunks (700) cut files and releases (1000) at other places.
var span = lease.Span{From: 301, To: 5300}

func TestCollateSynthetic(t *testing.T) {
	t.Parallel()
	ex := expected(t, span)
	require.Greater(t, len(ex.complete), 50)
	require.Positive(t, ex.partial)

	c := newCollator(t, collate.Config{})
	items, headers := handleRange(t, c, lease.Range{ID: 1, Group: group, Start: span.From, End: span.To}, 700)
	require.Equal(t, span.Len(), headers)
	requireComplete(t, ex, items)
	st := c.Stats()
	require.Equal(t, ex.partial, st.Window, "the cut binaries wait in the window")
	require.Equal(t, int64(len(ex.complete)), st.Completed)
	require.Equal(t, span.Len(), st.Lines)
	require.Zero(t, st.Skipped+st.Flushed+st.Evicted)
}

func TestCollateWindowCarried(t *testing.T) {
	t.Parallel()
	ex := expected(t, span)
	r1 := lease.Range{ID: 1, Group: group, Start: span.From, End: 2800}
	r2 := lease.Range{ID: 2, Group: group, Start: 2801, End: span.To}

	a := newCollator(t, collate.Config{})
	items1, h1 := handleRange(t, a, r1, 700)
	state, err := a.SaveWindow()
	require.NoError(t, err)

	b := newCollator(t, collate.Config{})
	require.NoError(t, b.LoadWindow(state))
	items2, h2 := handleRange(t, b, r2, 700)
	require.Equal(t, span.Len(), h1+h2)
	requireComplete(t, ex, append(items1, items2...))

	straddled := 0
	for _, it := range items2 {
		if decode(t, it).Parts[0].Article < r2.Start {
			straddled++
		}
	}
	require.Positive(t, straddled, "a binary straddles the two ranges")

	// Without the window the straddling binaries never complete.
	fresh := newCollator(t, collate.Config{})
	items3, _ := handleRange(t, fresh, r2, 700)
	require.Len(t, items3, len(items2)-straddled)
}

func TestCollateFlushIncomplete(t *testing.T) {
	t.Parallel()
	ex := expected(t, span)
	// Handled out of order, each range by its own worker, in chunks of 900.
	ranges := []lease.Range{
		{ID: 3, Group: group, Start: 4001, End: span.To},
		{ID: 1, Group: group, Start: span.From, End: 2000},
		{ID: 2, Group: group, Start: 2001, End: 4000},
	}
	merged := map[string]usenet.Binary{}
	articles := map[int64]int{}
	incomplete := 0
	for _, r := range ranges {
		c := newCollator(t, collate.Config{FlushIncomplete: true})
		items, _ := handleRange(t, c, r, 900)
		require.Zero(t, c.Stats().Window, "the range's end flushes the window")
		for _, it := range items {
			b := decode(t, it)
			if !b.Complete {
				incomplete++
			}
			for _, p := range b.Parts {
				articles[p.Article]++
			}
			if m, ok := merged[it.Key]; ok {
				b = usenet.Merge(m, b)
			}
			merged[it.Key] = b
		}
	}
	require.Positive(t, incomplete)
	require.Len(t, articles, int(span.Len()), "every part read comes out")
	for n, count := range articles {
		require.Equal(t, 1, count, "article %d comes out once", n)
	}
	complete := 0
	for k, b := range merged {
		if !b.Complete {
			continue
		}
		complete++
		want := ex.complete[k]
		require.Equal(t, want.Parts, b.Parts)
	}
	require.Equal(t, len(ex.complete), complete)
	require.Len(t, merged, len(ex.complete)+ex.partial)
}

// gz gzips lines.
func gz(t testing.TB, lines ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	for _, l := range lines {
		_, err := zw.Write([]byte(l))
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// post returns the overview line of article n, a part of a binary.
func post(n int64, subject string) string {
	return string(overview.Append(nil, overview.Overview{
		Number: n, Subject: subject, From: "poster <p@example.invalid>", Date: "Mon, 02 Jan 2006 15:04:05 +0000",
		MessageID: fmt.Sprintf("<%d@example.invalid>", n), Bytes: 1000 + n, Lines: 10,
	}))
}

func TestCollateBadChunk(t *testing.T) {
	t.Parallel()
	r := lease.Range{ID: 9, Group: group, Start: 1, End: 100}
	good := []string{post(1, `"a.bin" yEnc (1/2)`), post(2, `"a.bin" yEnc (2/2)`)}
	for name, data := range map[string][]byte{
		"not gzip":       []byte("this is not gzip"),
		"empty":          nil,
		"truncated gzip": gz(t, good...)[:30],
		"bad line":       gz(t, good[0], good[1], "3\tonly three\tfields\n"),
		"no newline":     gz(t, good[0], strings.TrimSuffix(good[1], "\n")),
	} {
		c := newCollator(t, collate.Config{})
		_, err := c.HandleChunk(context.Background(), edge.Chunk{Ordered: true, Range: r, From: 1, To: 100, Data: data})
		require.ErrorIs(t, err, overview.ErrBadChunk, name)
		// The chunk changed nothing: the good one, fetched again, completes a.bin.
		require.Equal(t, collate.Stats{}, c.Stats(), name)
		out, err := c.HandleChunk(context.Background(), edge.Chunk{Ordered: true, Range: r, From: 1, To: 100, Data: gz(t, good...)})
		require.NoError(t, err, name)
		require.Len(t, out.Items, 1, name)
		require.True(t, decode(t, out.Items[0]).Complete)
	}
}

func TestCollateSkipsOutsideFromTo(t *testing.T) {
	t.Parallel()
	data := fetch(t, lease.Span{From: 1, To: 1000})
	r := lease.Range{ID: 1, Group: group, Start: 1, End: 1000}
	for _, s := range []lease.Span{{From: 501, To: 1000}, {From: 1, To: 400}, {From: 200, To: 299}} {
		c := newCollator(t, collate.Config{FlushIncomplete: true}) // to see the window's parts too
		// When To is not the range's end nothing is flushed; make it so.
		rr := r
		rr.End = s.To
		out, err := c.HandleChunk(context.Background(), edge.Chunk{Ordered: true, Range: rr, From: s.From, To: s.To, Data: data})
		require.NoError(t, err)
		require.Equal(t, s.Len(), out.Headers)
		parts := 0
		for _, it := range out.Items {
			for _, p := range decode(t, it).Parts {
				require.True(t, p.Article >= s.From && p.Article <= s.To, "article %d outside %v", p.Article, s)
				parts++
			}
		}
		require.Equal(t, int(s.Len()), parts)
	}
}

func TestCollateRetryOfLastChunk(t *testing.T) {
	t.Parallel()
	c := newCollator(t, collate.Config{})
	r := lease.Range{ID: 4, Group: group, Start: 1, End: 2000}
	ch := edge.Chunk{Ordered: true, Range: r, From: 1, To: 700, Data: fetch(t, lease.Span{From: 1, To: 700})}
	first, err := c.HandleChunk(context.Background(), ch)
	require.NoError(t, err)
	require.NotEmpty(t, first.Items)
	before := c.Stats()
	again, err := c.HandleChunk(context.Background(), ch)
	require.NoError(t, err)
	require.Equal(t, first, again)
	require.Equal(t, before, c.Stats(), "a retry does not touch the window")

	// Another range's chunks do not make it forget; a later chunk of the
	// same range does.
	other := edge.Chunk{Ordered: true, Range: lease.Range{ID: 5, Group: group, Start: 5001, End: 5700}, From: 5001, To: 5700, Data: fetch(t, lease.Span{From: 5001, To: 5700})}
	_, err = c.HandleChunk(context.Background(), other)
	require.NoError(t, err)
	again, err = c.HandleChunk(context.Background(), ch)
	require.NoError(t, err)
	require.Equal(t, first, again)
	_, err = c.HandleChunk(context.Background(), edge.Chunk{Ordered: true, Range: r, From: 701, To: 1400, Data: fetch(t, lease.Span{From: 701, To: 1400})})
	require.NoError(t, err)
	// Not the last chunk any more: it is read again, and the binaries it
	// holds whole come out again, the same items (Merge absorbs them).
	again, err = c.HandleChunk(context.Background(), ch)
	require.NoError(t, err)
	require.Equal(t, first.Items, again.Items)
	require.Greater(t, c.Stats().Lines, before.Lines+1400)
}

func TestCollateEvictAndLoadBound(t *testing.T) {
	t.Parallel()
	// 12 binaries of 2 parts, one part each: articles 1..12.
	var lines []string
	for i := range 12 {
		lines = append(lines, post(int64(i+1), fmt.Sprintf(`"f%02d.bin" yEnc (1/2)`, i)))
	}
	r := lease.Range{ID: 1, Group: group, Start: 1, End: 100}
	c := newCollator(t, collate.Config{MaxBinaries: 10})
	out, err := c.HandleChunk(context.Background(), edge.Chunk{Ordered: true, Range: r, From: 1, To: 50, Data: gz(t, lines...)})
	require.NoError(t, err)
	require.Len(t, out.Items, 3, "12 binaries over 10: evicted down to 9")
	for i, it := range out.Items {
		b := decode(t, it)
		require.False(t, b.Complete)
		require.Equal(t, fmt.Sprintf("f%02d.bin", i), b.Name, "the oldest go first")
		require.Equal(t, []usenet.Part{{N: 1, Article: int64(i + 1), MessageID: fmt.Sprintf("<%d@example.invalid>", i+1), Bytes: 1001 + int64(i)}}, b.Parts)
	}
	require.Equal(t, 9, c.Stats().Window)
	require.Equal(t, int64(3), c.Stats().Evicted)

	state, err := c.SaveWindow()
	require.NoError(t, err)
	small := newCollator(t, collate.Config{MaxBinaries: 5})
	require.NoError(t, small.LoadWindow(state))
	require.Equal(t, 5, small.Stats().Window)
	require.Equal(t, int64(4), small.Stats().Dropped)

	// f07 (article 8) is kept; f03 (article 4) was dropped, and its second part starts over.
	out, err = small.HandleChunk(context.Background(), edge.Chunk{Ordered: true, Range: r, From: 51, To: 100,
		Data: gz(t, post(51, `"f07.bin" yEnc (2/2)`), post(52, `"f03.bin" yEnc (2/2)`))})
	require.NoError(t, err)
	require.Len(t, out.Items, 1)
	b := decode(t, out.Items[0])
	require.True(t, b.Complete)
	require.Equal(t, "f07.bin", b.Name)
	require.Equal(t, []int64{8, 51}, []int64{b.Parts[0].Article, b.Parts[1].Article})
	require.Equal(t, 5, small.Stats().Window)
}

func TestCollateDuplicateParts(t *testing.T) {
	t.Parallel()
	c := newCollator(t, collate.Config{})
	r := lease.Range{ID: 1, Group: group, Start: 1, End: 100}
	out, err := c.HandleChunk(context.Background(), edge.Chunk{Ordered: true, Range: r, From: 1, To: 100, Data: gz(t,
		post(1, `"a.bin" yEnc (3/3)`),
		post(2, `Re: "a.bin" yEnc (3/3)`), // a repost of part 3: the first stays
		post(3, `"a.bin" yEnc (1/3)`),
		post(4, "just text"),
		post(5, `"a.bin" yEnc (2/3)`),
		post(6, `"a.bin" yEnc (2/3)`), // after completion: a new binary of one part
	)})
	require.NoError(t, err)
	require.Equal(t, int64(6), out.Headers)
	require.Len(t, out.Items, 1)
	b := decode(t, out.Items[0])
	require.True(t, b.Complete)
	require.Equal(t, []int64{3, 5, 1}, []int64{b.Parts[0].Article, b.Parts[1].Article, b.Parts[2].Article})
	require.Equal(t, collate.Stats{Window: 1, Lines: 6, Skipped: 1, Completed: 1}, c.Stats())
}

// Subjects and posters in Latin-1 are not UTF-8: the item says them as
// JSON does, and its key is the Key of what it says.
func TestCollateNotUTF8(t *testing.T) {
	t.Parallel()
	c := newCollator(t, collate.Config{})
	r := lease.Range{ID: 1, Group: group, Start: 1, End: 100}
	line := func(n int64, p int) string {
		return string(overview.Append(nil, overview.Overview{Number: n, Subject: fmt.Sprintf("\"caf\xe9.rar\" yEnc (%d/2)", p),
			From: "Ren\xe9 <r@example.invalid>", MessageID: fmt.Sprintf("<%d@x>", n)}))
	}
	out, err := c.HandleChunk(context.Background(), edge.Chunk{Ordered: true, Range: r, From: 1, To: 100, Data: gz(t, line(1, 1), line(2, 2))})
	require.NoError(t, err)
	require.Len(t, out.Items, 1)
	b := decode(t, out.Items[0]) // checks the key
	require.Equal(t, "caf\uFFFD.rar", b.Name)
	require.Equal(t, "Ren\uFFFD <r@example.invalid>", b.Poster)
	require.True(t, b.Complete)
}

func TestLoadWindow(t *testing.T) {
	t.Parallel()
	c := newCollator(t, collate.Config{})
	r := lease.Range{ID: 1, Group: group, Start: 1, End: 100}
	_, err := c.HandleChunk(context.Background(), edge.Chunk{Ordered: true, Range: r, From: 1, To: 10, Data: gz(t, post(1, `"a.bin" yEnc (1/2)`))})
	require.NoError(t, err)
	state, err := c.SaveWindow()
	require.NoError(t, err)
	require.JSONEq(t, `{"version":1,"binaries":[{"subject":"\"a.bin\" yEnc","name":"a.bin","poster":"poster <p@example.invalid>",
		"group":"alt.binaries.test","date":"Mon, 02 Jan 2006 15:04:05 +0000","total":2,"complete":false,
		"parts":[{"n":1,"article":1,"messageId":"<1@example.invalid>","bytes":1001,"range":1}]}]}`, string(state))

	for _, bad := range []string{
		`{`, `[]`, `{"version":2,"binaries":[]}`, `{"binaries":[]}`,
		`{"version":1,"binaries":[{"subject":"s","poster":"p","total":2,"parts":[]}]}`,
		`{"version":1,"binaries":[{"subject":"s","poster":"p","total":2,"parts":[{"n":1},{"n":2}]}]}`,
		`{"version":1,"binaries":[{"subject":"s","poster":"p","total":3,"parts":[{"n":2},{"n":1}]}]}`,
		`{"version":1,"binaries":[{"subject":"s","poster":"p","total":3,"parts":[{"n":4}]}]}`,
		`{"version":1,"binaries":[{"subject":"","poster":"p","total":3,"parts":[{"n":1}]}]}`,
		`{"version":1,"binaries":[{"subject":"s","poster":"p","total":3,"parts":[{"n":1}]},{"subject":"s","poster":"p","total":3,"parts":[{"n":2}]}]}`,
	} {
		require.ErrorIs(t, c.LoadWindow([]byte(bad)), collate.ErrBadWindow, bad)
		require.Equal(t, 1, c.Stats().Window, "a bad state leaves the window")
	}
	require.NoError(t, c.LoadWindow(nil))
	require.Zero(t, c.Stats().Window)
	require.NoError(t, c.LoadWindow(state))
	out, err := c.HandleChunk(context.Background(), edge.Chunk{Ordered: true, Range: r, From: 11, To: 20, Data: gz(t, post(11, `"a.bin" yEnc (2/2)`))})
	require.NoError(t, err)
	require.Len(t, out.Items, 1)
	require.True(t, decode(t, out.Items[0]).Complete)
}

func TestCollateErrors(t *testing.T) {
	t.Parallel()
	_, err := collate.New(collate.Config{MaxBinaries: -1})
	require.ErrorIs(t, err, edgeindex.ErrInvalid)

	c := newCollator(t, collate.Config{})
	_, err = c.HandleChunk(context.Background(), edge.Chunk{Ordered: true, From: 10, To: 9, Data: gz(t)})
	require.ErrorIs(t, err, edgeindex.ErrInvalid)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.HandleChunk(ctx, edge.Chunk{Ordered: true, From: 1, To: 1000, Data: fetch(t, lease.Span{From: 1, To: 1000})})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, collate.Stats{}, c.Stats())
}

func TestCollateConcurrent(t *testing.T) {
	t.Parallel()
	ex := expected(t, lease.Span{From: 1, To: 4000})
	c := newCollator(t, collate.Config{})
	var wg sync.WaitGroup
	items := make([][]batch.Item, 4)
	for i := range 4 {
		wg.Go(func() {
			r := lease.Range{ID: int64(i + 1), Group: group, Start: int64(i)*1000 + 1, End: int64(i+1) * 1000}
			for _, s := range lease.Spans(r.Start, r.End, 250) {
				out, err := c.HandleChunk(context.Background(), edge.Chunk{Ordered: true, Range: r, From: s.From, To: s.To, Data: fetch(t, s)})
				if err != nil {
					t.Error(err)
					return
				}
				items[i] = append(items[i], out.Items...)
			}
		})
	}
	wg.Wait()
	// The releases are 1000 articles each, so every binary completes.
	var all []batch.Item
	for _, it := range items {
		all = append(all, it...)
	}
	requireComplete(t, ex, all)
	require.Zero(t, c.Stats().Window)
}

func TestMerge(t *testing.T) {
	t.Parallel()
	p := func(n int) usenet.Part { return usenet.Part{N: n, Article: int64(100 + n)} }
	a := usenet.Binary{Subject: "s", Poster: "p", Total: 3, Parts: []usenet.Part{p(3), p(1)}}
	b := usenet.Binary{Subject: "s", Poster: "p", Name: "n", Total: 3, Parts: []usenet.Part{p(1), p(2)}}
	m := usenet.Merge(a, b)
	require.True(t, m.Complete)
	require.Equal(t, "n", m.Name)
	require.Equal(t, []usenet.Part{p(1), p(2), p(3)}, m.Parts)
	require.Equal(t, m, usenet.Merge(m, m), "idempotent")
	require.Equal(t, m, usenet.Merge(b, a))
	require.Equal(t, []usenet.Part{p(3), p(1)}, a.Parts, "a is not changed")

	half := usenet.Merge(a, a)
	require.False(t, half.Complete)
	require.Equal(t, []usenet.Part{p(1), p(3)}, half.Parts)
	odd := usenet.Merge(usenet.Binary{Total: 2, Parts: []usenet.Part{p(0), p(1)}}, usenet.Binary{})
	require.False(t, odd.Complete, "part 0 is not a part")
}

func TestCollateReportsMissing(t *testing.T) {
	t.Parallel()
	c := newCollator(t, collate.Config{})
	data := gz(t, post(13, `a "x.rar" yEnc (2/2)`), post(11, `a "x.rar" yEnc (1/2)`), post(15, "not a binary"))
	r := lease.Range{ID: 1, Group: group, Start: 1, End: 20}
	out, err := c.HandleChunk(context.Background(), edge.Chunk{Range: r, From: 11, To: 17, Data: data})
	require.NoError(t, err)
	require.Equal(t, int64(3), out.Headers)
	require.Equal(t, []int64{12, 14, 16, 17}, out.Missing, "lines out of order and lines that are no binary count as present")
}

// A chunk handed again to rebuild the window (a lane's takeover) changes the
// window exactly as the first time, and counts only as Replayed.
func TestCollateReplay(t *testing.T) {
	t.Parallel()
	r := lease.Range{ID: 4, Group: group, Start: 1, End: 2000}
	chunk := func(from, to int64, replay bool) edge.Chunk {
		return edge.Chunk{Ordered: true, Replay: replay, Range: r, From: from, To: to, Data: fetch(t, lease.Span{From: from, To: to})}
	}
	first := newCollator(t, collate.Config{})
	_, err := first.HandleChunk(context.Background(), chunk(1, 700, false))
	require.NoError(t, err)
	want, err := first.HandleChunk(context.Background(), chunk(701, 1400, false))
	require.NoError(t, err)
	wantWindow, err := first.SaveWindow()
	require.NoError(t, err)

	second := newCollator(t, collate.Config{})
	_, err = second.HandleChunk(context.Background(), chunk(1, 700, true))
	require.NoError(t, err)
	st := second.Stats()
	require.Positive(t, st.Window)
	require.Equal(t, collate.Stats{Window: st.Window, Replayed: 1}, st, "nothing read or emitted is counted")
	got, err := second.HandleChunk(context.Background(), chunk(701, 1400, false))
	require.NoError(t, err)
	require.Equal(t, want, got, "the chunk after the replay comes out as in the first run")
	gotWindow, err := second.SaveWindow()
	require.NoError(t, err)
	require.Equal(t, string(wantWindow), string(gotWindow))
	require.Equal(t, int64(1), second.Stats().Replayed)
}
