package sources_test

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/overview"
	"github.com/edgeindex/edgeindex/sources"
)

func newSynthetic(t *testing.T, cfg sources.SyntheticConfig) *sources.Synthetic {
	t.Helper()
	s, err := sources.NewSynthetic(cfg)
	require.NoError(t, err)
	return s
}

// fetchAll fetches span and returns its parsed lines.
func fetchAll(t *testing.T, src sources.ChunkSource, group string, span lease.Span) []overview.Overview {
	t.Helper()
	gz, err := src.Fetch(context.Background(), group, span)
	require.NoError(t, err)
	var out []overview.Overview
	require.NoError(t, overview.ReadChunk(gz, func(o overview.Overview) error {
		out = append(out, o)
		return nil
	}))
	return out
}

// The wire contract's rule: exactly one line per article of the span, field
// 1 is n and field 5 is <n@GROUP.synthetic>.
func TestSyntheticOneLinePerArticle(t *testing.T) {
	t.Parallel()
	src := newSynthetic(t, sources.SyntheticConfig{})
	for _, span := range []lease.Span{
		{From: 1, To: 1},
		{From: 1, To: 2000},
		{From: 999, To: 1002},                    // across a release boundary
		{From: 0, To: 5},                         // article 0
		{From: 2_147_483_000, To: 2_147_484_000}, // across 2^31
		{From: 1 << 40, To: 1<<40 + 1999},
		{From: math.MaxInt64 - 2, To: math.MaxInt64},
	} {
		t.Run(fmt.Sprintf("%d-%d", span.From, span.To), func(t *testing.T) {
			t.Parallel()
			lines := fetchAll(t, src, "alt.binaries.test", span)
			require.Len(t, lines, int(span.Len()))
			for i, o := range lines {
				n := span.From + int64(i)
				require.Equal(t, n, o.Number)
				require.Equal(t, "<"+strconv.FormatInt(n, 10)+"@alt.binaries.test.synthetic>", o.MessageID)
				require.Empty(t, o.References)
				require.Positive(t, o.Bytes)
				require.Positive(t, o.Lines)
				require.NotEmpty(t, o.From)
				require.NotEmpty(t, o.Date)
			}
		})
	}
}

// Any span can be generated alone: spans of one range, however split, give
// the same lines as the whole.
func TestSyntheticSpansAgree(t *testing.T) {
	t.Parallel()
	src := newSynthetic(t, sources.SyntheticConfig{})
	const group = "alt.binaries.boneless"
	whole := fetchAll(t, src, group, lease.Span{From: 500, To: 4499})
	for _, chunkSize := range []int64{1000, 777, 333} {
		var parts []overview.Overview
		for _, sp := range lease.Spans(500, 4499, chunkSize) {
			parts = append(parts, fetchAll(t, src, group, sp)...)
		}
		require.Equal(t, whole, parts, "chunk size %d", chunkSize)
	}
	for n := int64(995); n <= 1005; n++ { // one article at a time across a release boundary
		require.Equal(t, whole[n-500:n-500+1], fetchAll(t, src, group, lease.Span{From: n, To: n}))
	}
	// Another source with the same config, or with other watermarks, agrees.
	other := newSynthetic(t, sources.SyntheticConfig{Low: 100, High: 200})
	require.Equal(t, whole, fetchAll(t, other, group, lease.Span{From: 500, To: 4499}))
	// Another group has other posts.
	require.NotEqual(t, whole[0].Subject, fetchAll(t, src, "alt.binaries.other", lease.Span{From: 500, To: 500})[0].Subject)
}

var subjectRE = regexp.MustCompile(`^\[(\d+)/(\d+)\] - "([^"]+)" yEnc \((\d+)/(\d+)\)$`)

// The posts can be collated: within a release, files are numbered 1..F and
// each file's parts run 1..P over consecutive articles by one poster.
func TestSyntheticCollates(t *testing.T) {
	t.Parallel()
	src := newSynthetic(t, sources.SyntheticConfig{})
	for _, release := range []int64{0, 1, 7, 123_456} {
		first := release*1000 + 1
		lines := fetchAll(t, src, "alt.binaries.test", lease.Span{From: first, To: first + 999})
		var (
			file, files, part, parts int
			name                     string
			names                    = map[string]bool{}
		)
		for i, o := range lines {
			m := subjectRE.FindStringSubmatch(o.Subject)
			require.NotNil(t, m, "subject %q", o.Subject)
			f, _ := strconv.Atoi(m[1])
			fs, _ := strconv.Atoi(m[2])
			p, _ := strconv.Atoi(m[4])
			ps, _ := strconv.Atoi(m[5])
			require.Equal(t, lines[0].From, o.From, "one poster per release")
			if i == 0 {
				require.Equal(t, 1, f, "a release starts with its first file")
				require.Equal(t, 1, p)
				files = fs
			} else if p == 1 {
				require.Equal(t, parts, part, "file %s ended at part %d of %d", name, part, parts)
				require.Equal(t, file+1, f)
				require.False(t, names[m[3]], "file %s posted twice", m[3])
			} else {
				require.Equal(t, file, f)
				require.Equal(t, part+1, p)
				require.Equal(t, parts, ps)
				require.Equal(t, name, m[3])
			}
			require.Equal(t, files, fs)
			file, part, parts, name = f, p, ps, m[3]
			names[name] = true
		}
		require.Equal(t, files, file, "the release ends with its last file")
		require.Equal(t, parts, part, "the last file is complete")
		require.Len(t, names, files)
		var rars, par2 int
		for n := range names {
			switch {
			case regexp.MustCompile(`\.part\d+\.rar$`).MatchString(n):
				rars++
			case regexp.MustCompile(`\.par2$`).MatchString(n):
				par2++
			}
		}
		require.Positive(t, rars)
		require.Positive(t, par2)
		require.Equal(t, files, rars+par2)
	}
}

func TestSyntheticWatermarks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	low, high, err := newSynthetic(t, sources.SyntheticConfig{}).Watermarks(ctx, "alt.binaries.test")
	require.NoError(t, err)
	require.Equal(t, int64(1), low)
	require.Equal(t, int64(10_000_000), high)

	src := newSynthetic(t, sources.SyntheticConfig{Low: 3_000_000_000, High: 3_000_500_000, Groups: []string{"a.b"}})
	low, high, err = src.Watermarks(ctx, "a.b")
	require.NoError(t, err)
	require.Equal(t, int64(3_000_000_000), low)
	require.Equal(t, int64(3_000_500_000), high)

	_, _, err = src.Watermarks(ctx, "c.d")
	require.ErrorIs(t, err, sources.ErrNoSuchGroup)
	_, err = src.Fetch(ctx, "c.d", lease.Span{From: 1, To: 2})
	require.ErrorIs(t, err, sources.ErrNoSuchGroup)

	for _, cfg := range []sources.SyntheticConfig{
		{Low: 10, High: 5},
		{Low: -1, High: 5},
		{MaxSpan: -1},
		{Groups: []string{"bad group"}},
		{Groups: []string{""}},
	} {
		_, err := sources.NewSynthetic(cfg)
		require.ErrorIs(t, err, edgeindex.ErrInvalid, "%+v", cfg)
	}
}

func TestSyntheticRefuses(t *testing.T) {
	t.Parallel()
	src := newSynthetic(t, sources.SyntheticConfig{MaxSpan: 100})
	ctx := context.Background()
	for _, g := range []string{"", "a b", "a\tb", "a\nb", "a\x00b", "<a>"} {
		_, err := src.Fetch(ctx, g, lease.Span{From: 1, To: 2})
		require.ErrorIs(t, err, sources.ErrNoSuchGroup, "group %q", g)
		_, _, err = src.Watermarks(ctx, g)
		require.ErrorIs(t, err, sources.ErrNoSuchGroup, "group %q", g)
	}
	for _, sp := range []lease.Span{{From: 5, To: 4}, {From: -1, To: 4}, {From: 1, To: 101}} {
		_, err := src.Fetch(ctx, "a.b", sp)
		require.ErrorIs(t, err, edgeindex.ErrInvalid, "span %v", sp)
	}
	lines := fetchAll(t, src, "a.b", lease.Span{From: 1, To: 100})
	require.Len(t, lines, 100, "MaxSpan articles is allowed")

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err := src.Fetch(cctx, "a.b", lease.Span{From: 1, To: 2})
	require.ErrorIs(t, err, context.Canceled)
	_, _, err = src.Watermarks(cctx, "a.b")
	require.ErrorIs(t, err, context.Canceled)
}

func TestFuncs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var got []string
	src := sources.Funcs{
		FetchFunc: func(_ context.Context, group string, span lease.Span) ([]byte, error) {
			got = append(got, fmt.Sprintf("fetch %s %d-%d", group, span.From, span.To))
			return []byte("gz"), nil
		},
		WatermarksFunc: func(_ context.Context, group string) (int64, int64, error) {
			got = append(got, "watermarks "+group)
			return 5, 9, nil
		},
	}
	var cs sources.ChunkSource = src
	b, err := cs.Fetch(ctx, "g", lease.Span{From: 1, To: 2})
	require.NoError(t, err)
	require.Equal(t, []byte("gz"), b)
	low, high, err := cs.Watermarks(ctx, "g")
	require.NoError(t, err)
	require.Equal(t, [2]int64{5, 9}, [2]int64{low, high})
	require.Equal(t, []string{"fetch g 1-2", "watermarks g"}, got)

	var empty sources.Funcs
	_, err = empty.Fetch(ctx, "g", lease.Span{From: 1, To: 2})
	require.ErrorIs(t, err, sources.ErrNoSuchGroup)
	_, _, err = empty.Watermarks(ctx, "g")
	require.ErrorIs(t, err, sources.ErrNoSuchGroup)
}
