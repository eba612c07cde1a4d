package release_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/usenet"
)

func file(key, subject string, date time.Time, parts ...int) release.File {
	f := release.File{Key: key, Subject: subject, Poster: "p", Date: date, Total: 3, Groups: []string{"g"}}
	for _, n := range parts {
		f.Parts = append(f.Parts, usenet.Part{N: n, MessageID: "<" + key + string(rune('0'+n)) + ">", Bytes: 10})
	}
	f.Complete = len(parts) == 3
	f.Bytes = int64(10 * len(parts))
	return f
}

// TestAssignWindow: a new file joins the nearest release of its set whose
// dates, widened by the window, hold its date; else it starts one.
func TestAssignWindow(t *testing.T) {
	t.Parallel()
	day := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	key := release.SetKey("p", release.ParseSet(`"rel.rar"`).Key)
	early := release.Release{ID: 1, Key: key, Name: "rel", Poster: "p", Posted: day, Last: day.Add(time.Hour), FilesSeen: 1}
	late := release.Release{ID: 2, Key: key, Name: "rel", Poster: "p", Posted: day.Add(10 * time.Hour), Last: day.Add(10 * time.Hour), FilesSeen: 1}
	now := day.Add(48 * time.Hour)
	u := release.Update{Window: 3 * time.Hour, Files: []release.File{
		file("a", `"rel.part1.rar"`, day.Add(2*time.Hour), 1, 2, 3), // 1h after early's last, 8h before late: early
		file("b", `"rel.part2.rar"`, day.Add(8*time.Hour), 1, 2),    // 2h before late, 7h after early: late
		file("c", `"rel.part3.rar"`, day.Add(20*time.Hour), 1),      // 10h after late: a new release
		file("d", `"rel.nfo"`, day.Add(21*time.Hour), 1, 2, 3),      // 1h after c: c's new release
		file("e", `"other.rar"`, day.Add(2*time.Hour), 1, 2, 3),     // another set: a new release
	}}
	ch := release.Assign(u, nil, []release.Release{late, early}, now)
	where := map[string]int64{}
	for _, p := range ch.Files {
		require.True(t, p.New)
		where[p.File.Key] = p.Release
	}
	require.Equal(t, map[string]int64{"a": 1, "b": 2, "c": -1, "d": -1, "e": -2}, where)
	require.Len(t, ch.New, 2)
	require.Equal(t, [4]int{2, 1, 0, 0}, [4]int{ch.New[0].FilesSeen, ch.New[0].FilesComplete, ch.New[0].FilesExpected, 0})
	require.Equal(t, day.Add(20*time.Hour), ch.New[0].Posted)
	require.Equal(t, day.Add(21*time.Hour), ch.New[0].Last)
	require.Equal(t, "other", ch.New[1].Name)
	require.True(t, ch.New[1].Complete)
	require.Len(t, ch.Changed, 2)
	for _, r := range ch.Changed {
		require.Equal(t, now, r.Updated)
		require.Equal(t, []string{"g"}, r.Groups)
	}
	// The stored releases passed in are not changed.
	require.Equal(t, 1, early.FilesSeen)
}

// TestAssignMerge: a stored file merges with its new items and stays in
// its release; the release's totals follow.
func TestAssignMerge(t *testing.T) {
	t.Parallel()
	day := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	old := file("a", `"rel.part1.rar"`, day, 1, 2)
	r := release.Release{ID: 9, Key: "k", Name: "rel", Poster: "p", Posted: day, Last: day, Groups: []string{"g"},
		FilesSeen: 1, PartsSeen: 2, PartsExpected: 3, Bytes: 20}
	more := file("a", `"rel.part1.rar"`, day.Add(time.Minute), 2, 3)
	more.Groups = []string{"h"}
	ch := release.Assign(release.Update{Window: time.Hour, Files: []release.File{more}},
		map[string]release.Stored{"a": {Release: 9, File: old}}, []release.Release{r}, day)
	require.Empty(t, ch.New)
	require.Len(t, ch.Changed, 1)
	got := ch.Changed[0]
	require.Equal(t, [2]int64{3, 3}, [2]int64{got.PartsSeen, got.PartsExpected})
	require.Equal(t, int64(30), got.Bytes)
	require.True(t, got.Complete)
	require.Equal(t, []string{"g", "h"}, got.Groups)
	require.False(t, ch.Files[0].New)
	require.Equal(t, day, ch.Files[0].File.Date, "the earlier date")
}

// TestAssignBytesSaturate: part sizes come from nodes, so a hostile one can
// claim any; a file's and a release's bytes saturate at MaxInt64 and a
// negative size counts as 0, so no size shown to a downloader wraps
// negative.
func TestAssignBytesSaturate(t *testing.T) {
	t.Parallel()
	day := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	huge := func(key string, n int) release.File {
		return release.FromBinary(key, usenet.Binary{Subject: `"rel.part1.rar" yEnc (1/2)`, Poster: "p", Total: 2, Date: day.Format(time.RFC1123Z),
			Parts: []usenet.Part{{N: n, MessageID: "<" + key + ">", Bytes: math.MaxInt64 - 1}, {N: n + 1, MessageID: "<" + key + "-2>", Bytes: -5}}})
	}
	a := huge("a", 1)
	require.Equal(t, int64(math.MaxInt64-1), a.Bytes, "the negative part counts as 0")
	a2 := release.FromBinary("a", usenet.Binary{Subject: a.Subject, Poster: "p", Total: 3,
		Parts: []usenet.Part{{N: 3, MessageID: "<a-3>", Bytes: math.MaxInt64}}})
	require.Equal(t, int64(math.MaxInt64), a.Merge(a2).Bytes, "a file's sum saturates")
	ch := release.Assign(release.Update{Window: time.Hour, Files: []release.File{a, huge("b", 1)}}, nil, nil, day)
	require.Len(t, ch.New, 1)
	require.Equal(t, int64(math.MaxInt64), ch.New[0].Bytes, "a release's sum saturates")
}

// TestAssignTotalBounded: a node's item may claim any total; a file's
// counts as usenet.MaxTotal at most, so a release's expected parts (their
// sum) cannot wrap negative.
func TestAssignTotalBounded(t *testing.T) {
	t.Parallel()
	day := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	f := func(key string) release.File {
		return release.FromBinary(key, usenet.Binary{Subject: `"rel.part1.rar" yEnc (1/2)`, Poster: "p", Total: math.MaxInt64,
			Date: day.Format(time.RFC1123Z), Parts: []usenet.Part{{N: 1, MessageID: "<" + key + ">", Bytes: 10}}})
	}
	ch := release.Assign(release.Update{Window: time.Hour, Files: []release.File{f("a"), f("b")}}, nil, nil, day)
	require.Len(t, ch.New, 1)
	require.Equal(t, int64(2*usenet.MaxTotal), ch.New[0].PartsExpected, "was -2")
	require.GreaterOrEqual(t, ch.New[0].Completion(), 0.0)
}
