package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/release"
)

// testProvidersReleasesByNewsgroup: the parts of one release read from two
// providers' copies of a newsgroup (the groups NEWSGROUP@a and
// NEWSGROUP@b, whose items still name them) make one release of the
// newsgroup, complete with the parts of both, listed by the newsgroup
// though the catalog holds only the providers' groups.
func testProvidersReleasesByNewsgroup(t *testing.T, e *env) {
	rs := releases(t, e)
	const newsgroup = "alt.binaries.prov_ders" // "_" is no wildcard here
	day := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	a, b := grouplease.ProviderGroup(newsgroup, "a"), grouplease.ProviderGroup(newsgroup, "b")
	n := e.storeItems(t, []posted{
		{poster: "p", subject: `"prov.part1.rar" yEnc`, group: a, date: day, total: 3, parts: []int{1, 3}},
		{poster: "p", subject: `"prov.part2.rar" yEnc`, group: a, date: day, total: 2, parts: []int{1}},
		{poster: "p", subject: `"prov.part1.rar" yEnc`, group: b, date: day, total: 3, parts: []int{2, 3}},
		{poster: "p", subject: `"prov.part2.rar" yEnc`, group: b, date: day, total: 2, parts: []int{2}},
	})
	b1 := e.builder(t, rs, "providers", 0)
	build(t, e, rs, b1, "providers", int64(n))
	got := all(t, e, rs, newsgroup)
	require.Len(t, got["prov"], 1, "one release of the newsgroup: %v", got)
	r := got["prov"][0]
	require.True(t, r.Complete, "the providers' parts together complete it: %+v", r)
	require.Equal(t, []string{newsgroup}, r.Groups)
	require.Equal(t, [2]int64{5, 5}, [2]int64{r.PartsSeen, r.PartsExpected}, "part 3 of part1.rar, on both, counts once")
	for _, f := range r.Files {
		require.Equal(t, []string{newsgroup}, f.Groups)
	}
	// A provider's group, as status shows it, lists the releases of its
	// newsgroup: a release's groups are newsgroups, merged over the
	// providers, so it is the same list.
	for _, g := range []string{a, b} {
		page, err := rs.Releases(e.ctx, release.Query{Group: g})
		require.NoError(t, err, g)
		require.Len(t, page.Releases, 1, "%s lists its newsgroup's releases", g)
		require.Equal(t, r.ID, page.Releases[0].ID, g)
	}
	for _, g := range []string{"alt.binaries.prov", "alt.binaries.provXders", newsgroup + "@", newsgroup + "@c"} {
		_, err := rs.Releases(e.ctx, release.Query{Group: g})
		require.ErrorIs(t, err, edgeindex.ErrNotFound, g)
	}
}
