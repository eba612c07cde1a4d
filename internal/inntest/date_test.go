package inntest_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/internal/inntest"
	"github.com/edgeindex/edgeindex/nntp"
)

// DatedPosts are n articles for group spread over the days before end,
// oldest first, one every span/n: every 13th is cancelled after posting
// (a hole), as are the first five (expired), and every 17th propagated
// late, its Date 40 minutes older than the one before it. It returns the
// articles and which of them are cancelled.
func datedPosts(n int, group string, end time.Time, span time.Duration) ([]inntest.Article, map[int]bool) {
	arts := make([]inntest.Article, n)
	step := span / time.Duration(n)
	start := end.Add(-span)
	cancel := map[int]bool{}
	for i := range arts {
		date := start.Add(time.Duration(i) * step)
		if i%17 == 16 {
			date = date.Add(-step - 40*time.Minute)
		}
		arts[i] = inntest.Article{
			MessageID:  fmt.Sprintf("<dated.%d.%d@inntest.example.test>", i, end.Unix()),
			From:       "Poster <poster@example.test>",
			Subject:    fmt.Sprintf("dated post %d", i),
			Newsgroups: group,
			Date:       date.Format(time.RFC1123Z),
			Body:       []byte("body\n"),
		}
		if i%13 == 12 || i < 5 {
			cancel[i] = true
		}
	}
	return arts, cancel
}

// TestBackfillINNFindDate posts 600 articles spread over 60 days to a real
// INN (artcutoff: 0, so old Dates are accepted), cancels some (holes) and
// dates some out of order, then finds the article of several dates: the
// first present article not older than the date, within DateTolerance.
func TestBackfillINNFindDate(t *testing.T) {
	t.Parallel()
	const group = "alt.binaries.dated"
	s := inntest.Start(t)
	s.NewGroup(t, group)
	end := time.Now().Add(-24 * time.Hour).Truncate(time.Second)
	arts, cancelled := datedPosts(600, group, end, 60*24*time.Hour)
	s.Post(t, arts)
	for i := range cancelled {
		s.Ctlinnd(t, "cancel", arts[i].MessageID)
	}
	numbers := s.Numbers(t, group)
	require.Len(t, numbers, len(arts)-len(cancelled), "the cancelled articles are holes")

	src, err := nntp.New(nntp.Config{Addr: s.Addr(), MaxConns: 1})
	require.NoError(t, err)
	defer src.Close()
	for _, since := range []time.Time{
		end.Add(-30 * 24 * time.Hour),
		end.Add(-45*24*time.Hour - 7*time.Hour),
		end.Add(-59 * 24 * time.Hour),
		end.Add(-90 * 24 * time.Hour), // before every article: the first present one
		end.Add(-time.Hour),
		end.Add(time.Hour), // after every article
	} {
		want := int64(0)
		var wantDate time.Time
		for i, a := range arts { // INN numbers in the order accepted
			d, err := time.Parse(time.RFC1123Z, a.Date)
			require.NoError(t, err)
			if !cancelled[i] && !d.Before(since.Add(-nntp.DateTolerance)) {
				want, wantDate = numbers[a.MessageID], d
				break
			}
		}
		pt, err := src.FindDate(t.Context(), group, since)
		require.NoError(t, err)
		require.LessOrEqual(t, pt.Calls, nntp.MaxDateCalls)
		if want == 0 {
			require.Equal(t, int64(len(arts))+1, pt.Article, "every article older: high + 1")
			require.True(t, pt.Date.IsZero())
			continue
		}
		require.Equal(t, want, pt.Article, "since %s", since)
		require.True(t, wantDate.Equal(pt.Date), "since %s: %s", since, pt.Date)
	}
}
