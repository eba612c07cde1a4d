package nntp_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/nntp"
	"github.com/edgeindex/edgeindex/nntp/nntptest"
	"github.com/edgeindex/edgeindex/overview"
)

// giga is a generated group of 10^9 articles numbered above 2^40, one a
// second from base: with holes (every 97th number, and runs of 50 at each
// 10,000th), and its first 10^8 numbers expired below a low watermark
// that still reports them.
const (
	gigaLow   = int64(1)<<40 + 1
	gigaHigh  = gigaLow + 1_000_000_000 - 1
	gigaFirst = gigaLow + 100_000_000 // the first present article
)

// gigaBase is the date of its first number: 10^9 seconds (31.7 years)
// later is still in the past, where FindDate believes dates.
var gigaBase = time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC)

func gigaPresent(n int64) bool {
	return n >= gigaFirst && n%97 != 0 && n%10_000 >= 50
}

func gigaDate(n int64) time.Time { return gigaBase.Add(time.Duration(n-gigaLow) * time.Second) }

func gigaGen() *nntptest.Gen {
	return &nntptest.Gen{Low: gigaLow, High: gigaHigh, Present: gigaPresent, Date: gigaDate}
}

// findDate runs FindDate against a server with one generated group and
// checks the bound on OVER commands on both sides.
func findDate(t *testing.T, cfg nntptest.Config, since time.Time) (grouplease.DatePoint, error) {
	t.Helper()
	return findDateWith(t, cfg, since, nil)
}

// findDateWith is findDate with the Source's Config changed by mod.
func findDateWith(t *testing.T, cfg nntptest.Config, since time.Time, mod func(*nntp.Config)) (grouplease.DatePoint, error) {
	t.Helper()
	srv := serve(t, cfg)
	src := open(t, srv, mod)
	pt, err := src.FindDate(ctxT(t), testGroup, since)
	st := srv.Stats()
	over := st.Commands["OVER"] + st.Commands["XOVER"]
	require.LessOrEqual(t, over, nntp.MaxDateCalls, "OVER commands the server saw")
	require.Equal(t, 1, st.Commands["GROUP"], "GROUP is sent once")
	if err == nil {
		require.Equal(t, over, pt.Calls)
	}
	return pt, err
}

func genConfig(gen *nntptest.Gen) nntptest.Config {
	return nntptest.Config{Groups: []nntptest.Group{{Name: testGroup, Gen: gen}}}
}

// firstPresent is the first present article of the giga group at or
// after n.
func firstPresent(n int64) int64 {
	for !gigaPresent(n) {
		n++
	}
	return n
}

// TestBackfillFindDate: in a group of 10^9 articles above 2^40 with
// holes and expired first articles, FindDate settles on the first
// article not older than the date (within DateTolerance), within
// MaxDateCalls OVER commands.
func TestBackfillFindDate(t *testing.T) {
	t.Parallel()
	tol := nntp.DateTolerance
	for _, tc := range []struct {
		name     string
		since    time.Time
		want     int64
		maxCalls int
	}{
		{"middle", gigaDate(gigaLow + 543_210_987), firstPresent(gigaLow + 543_210_987 - int64(tol/time.Second)), 30},
		{"in a hole", gigaDate(gigaLow + 700_000_020), firstPresent(gigaLow + 700_000_020 - int64(tol/time.Second)), 30},
		// The search meets the 10^8 expired numbers as empty windows,
		// and probes right of each with the calls the bisection can
		// spare, in case they are a hole with articles below it.
		{"before every article: the first present, above the expired ones", gigaBase.Add(-24 * time.Hour), gigaFirst, nntp.MaxDateCalls},
		{"in the expired numbers", gigaDate(gigaLow + 1000), gigaFirst, nntp.MaxDateCalls},
		{"just after the last", gigaDate(gigaHigh + 1).Add(tol + time.Second), gigaHigh + 1, 30},
		{"the last", gigaDate(gigaHigh - 1).Add(tol), gigaHigh - 1, 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pt, err := findDate(t, genConfig(gigaGen()), tc.since)
			require.NoError(t, err)
			require.Equal(t, tc.want, pt.Article, "found %d, want %d (off by %d)", pt.Article, tc.want, pt.Article-tc.want)
			if tc.want > gigaHigh {
				require.True(t, pt.Date.IsZero(), "every article older: no date")
			} else {
				require.True(t, gigaDate(tc.want).Equal(pt.Date))
			}
			require.LessOrEqual(t, pt.Calls, tc.maxCalls, "log2(10^9) − 5 and a last window, and probes right of empty ones")
			t.Logf("%s: article %d in %d OVER calls", tc.name, pt.Article, pt.Calls)
		})
	}
}

// TestBackfillFindDateLatePosts: a whole upload that propagated late (its
// Dates 50 minutes older than its numbers say) just after the date does
// not send the search past it: it settles at the first article within
// DateTolerance of the date, never above the first one dated on or after
// it. Sparse late posts, and early ones further down, are taken too.
func TestBackfillFindDateLatePosts(t *testing.T) {
	t.Parallel()
	const low, high = int64(1), int64(50_000_000)
	boundary := int64(31_415_926)                       // the first article dated on or after since
	lateFrom, lateTo := boundary, boundary+5000         // posted late
	base := time.Date(2016, 1, 1, 0, 0, 0, 0, time.UTC) // 50,000,000 s later is still past
	real := func(n int64) time.Time { return base.Add(time.Duration(n) * time.Second) }
	date := func(n int64) time.Time {
		switch {
		case n >= lateFrom && n <= lateTo, n%53 == 0:
			return real(n).Add(-50 * time.Minute)
		case n%59 == 0 && n < boundary-100_000:
			return real(n).Add(20 * time.Minute) // early: a clock ahead
		}
		return real(n)
	}
	since := real(boundary)
	pt, err := findDate(t, genConfig(&nntptest.Gen{Low: low, High: high, Date: date}), since)
	require.NoError(t, err)
	require.LessOrEqual(t, pt.Article, boundary, "the late upload is not skipped")
	require.GreaterOrEqual(t, pt.Article, boundary-int64(nntp.DateTolerance/time.Second), "within the tolerance of the date")
	require.False(t, pt.Date.Before(since.Add(-nntp.DateTolerance)), "not older than the date, within the tolerance")
	require.True(t, date(pt.Article).Equal(pt.Date))
}

// TestBackfillFindDateHostile: servers that lie cannot make the search
// loop, read without bound or send more than MaxDateCalls OVER commands.
func TestBackfillFindDateHostile(t *testing.T) {
	t.Parallel()
	since := gigaDate(gigaLow + 400_000_000)
	jumpy := func(n int64) time.Time { // dates that jump around
		x := uint64(n) * 0x9e3779b97f4a7c15
		return gigaBase.Add(time.Duration(x%(40*365*24*3600)) * time.Second)
	}
	garbage := func(n int64) []byte {
		switch n % 4 {
		case 0:
			return []byte("garbage")
		case 1:
			return fmt.Appendf(nil, "%d\tsubject\tfrom\tnot a date at all\t<m@x>\t\t1\t1", n)
		case 2:
			return fmt.Appendf(nil, "%d\tsubject\tfrom\tFri, 31 Dec 1969 23:00:00 +0000\t<m@x>\t\t1\t1", n)
		}
		return fmt.Appendf(nil, "%d\tonly\tfour\tfields", n)
	}
	for _, tc := range []struct {
		name string
		cfg  nntptest.Config
		want func(t *testing.T, pt grouplease.DatePoint, err error)
	}{
		{"dates that jump around", genConfig(&nntptest.Gen{Low: gigaLow, High: gigaHigh, Date: jumpy}),
			func(t *testing.T, pt grouplease.DatePoint, err error) {
				require.NoError(t, err)
				require.True(t, pt.Article >= gigaLow && pt.Article <= gigaHigh+1)
			}},
		{"every window empty", genConfig(&nntptest.Gen{Low: gigaLow, High: gigaHigh, Present: func(int64) bool { return false }}),
			func(t *testing.T, pt grouplease.DatePoint, err error) {
				require.NoError(t, err)
				require.Equal(t, gigaHigh+1, pt.Article, "no article: as if every one were older")
			}},
		{"garbage lines", genConfig(&nntptest.Gen{Low: gigaLow, High: gigaHigh, Line: garbage}),
			func(t *testing.T, pt grouplease.DatePoint, err error) {
				require.ErrorIs(t, err, nntp.ErrDateSearch, "lines but no Date: not every article older")
			}},
		{"every Date in the future", genConfig(&nntptest.Gen{Low: gigaLow, High: gigaHigh,
			Date: func(int64) time.Time { return time.Date(9000, 1, 1, 0, 0, 0, 0, time.UTC) }}),
			func(t *testing.T, pt grouplease.DatePoint, err error) {
				require.ErrorIs(t, err, nntp.ErrDateSearch, "future Dates count as none")
			}},
		{"the highest numbers", genConfig(&nntptest.Gen{Low: 1, High: grouplease.MaxArticle,
			Date: func(n int64) time.Time { return gigaBase.Add(time.Duration(n>>34) * time.Second) }}),
			func(t *testing.T, pt grouplease.DatePoint, err error) {
				require.NoError(t, err)
				require.Equal(t, int64(1)<<61-int64(time.Hour/time.Second)<<34, pt.Article)
				require.LessOrEqual(t, pt.Calls, 58, "log2(2^62) − 5 and a last window")
			}},
		{"a window that never ends", func() nntptest.Config {
			c := genConfig(gigaGen())
			c.Endless = true
			return c
		}(), func(t *testing.T, pt grouplease.DatePoint, err error) {
			require.ErrorIs(t, err, nntp.ErrProtocol)
		}},
		{"lines too long to keep, forever", func() nntptest.Config {
			c := genConfig(gigaGen())
			c.EndlessLong = overview.MaxLineBytes + 10
			return c
		}(), func(t *testing.T, pt grouplease.DatePoint, err error) {
			require.True(t, errors.Is(err, nntp.ErrTooLarge) || errors.Is(err, nntp.ErrProtocol), "cut by a bound: %v", err)
		}},
		{"no OVER: XOVER", func() nntptest.Config {
			c := genConfig(gigaGen())
			c.NoOver = true
			return c
		}(), func(t *testing.T, pt grouplease.DatePoint, err error) {
			require.NoError(t, err)
			require.Equal(t, firstPresent(gigaLow+400_000_000-3600), pt.Article)
		}},
		{"an empty group", genConfig(&nntptest.Gen{Low: 500, High: 499}),
			func(t *testing.T, pt grouplease.DatePoint, err error) {
				require.NoError(t, err)
				require.Equal(t, int64(500), pt.Article)
				require.Zero(t, pt.Calls)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			at := since
			if tc.name == "the highest numbers" {
				at = gigaBase.Add(1 << 27 * time.Second)
			}
			pt, err := findDate(t, tc.cfg, at)
			tc.want(t, pt, err)
		})
	}
}

// TestBackfillFindDateNoGroup: a group the server does not carry is
// ErrNoSuchGroup.
func TestBackfillFindDateNoGroup(t *testing.T) {
	t.Parallel()
	srv := serve(t, genConfig(gigaGen()))
	_, err := open(t, srv, nil).FindDate(ctxT(t), "alt.nope", gigaBase)
	require.ErrorIs(t, err, nntp.ErrNoSuchGroup)
}

func TestBackfillParseDate(t *testing.T) {
	t.Parallel()
	want := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, s := range []string{
		"Fri, 02 Jan 2026 03:04:05 +0000",
		"Fri, 2 Jan 2026 03:04:05 +0000",
		"Fri, 02 Jan 2026 03:04:05 GMT",
		"Fri, 02 Jan 2026 03:04:05 UT",
		"02 Jan 2026 03:04:05 +0000",
		"Fri, 02 Jan 2026 03:04:05 +0000 (UTC)",
		"Fri,  2 Jan 2026 04:04:05 +0100",
		"Thu, 01 Jan 2026 22:04:05 -0500 (EST)",
		"Fri, 02 Jan 26 03:04:05 GMT",
		"2 Jan 26 03:04:05 +0000",
		"Fri, 2-Jan-2026 03:04:05 +0000",
		"Fri Jan  2 03:04:05 2026",
		"2026-01-02T03:04:05Z",
		"  Fri, 02 Jan 2026 03:04:05 +0000  ",
	} {
		got, ok := nntp.ParseDate(s)
		require.True(t, ok, "%q", s)
		require.True(t, want.Equal(got), "%q: %s", s, got)
	}
	noSeconds, ok := nntp.ParseDate("Fri, 02 Jan 2026 03:04 +0000")
	require.True(t, ok)
	require.True(t, want.Truncate(time.Minute).Equal(noSeconds))
	for _, s := range []string{"", "yesterday", "Fri, 32 Jan 2026 03:04:05 +0000", "Fri, 02 Jan 1969 03:04:05 +0000",
		"Fri, 02 Jan 2026 03:04:05 +0000" + string(make([]byte, 300)), "0", "\x00\xff",
		"31 Dec 9999 23:59 -0100", "Thu, 01 Jan 1970 00:30:00 +0100"} { // years 10000 and 1969 in UTC
		_, ok := nntp.ParseDate(s)
		require.False(t, ok, "%q", s)
	}
}

// TestBackfillFindDateLongHoleMidGroup: a run of 20,000 absent numbers
// (a takedown, a lost spool file) above the date's first article does not
// make FindDate settle above the hole, which would lose every article
// between the date and the hole.
func TestBackfillFindDateLongHoleMidGroup(t *testing.T) {
	t.Parallel()
	base := time.Date(2016, 1, 1, 0, 0, 0, 0, time.UTC)
	date := func(n int64) time.Time { return base.Add(time.Duration(n) * time.Minute) }
	const holeFrom, holeTo = 40_000, 60_000
	gen := &nntptest.Gen{Low: 1, High: 100_000, Date: date,
		Present: func(n int64) bool { return n < holeFrom || n > holeTo }}
	pt, err := findDate(t, genConfig(gen), date(30_000))
	require.NoError(t, err)
	// DateTolerance is 1h: 60 articles here.
	require.Equal(t, int64(30_000-60), pt.Article, "settled %d articles too high", pt.Article-(30_000-60))
}

// TestBackfillFindDateFutureDatedPosts: posts from a client whose clock
// is years ahead (one in 500 here) count as undated, so they do not make
// a probe's window "not older" and send the search far below the date.
// The Source's clock is injected: the fixture's dates are its past.
func TestBackfillFindDateFutureDatedPosts(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := base.Add(100_000*time.Minute + 24*time.Hour)
	date := func(n int64) time.Time {
		if n%500 == 0 {
			return time.Date(2037, 1, 1, 0, 0, 0, 0, time.UTC)
		}
		return base.Add(time.Duration(n) * time.Minute)
	}
	gen := &nntptest.Gen{Low: 1, High: 100_000, Date: date}
	pt, err := findDateWith(t, genConfig(gen), date(90_001), func(c *nntp.Config) { c.Clock = clock.NewManual(now) })
	require.NoError(t, err)
	require.Equal(t, int64(90_001-60), pt.Article, "settled %d articles below the date", 90_001-60-pt.Article)

	// The same group searched by a clock at 2036: the posts are no
	// longer in its future, and the search settles low.
	pt, err = findDateWith(t, genConfig(gen), date(90_001), func(c *nntp.Config) {
		c.Clock = clock.NewManual(time.Date(2037, 6, 1, 0, 0, 0, 0, time.UTC))
	})
	require.NoError(t, err)
	require.Less(t, pt.Article, int64(90_001-60), "the clock decides what is in the future")
}
