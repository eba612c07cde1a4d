package main

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/internal/inntest"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/nntp"
	"github.com/edgeindex/edgeindex/sqlstore"
)

func TestBackfillParseHistoryDate(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 15, 12, 30, 0, 0, time.FixedZone("CET", 3600))
	for _, tc := range []struct {
		in    string
		back  int64
		since time.Time
	}{
		{"", 0, time.Time{}},
		{"0", 0, time.Time{}},
		{"1000000", 1_000_000, time.Time{}},
		{"30d", 0, time.Date(2026, 2, 13, 11, 30, 0, 0, time.UTC)},
		{"36h", 0, time.Date(2026, 3, 13, 23, 30, 0, 0, time.UTC)},
		{"2026-01-01", 0, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"2025-12-24T18:00:00+01:00", 0, time.Date(2025, 12, 24, 17, 0, 0, 0, time.UTC)},
	} {
		back, since, err := parseHistory(tc.in, now)
		require.NoError(t, err, "%q", tc.in)
		require.Equal(t, tc.back, back, "%q", tc.in)
		require.True(t, tc.since.Equal(since), "%q: %s", tc.in, since)
	}
	for _, in := range []string{"-5", "d", "0d", "-3h", "0s", "30 days", "2026-13-01", "99999999999999999999", "1e6", "yesterday"} {
		_, _, err := parseHistory(in, now)
		require.Error(t, err, "%q", in)
	}
	// Through the command: a bad --history and a plan with a count and
	// a future date are refused with a usage error.
	data := t.TempDir()
	_, err := run(t, data, "group", "add", "g", "--plan", "history", "--history", "soon")
	require.ErrorContains(t, err, `--history "soon"`)
	_, err = run(t, data, "group", "add", "g", "--plan", "history", "--history", time.Now().AddDate(1, 0, 0).Format(time.DateOnly))
	require.ErrorContains(t, err, "in the future")
	require.Equal(t, 2, exitCode(err))
}

// TestBackfillINNHistoryDate runs the coordinator against a real INN with
// 600 posts spread over 60 days (holes, a few out of order), crossposted
// to two groups: `group add --plan history --history DATE` (and 30d) plan
// history from the article the date search found, and status shows it
// as an article and a date.
func TestBackfillINNHistoryDate(t *testing.T) {
	t.Parallel()
	const ga, gb = "alt.binaries.dated.a", "alt.binaries.dated.b"
	inn := inntest.Start(t)
	inn.NewGroup(t, ga)
	inn.NewGroup(t, gb)
	end := time.Now().Add(-time.Hour).Truncate(time.Second)
	const n = 600
	step := 60 * 24 * time.Hour / n
	arts := make([]inntest.Article, n)
	dates := make([]time.Time, n)
	cancelled := map[int]bool{}
	for i := range arts {
		dates[i] = end.Add(-60 * 24 * time.Hour).Add(time.Duration(i) * step)
		if i%17 == 16 {
			dates[i] = dates[i].Add(-step - 30*time.Minute) // propagated late
		}
		arts[i] = inntest.Article{MessageID: fmt.Sprintf("<d%d.%d@inntest.example.test>", i, end.Unix()),
			From: "Poster <p@example.test>", Subject: fmt.Sprintf("dated %d", i), Newsgroups: ga + "," + gb,
			Date: dates[i].Format(time.RFC1123Z), Body: []byte("body\n")}
		cancelled[i] = i%11 == 5 || i < 3
	}
	inn.Post(t, arts)
	for i := range arts {
		if cancelled[i] {
			inn.Ctlinnd(t, "cancel", arts[i].MessageID)
		}
	}
	numbers := inn.Numbers(t, ga)
	// want is the first article INN kept that is not older than since,
	// within the tolerance, and its Date.
	want := func(since time.Time) (int64, time.Time) {
		for i := range arts {
			if !cancelled[i] && !dates[i].Before(since.Add(-nntp.DateTolerance)) {
				return numbers[arts[i].MessageID], dates[i]
			}
		}
		t.Fatal("no article after", since)
		return 0, time.Time{}
	}

	data := t.TempDir()
	since := end.AddDate(0, 0, -45).UTC().Truncate(24 * time.Hour)
	out, err := run(t, data, "group", "add", ga, "--range-size", "50", "--plan", "history", "--history", since.Format(time.DateOnly))
	require.NoError(t, err)
	require.Contains(t, out, "since "+since.Format(time.RFC3339))
	require.Contains(t, out, "history starts at: since "+since.Format(time.RFC3339)+": searching")
	_, err = run(t, data, "group", "add", gb, "--range-size", "50", "--plan", "tail,history", "--history", "30d")
	require.NoError(t, err)

	serve := startServe(t, data, "--source", "nntp://"+inn.Addr(), "--poll", "50ms")
	defer serve.stop(t)
	store, err := sqlstore.Open(t.Context(), "sqlite://"+data+"/edgeindex.db", sqlstore.Config{})
	require.NoError(t, err)
	defer store.Close()
	var plans []grouplease.PlanStatus
	require.Eventually(t, func() bool {
		plans, err = store.Plans(t.Context())
		require.NoError(t, err)
		return len(plans) == 2 && plans[0].HistoryNext > 0 && plans[1].HistoryNext > 0
	}, 30*time.Second, 20*time.Millisecond, "the planner did not find the dates")

	status, err := run(t, data, "status")
	require.NoError(t, err)
	for _, p := range plans {
		wantFrom, wantDate := want(p.HistorySince)
		require.Equal(t, wantFrom, p.HistoryFrom, "%s since %s", p.Group, p.HistorySince)
		require.True(t, wantDate.Equal(p.HistoryFromDate), "%s: %s", p.Group, p.HistoryFromDate)
		rs, err := store.Ranges(t.Context(), grouplease.RangeFilter{Group: p.Group, Limit: 1000})
		require.NoError(t, err)
		starts := []int64{}
		for _, r := range rs {
			if r.Lane == lease.LaneHistory {
				starts = append(starts, r.Start)
			}
		}
		require.NotEmpty(t, starts)
		require.Equal(t, wantFrom, slices.Min(starts), "%s: history starts at the article of the date", p.Group)
		require.Contains(t, status, fmt.Sprintf("%d (%s)", wantFrom, wantDate.UTC().Format(time.RFC3339)), "status shows the article and its date")
	}
	require.True(t, plans[0].HistorySince.Equal(since))
	require.WithinDuration(t, time.Now().AddDate(0, 0, -30), plans[1].HistorySince, time.Minute, "30d is 30 days before the command")
}
