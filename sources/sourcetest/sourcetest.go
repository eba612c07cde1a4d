package sourcetest

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/overview"
	"github.com/edgeindex/edgeindex/sources"
)

// Harness is one source under test and what it is known to carry.
type Harness struct {
	// Source is the source under test.
	Source sources.ChunkSource
	// Group is a group Source carries; Low and High are the watermarks
	// Watermarks must report for it.
	Group     string
	Low, High int64
	// Present reports whether article n of Group exists: a chunk holds
	// one line for each present article of its span, and no other.
	Present func(n int64) bool
	// Span is a span of Group with present articles, fetched whole.
	Span lease.Span
	// EmptySpan, when set, is a span of Group with no present article.
	EmptySpan *lease.Span
	// BigSpan, when set, is a span above 2^31 with present articles.
	BigSpan *lease.Span
	// MissingGroup is a group Source does not carry. Default
	// "sourcetest.no.such.group".
	MissingGroup string
}

// New returns a fresh harness for one case; it may register cleanups on t.
type New func(t *testing.T) Harness

// waitLimit bounds how long a case waits for a call that must return; it
// only fails a broken source, it never paces a working one.
const waitLimit = 10 * time.Second

// Run runs every case, in parallel, each with its own harness.
func Run(t *testing.T, newHarness New) {
	t.Helper()
	cases := []struct {
		name string
		fn   func(t *testing.T, h Harness)
	}{
		{"Watermarks", testWatermarks},
		{"FullSpan", testFullSpan},
		{"SubSpans", testSubSpans},
		{"EmptySpan", testEmptySpan},
		{"NoSuchGroup", testNoSuchGroup},
		{"AboveInt32", testAboveInt32},
		{"Concurrent", testConcurrent},
		{"Cancelled", testCancelled},
		{"CancelDuring", testCancelDuring},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			require.NotNil(t, h.Source, "harness has no Source")
			require.NotNil(t, h.Present, "harness has no Present")
			if h.MissingGroup == "" {
				h.MissingGroup = "sourcetest.no.such.group"
			}
			c.fn(t, h)
		})
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}

// Lines inflates a chunk and returns its lines, each with its "\n", after
// checking that overview.ReadChunk reads it.
func Lines(t testing.TB, chunk []byte) [][]byte {
	t.Helper()
	require.NoError(t, overview.ReadChunk(chunk, func(overview.Overview) error { return nil }), "overview.ReadChunk refuses the chunk")
	zr, err := gzip.NewReader(bytes.NewReader(chunk))
	require.NoError(t, err)
	raw, err := io.ReadAll(zr)
	require.NoError(t, err)
	var out [][]byte
	for len(raw) > 0 {
		i := bytes.IndexByte(raw, '\n')
		require.GreaterOrEqual(t, i, 0, "last line does not end in \\n")
		out = append(out, raw[:i+1])
		raw = raw[i+1:]
	}
	return out
}

// checkChunk checks that chunk holds exactly one line per present article
// of span, in order, each parsing with overview.Parse.
func checkChunk(t *testing.T, h Harness, span lease.Span, chunk []byte) {
	t.Helper()
	lines := Lines(t, chunk)
	var want []int64
	for n := span.From; ; n++ {
		if h.Present(n) {
			want = append(want, n)
		}
		if n == span.To {
			break
		}
	}
	got := make([]int64, 0, len(lines))
	for _, l := range lines {
		o, err := overview.Parse(l)
		require.NoError(t, err, "line %q", l)
		require.GreaterOrEqual(t, o.Number, span.From, "line outside the span")
		require.LessOrEqual(t, o.Number, span.To, "line outside the span")
		got = append(got, o.Number)
	}
	require.Equal(t, want, got, "article numbers of span %d-%d", span.From, span.To)
}

func testWatermarks(t *testing.T, h Harness) {
	low, high, err := h.Source.Watermarks(ctxT(t), h.Group)
	require.NoError(t, err)
	require.Equal(t, h.Low, low, "low watermark")
	require.Equal(t, h.High, high, "high watermark")
}

func testFullSpan(t *testing.T, h Harness) {
	chunk, err := h.Source.Fetch(ctxT(t), h.Group, h.Span)
	require.NoError(t, err)
	checkChunk(t, h, h.Span, chunk)
	require.NotEmpty(t, Lines(t, chunk), "Span must have present articles")
}

// testSubSpans fetches Span in three pieces: they must agree with the
// whole, line for line.
func testSubSpans(t *testing.T, h Harness) {
	ctx := ctxT(t)
	whole, err := h.Source.Fetch(ctx, h.Group, h.Span)
	require.NoError(t, err)
	var parts [][]byte
	for _, sp := range lease.Spans(h.Span.From, h.Span.To, max(1, (h.Span.Len()+2)/3)) {
		chunk, err := h.Source.Fetch(ctx, h.Group, sp)
		require.NoError(t, err)
		checkChunk(t, h, sp, chunk)
		parts = append(parts, Lines(t, chunk)...)
	}
	require.Equal(t, Lines(t, whole), parts)
}

func testEmptySpan(t *testing.T, h Harness) {
	if h.EmptySpan == nil {
		t.Skip("the harness has no empty span")
	}
	chunk, err := h.Source.Fetch(ctxT(t), h.Group, *h.EmptySpan)
	require.NoError(t, err, "an empty span is a chunk with no lines, not an error")
	require.Empty(t, Lines(t, chunk))
}

func testNoSuchGroup(t *testing.T, h Harness) {
	ctx := ctxT(t)
	_, err := h.Source.Fetch(ctx, h.MissingGroup, h.Span)
	require.ErrorIs(t, err, sources.ErrNoSuchGroup, "Fetch")
	_, _, err = h.Source.Watermarks(ctx, h.MissingGroup)
	require.ErrorIs(t, err, sources.ErrNoSuchGroup, "Watermarks")
	// The source still serves the groups it carries.
	_, err = h.Source.Fetch(ctx, h.Group, h.Span)
	require.NoError(t, err)
}

func testAboveInt32(t *testing.T, h Harness) {
	if h.BigSpan == nil {
		t.Skip("the harness has no span above 2^31")
	}
	require.Greater(t, h.BigSpan.From, int64(1<<31), "BigSpan must be above 2^31")
	chunk, err := h.Source.Fetch(ctxT(t), h.Group, *h.BigSpan)
	require.NoError(t, err)
	checkChunk(t, h, *h.BigSpan, chunk)
	require.NotEmpty(t, Lines(t, chunk))
}

func testConcurrent(t *testing.T, h Harness) {
	ctx := ctxT(t)
	const n = 16
	spans := lease.Spans(h.Span.From, h.Span.To, max(1, (h.Span.Len()+3)/4))
	want := make([][][]byte, len(spans))
	for i, sp := range spans {
		chunk, err := h.Source.Fetch(ctx, h.Group, sp)
		require.NoError(t, err)
		want[i] = Lines(t, chunk)
	}
	got := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			got[i], errs[i] = h.Source.Fetch(ctx, h.Group, spans[i%len(spans)])
		})
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i], "fetch %d", i)
		require.Equal(t, want[i%len(spans)], Lines(t, got[i]), "fetch %d: inflated bytes differ", i)
	}
}

func testCancelled(t *testing.T, h Harness) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := h.Source.Fetch(ctx, h.Group, h.Span)
	require.ErrorIs(t, err, context.Canceled, "Fetch")
	_, _, err = h.Source.Watermarks(ctx, h.Group)
	require.ErrorIs(t, err, context.Canceled, "Watermarks")
	// The source is still usable.
	_, err = h.Source.Fetch(ctxT(t), h.Group, h.Span)
	require.NoError(t, err)
}

// testCancelDuring cancels fetches while they run: each returns, with a
// chunk or an error that says the context ended, and the source still
// works after.
func testCancelDuring(t *testing.T, h Harness) {
	const n = 8
	done := make(chan error, n)
	ctx, cancel := context.WithCancel(t.Context())
	for range n {
		go func() {
			chunk, err := h.Source.Fetch(ctx, h.Group, h.Span)
			if err == nil {
				if e := overview.ReadChunk(chunk, func(overview.Overview) error { return nil }); e != nil {
					err = errors.Join(errors.New("a chunk returned despite the cancel is corrupt"), e)
				}
			} else if !errors.Is(err, context.Canceled) {
				err = errors.Join(errors.New("the error does not wrap context.Canceled"), err)
			} else {
				err = nil
			}
			done <- err
		}()
	}
	cancel()
	timeout := time.After(waitLimit)
	for range n {
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-timeout:
			t.Fatalf("Fetch did not return within %s of its context's cancel", waitLimit)
		}
	}
	_, err := h.Source.Fetch(ctxT(t), h.Group, h.Span)
	require.NoError(t, err, "the source must work after cancelled fetches")
}
