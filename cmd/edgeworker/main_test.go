package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/edgeindex/edgeindex/api"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/blobstore"
	"github.com/edgeindex/edgeindex/collate"
	"github.com/edgeindex/edgeindex/coordinator"
	"github.com/edgeindex/edgeindex/edge"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/node"
	"github.com/edgeindex/edgeindex/overview"
	"github.com/edgeindex/edgeindex/sources"
	"github.com/edgeindex/edgeindex/spool"
	"github.com/edgeindex/edgeindex/sqlstore"
	"github.com/edgeindex/edgeindex/usenet"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestParseFlags(t *testing.T) {
	t.Parallel()
	tok := env(map[string]string{TokenEnv: "secret"})
	o, err := parseFlags([]string{"--coordinator", "http://c:7070"}, tok, &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, options{coordinator: "http://c:7070", token: "secret", lanes: []lease.Lane{lease.LaneHistory, lease.LaneTail}, ranges: 1,
		collate: collate.Config{MaxBinaries: collate.DefaultMaxBinaries}}, o)

	o, err = parseFlags([]string{"--coordinator=http://c", "--lanes", "tail", "--flush-incomplete=false", "--max-binaries", "7", "--ranges", "16"}, tok, &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, 16, o.ranges)
	require.Equal(t, []lease.Lane{lease.LaneTail}, o.lanes)
	require.Equal(t, collate.Config{MaxBinaries: 7}, o.collate)

	o, err = parseFlags([]string{"--coordinator=http://c", "--lanes", "none"}, tok, &bytes.Buffer{})
	require.NoError(t, err)
	require.Empty(t, o.lanes)

	for _, args := range [][]string{
		{},
		{"--coordinator", "http://c", "--lanes", "history,sideways"},
		{"--coordinator", "http://c", "--lanes", "history,"},
		{"--coordinator", "http://c", "--max-binaries", "0"},
		{"--coordinator", "http://c", "--ranges", "0"},
		{"--coordinator", "http://c", "--ranges", fmt.Sprint(api.MaxLeases + 1)},
		{"--coordinator", "http://c", "extra"},
		{"--nope"},
	} {
		_, err := parseFlags(args, tok, &bytes.Buffer{})
		require.ErrorIs(t, err, errUsage, "%q", args)
	}
	_, err = parseFlags([]string{"--coordinator", "http://c"}, env(nil), &bytes.Buffer{})
	require.ErrorIs(t, err, errUsage)
	require.ErrorContains(t, err, TokenEnv)

	// Several coordinators: the flag repeated or comma-separated, or the
	// environment's list when there is no flag.
	o, err = parseFlags([]string{"--coordinator", "http://a", "--coordinator", "http://b,http://c"}, tok, &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, "http://a", o.coordinator)
	require.Equal(t, []string{"http://b", "http://c"}, o.failover)
	withCoords := env(map[string]string{TokenEnv: "secret", CoordinatorEnv: "http://x, http://y"})
	o, err = parseFlags(nil, withCoords, &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, "http://x", o.coordinator)
	require.Equal(t, []string{"http://y"}, o.failover)
	o, err = parseFlags([]string{"--coordinator", "http://a"}, withCoords, &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, "http://a", o.coordinator, "the flag wins over the environment")
	require.Empty(t, o.failover)
	for _, args := range [][]string{{"--coordinator", "http://a,"}, {"--coordinator", ""}} {
		_, err = parseFlags(args, tok, &bytes.Buffer{})
		require.ErrorIs(t, err, errUsage, "%q", args)
	}
}

// -h names the environment the worker reads and shows an example.
func TestUsage(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	_, err := parseFlags([]string{"-h"}, env(nil), &out)
	require.ErrorIs(t, err, flag.ErrHelp)
	require.Contains(t, out.String(), TokenEnv)
	require.Contains(t, out.String(), "Example:\n  "+TokenEnv+"=")
	require.Contains(t, out.String(), "-coordinator")
}

// pipeline is a coordinator over HTTP on SQLite with a disk spool that holds
// the synthetic source's chunks of every range.
type pipeline struct {
	store *sqlstore.Store
	url   string
	token string
}

func newPipeline(t *testing.T, groups ...grouplease.Group) *pipeline {
	t.Helper()
	return newPipelineOn(t, sqlstore.Config{}, groups...)
}

// newPipelineOn is newPipeline with a store opened with cfg.
func newPipelineOn(t *testing.T, cfg sqlstore.Config, groups ...grouplease.Group) *pipeline {
	t.Helper()
	ctx := t.Context()
	st, err := sqlstore.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "edgeindex.db"), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	sp, err := spool.Open(t.TempDir(), spool.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { sp.Close() })
	src, err := sources.NewSynthetic(sources.SyntheticConfig{})
	require.NoError(t, err)
	snaps, err := blobstore.OpenDir(t.TempDir())
	require.NoError(t, err)
	svc, err := coordinator.NewService(coordinator.Config{Store: st, Spool: sp, Snapshots: snaps})
	require.NoError(t, err)
	srv := coordinator.NewServer(svc)
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { srv.Drain(); hs.Close() })

	tok, err := node.NewToken()
	require.NoError(t, err)
	_, err = st.AddNode(ctx, "worker-1", node.HashToken(tok))
	require.NoError(t, err)
	for _, g := range groups {
		g, err := st.AddGroup(ctx, g)
		require.NoError(t, err)
		rs, err := st.AddRanges(ctx, grouplease.NewRanges{Group: g.Name, From: span.From, To: span.To})
		require.NoError(t, err)
		for _, r := range rs {
			for _, s := range lease.Spans(r.Start, r.End, g.ChunkSize) {
				data, err := src.Fetch(ctx, g.Name, s)
				require.NoError(t, err)
				require.NoError(t, sp.Put(r.ID, s, data))
			}
		}
	}
	return &pipeline{store: st, url: hs.URL, token: tok}
}

// done reports whether every range is done, failing on a failed one.
func (p *pipeline) done(t *testing.T) bool {
	rs, err := p.store.Ranges(t.Context(), grouplease.RangeFilter{Limit: 1000})
	require.NoError(t, err)
	for _, r := range rs {
		require.NotEqual(t, lease.StateFailed, r.State, "range %d: %s", r.ID, r.Reason)
		if r.State != lease.StateDone {
			return false
		}
	}
	return true
}

// results reads a group's results feed.
func (p *pipeline) results(t *testing.T, group string) []batch.Stored {
	var out []batch.Stored
	q := batch.Query{Group: group, Limit: 1000}
	for {
		page, err := p.store.Results(t.Context(), q)
		require.NoError(t, err)
		out = append(out, page.Results...)
		if len(page.Results) == 0 {
			return out
		}
		q.After = page.Next
	}
}

// The span cuts releases (1000 articles each) at both ends; ranges of 1500
// and chunks of 400 cut files and releases elsewhere.
var span = lease.Span{From: 301, To: 4800}

// wholeFiles returns the number of files of group's synthetic releases that
// lie wholly in span, and of those partly in it, and the parts in span of
// the cut ones.
func wholeFiles(t *testing.T, group string) (whole, cut, cutParts int) {
	src, err := sources.NewSynthetic(sources.SyntheticConfig{})
	require.NoError(t, err)
	gz, err := src.Fetch(t.Context(), group, span)
	require.NoError(t, err)
	seen := map[string]int{}
	total := map[string]int{}
	err = overview.ReadChunk(gz, func(o overview.Overview) error {
		s, ok := usenet.ParseSubject(o.Subject)
		require.True(t, ok, o.Subject)
		seen[s.Base]++
		total[s.Base] = s.Total
		return nil
	})
	require.NoError(t, err)
	for k, n := range seen {
		if n == total[k] {
			whole++
		} else {
			cut++
			cutParts += n
		}
	}
	return whole, cut, cutParts
}

// work runs the command against p until every range is done.
func work(t *testing.T, p *pipeline, args ...string) string {
	t.Helper()
	o, err := parseFlags(append([]string{"--coordinator", p.url}, args...), env(map[string]string{TokenEnv: p.token}), &bytes.Buffer{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	var logs bytes.Buffer
	errc := make(chan error, 1)
	go func() { errc <- run(ctx, o, &logs) }()
	require.Eventually(t, func() bool { return p.done(t) }, 60*time.Second, 20*time.Millisecond)
	cancel()
	require.NoError(t, <-errc)
	return logs.String()
}

// check reads a group's feed: every part of the span comes out exactly
// once; merged by key, the binaries wholly in the span are complete. When
// the window is carried, the binaries cut by the span's ends stay in it
// and come out nowhere, and every item is complete. It returns how many
// items were incomplete.
func check(t *testing.T, p *pipeline, group string, carried bool) (incomplete int) {
	t.Helper()
	whole, cut, cutParts := wholeFiles(t, group)
	merged := map[string]usenet.Binary{}
	articles := map[int64]int{}
	for _, res := range p.results(t, group) {
		var b usenet.Binary
		require.NoError(t, json.Unmarshal(res.Value, &b))
		require.Equal(t, b.Key(), res.Key)
		require.Equal(t, group, b.Group)
		if !b.Complete {
			incomplete++
		}
		for _, pt := range b.Parts {
			require.Equal(t, fmt.Sprintf("<%d@%s.synthetic>", pt.Article, group), pt.MessageID)
			articles[pt.Article]++
		}
		if m, ok := merged[res.Key]; ok {
			require.False(t, carried, "a carried window emits a binary once")
			b = usenet.Merge(m, b)
		}
		merged[res.Key] = b
	}
	for n, c := range articles {
		require.Equal(t, 1, c, "article %d comes out once", n)
	}
	complete := 0
	for _, b := range merged {
		if b.Complete {
			complete++
		}
	}
	require.Equal(t, whole, complete)
	if carried {
		require.Equal(t, int(span.Len())-cutParts, len(articles), "the parts of whole binaries come out")
		require.Equal(t, whole, len(merged))
	} else {
		require.Equal(t, int(span.Len()), len(articles), "every article's part comes out")
		require.Equal(t, whole+cut, len(merged))
	}
	return incomplete
}

// The default, one worker on both kinds of group: an unordered group's
// incomplete binaries are flushed at each range's end, an ordered lane's
// window is carried.
func TestWorkerMixed(t *testing.T) {
	t.Parallel()
	p := newPipeline(t,
		grouplease.Group{Name: "alt.binaries.unordered", RangeSize: 1500, ChunkSize: 400},
		grouplease.Group{Name: "alt.binaries.ordered", Ordered: true, RangeSize: 1500, ChunkSize: 400},
	)
	logs := work(t, p)
	require.Contains(t, logs, "edgeworker: stopped")
	require.Positive(t, check(t, p, "alt.binaries.unordered", false), "binaries that straddle ranges come out in pieces")
	require.Zero(t, check(t, p, "alt.binaries.ordered", true), "the lane's window carries them")
}

// --ranges 4 reaches the worker (its start line says so; that it then
// leases four at once is edge's to test), and over ranges of one chunk,
// which then take turns at the one collator, every part still comes out
// once and the binaries wholly in the span complete.
func TestWorkerManyRanges(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, grouplease.Group{Name: "alt.binaries.unordered", RangeSize: 400, ChunkSize: 400})
	logs := work(t, p, "--ranges", "4")
	require.Contains(t, logs, "ranges=4")
	require.Positive(t, check(t, p, "alt.binaries.unordered", false), "binaries that straddle ranges come out in pieces")
}

// --flush-incomplete flushes ordered lanes at each range's end too.
func TestWorkerFlushes(t *testing.T) {
	t.Parallel()
	p := newPipeline(t,
		grouplease.Group{Name: "alt.binaries.unordered", RangeSize: 1500, ChunkSize: 400},
		grouplease.Group{Name: "alt.binaries.ordered", Ordered: true, RangeSize: 1500, ChunkSize: 400},
	)
	work(t, p, "--flush-incomplete")
	for _, g := range []string{"alt.binaries.unordered", "alt.binaries.ordered"} {
		require.Positive(t, check(t, p, g, false), "binaries that straddle ranges come out in pieces")
	}
}

// An ordered group with the window carried through the lane's snapshots:
// the binaries that straddle ranges come out complete, in one item.
func TestWorkerCarriesWindow(t *testing.T) {
	t.Parallel()
	const g = "alt.binaries.ordered"
	p := newPipeline(t, grouplease.Group{Name: g, Ordered: true, RangeSize: 1500, ChunkSize: 400})
	work(t, p, "--lanes", "history")
	require.Zero(t, check(t, p, g, true))
}

func TestRunRefused(t *testing.T) {
	t.Parallel()
	p := newPipeline(t)
	o, err := parseFlags([]string{"--coordinator", p.url}, env(map[string]string{TokenEnv: "not-a-token"}), &bytes.Buffer{})
	require.NoError(t, err)
	var logs bytes.Buffer
	err = run(t.Context(), o, &logs)
	require.ErrorIs(t, err, edge.ErrUnauthorized)
	require.Contains(t, logs.String(), "edgeworker: stopped")
}
