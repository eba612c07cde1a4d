package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/nntp/nntptest"
	"github.com/edgeindex/edgeindex/overview"
	"github.com/edgeindex/edgeindex/sources"
)

// overLines are n overview lines of group numbered from first.
func overLines(group string, first int64, n int) [][]byte {
	var out [][]byte
	for i := range int64(n) {
		out = append(out, fmt.Appendf(nil, "%d\t%s post %d\tposter@example.test\tSat, 04 May 2024 12:00:00 +0000\t<%d.%s@example.test>\t\t100\t1",
			first+i, group, first+i, first+i, group))
	}
	return out
}

func TestProvidersSourcesRefuseBadFlags(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		flags []string
		want  string
	}{
		{[]string{"nntp://a.example", "nntp://b.example"}, "one unnamed source at most"},
		{[]string{"a=synthetic", "a=synthetic"}, `provider "a" is named twice`},
		{[]string{"Eweka=synthetic"}, "lower-case"},
		{[]string{"=synthetic"}, "1 to 32 bytes"},
		{[]string{"a=ftp://x"}, "--source a=ftp://x: synthetic or nntp://"},
		{[]string{"a=nntp://user:secret@"}, "--source a=nntp://user:xxxxx@"},
	} {
		m := NewMain(io.Discard, io.Discard)
		m.Sources = c.flags
		_, err := m.sources(t.Context(), nil)
		require.Error(t, err, c.flags)
		require.ErrorIs(t, err, errUsage, "%v: exit 2", c.flags)
		require.Equal(t, 2, exitCode(err))
		require.ErrorContains(t, err, c.want, c.flags)
		require.NotContains(t, err.Error(), "secret", "the password is never shown")
	}
}

// Two named NNTP providers and the default one: each group goes to its
// provider's server with the newsgroup alone, each provider has its own
// connections, and an unknown provider's group is one no source carries.
func TestProvidersSourcesRouteEachGroupToItsServer(t *testing.T) {
	t.Parallel()
	const group = "alt.binaries.providers"
	servers := map[string]*nntptest.Server{}
	for name, first := range map[string]int64{"a": 1, "b": 1000, "": 50} {
		srv, err := nntptest.New(nntptest.Config{Groups: []nntptest.Group{{Name: group, Lines: overLines(group, first, 5)}}})
		require.NoError(t, err)
		t.Cleanup(func() { srv.Close() })
		servers[name] = srv
	}
	m := NewMain(io.Discard, io.Discard)
	m.NNTPConns = 3
	m.Sources = sourceFlags{"a=nntp://" + servers["a"].Addr() + "/?conns=2", "b=nntp://" + servers["b"].Addr(), "nntp://" + servers[""].Addr()}
	src, err := m.sources(t.Context(), nil)
	require.NoError(t, err)
	defer src.close()
	r, ok := src.ChunkSource.(*sources.Router)
	require.True(t, ok, "several providers are routed")
	require.Equal(t, []string{"", "a", "b"}, r.Providers())
	require.Len(t, src.nntp, 3)
	require.Equal(t, 2+3+3, src.conns, "the prefetcher fetches on every provider's connections: a's URL says 2, --nntp-conns the others'")

	for name, low := range map[string]int64{"a": 1, "b": 1000, "": 50} {
		g := grouplease.ProviderGroup(group, name)
		l, h, err := src.Watermarks(t.Context(), g)
		require.NoError(t, err, g)
		require.Equal(t, [2]int64{low, low + 4}, [2]int64{l, h}, g)
		chunk, err := src.Fetch(t.Context(), g, lease.Span{From: low, To: low + 4})
		require.NoError(t, err, g)
		var numbers []int64
		require.NoError(t, overview.ReadChunk(chunk, func(o overview.Overview) error {
			numbers = append(numbers, o.Number)
			return nil
		}))
		require.Equal(t, []int64{low, low + 1, low + 2, low + 3, low + 4}, numbers, g)
	}
	_, _, err = src.Watermarks(t.Context(), group+"@c")
	require.ErrorIs(t, err, sources.ErrNoSuchGroup)
	require.ErrorContains(t, err, `provider "c"`)
	st := src.fetchStats()
	require.Zero(t, st.InFlight)

	// One unnamed source alone is today's source, not a router.
	one := NewMain(io.Discard, io.Discard)
	one.Sources = sourceFlags{"nntp://" + servers[""].Addr()}
	s1, err := one.sources(t.Context(), nil)
	require.NoError(t, err)
	defer s1.close()
	_, routed := s1.ChunkSource.(*sources.Router)
	require.False(t, routed)

	// A server that is down stops serve at start, naming its provider.
	bad := NewMain(io.Discard, io.Discard)
	dead := servers["b"].Addr()
	require.NoError(t, servers["b"].Close())
	bad.Sources = sourceFlags{"a=nntp://" + servers["a"].Addr(), "b=nntp://" + dead}
	_, err = bad.sources(t.Context(), nil)
	require.ErrorContains(t, err, "--source b=nntp://"+dead)
	require.False(t, errors.Is(err, errUsage))
}

// group add NAME --provider P stores NAME@P, once per provider; the other
// commands address it as NAME --provider P or as NAME@P, and status shows
// the stored name.
func TestProvidersGroupOncePerProvider(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	const g = "alt.binaries.providers"
	for _, p := range []string{"eweka", "news2"} {
		out, err := run(t, data, "group", "add", g, "--provider", p, "--range-size", "100", "--plan", "tail,history")
		require.NoError(t, err)
		require.Contains(t, out, g+"@"+p)
	}
	_, err := run(t, data, "group", "add", g)
	require.NoError(t, err, "the default provider's copy is a group of its own")
	for _, args := range [][]string{{g, "--provider", "eweka"}, {g + "@news2"}} {
		_, err = run(t, data, append([]string{"group", "add"}, args...)...)
		require.ErrorIs(t, err, edgeindex.ErrConflict, "%q: once per provider", args)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"group", "add", g + "@news2", "--provider", "eweka"}, "not both"},
		{[]string{"group", "add", g + "@News2"}, "lower-case"},
		{[]string{"group", "add", g + "@"}, "1 to 32 bytes"},
		{[]string{"group", "add", g, "--provider", "bad name"}, "--provider"},
		{[]string{"range", "add", g, "1", "10", "--provider", "a@b"}, "--provider"},
	} {
		_, err = run(t, data, c.args...)
		require.ErrorIs(t, err, errUsage, "%q", c.args)
		require.ErrorContains(t, err, c.want, "%q", c.args)
	}

	out, err := run(t, data, "group", "plan", g, "--provider", "eweka", "--plan", "tail", "--margin", "5")
	require.NoError(t, err)
	require.Contains(t, out, "group "+g+"@eweka planned")
	_, err = run(t, data, "range", "add", g, "1", "250", "--provider", "news2", "--lane", "history")
	require.NoError(t, err)
	_, err = run(t, data, "range", "add", g+"@eweka", "1", "100", "--lane", "history")
	require.NoError(t, err)
	_, err = run(t, data, "range", "retry", g, "--provider", "news2", "--failed")
	require.NoError(t, err)
	_, err = run(t, data, "snapshot", "reset", g, "--provider", "news2")
	require.NoError(t, err)

	out, err = run(t, data, "status", "--json")
	require.NoError(t, err)
	var st struct {
		Lanes []struct {
			Group  string           `json:"group"`
			Ranges map[string]int64 `json:"ranges"`
		} `json:"lanes"`
		Plans []struct {
			Group string `json:"group"`
		} `json:"plans"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	pending := map[string]int64{}
	for _, l := range st.Lanes {
		pending[l.Group] += l.Ranges["pending"]
	}
	require.Equal(t, map[string]int64{g + "@eweka": 1, g + "@news2": 3}, pending)
	planned := map[string]bool{}
	for _, p := range st.Plans {
		planned[p.Group] = true
	}
	require.Equal(t, map[string]bool{g + "@eweka": true, g + "@news2": true}, planned)
	out, err = run(t, data, "status")
	require.NoError(t, err)
	require.Contains(t, out, g+"@news2")
}

// The newsgroup part of NAME@PROVIDER must be a newsgroup: not empty and
// without "@", or SplitGroup would split it at the wrong "@".
func TestProvidersGroupNameRefusesEmptyOrAtNewsgroup(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, provider string }{
		{"@eweka", ""},
		{"a@b@eweka", ""},
		{"a@b", "eweka"}, // would be stored a@b@eweka
		{"@", "eweka"},
		{"", "eweka"},
	} {
		got, err := groupName(tc.name, tc.provider)
		require.ErrorIs(t, err, errUsage, "group %q --provider %q was accepted as %q", tc.name, tc.provider, got)
	}
	data := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"@eweka"}, "a newsgroup name is required"},
		{[]string{"a@b@eweka"}, `a newsgroup name holds no "@"`},
		{[]string{"a@b", "--provider", "eweka"}, "not both"},
	} {
		_, err := run(t, data, append([]string{"group", "add"}, c.args...)...)
		require.ErrorIs(t, err, errUsage, "%q", c.args)
		require.ErrorContains(t, err, c.want, "%q", c.args)
	}
	out, err := run(t, data, "status", "--json")
	require.NoError(t, err)
	require.NotContains(t, out, "eweka", "no refused group was stored")
}

// A password holding "=" in an unnamed --source is not taken for NAME=URL.
func TestProvidersSourcePasswordWithEquals(t *testing.T) {
	t.Parallel()
	ps, err := parseSources([]string{"nntps://user:pa=ss@news.example:563"})
	require.NoError(t, err)
	require.Len(t, ps, 1)
	require.Equal(t, "", ps[0].name)
	require.Equal(t, "nntps://user:pa=ss@news.example:563", ps[0].raw)
}

// A password with "/", "#" or "?" in an unescaped --source URL ends the
// authority early, so url.Parse sees no userinfo: the start-up error must
// still print nothing of the password, and say to percent-encode it.
func TestProvidersSourceErrorHidesPassword(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		"eweka=nntps://user:1234/s3cr3t@news.example:563",
		"eweka=nntps://user:1234#s3cr3t@news.example:563",
		"eweka=nntps://user:1234?s3cr3t@news.example:563",
		"nntps://user:1234/s3cr3t@news.example:563",
		"nntps://user:1234#s3cr3t@news.example:563",
		"eweka=nntp://news.example:119#s3cr3t", // the label shows no fragment
	} {
		m := NewMain(nil, nil)
		m.Sources = []string{raw}
		_, err := m.sources(t.Context(), nil)
		require.ErrorIs(t, err, errUsage, raw)
		require.NotContains(t, err.Error(), "s3cr3t", raw)
		require.NotContains(t, err.Error(), "1234", raw)
	}
}
