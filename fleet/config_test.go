package fleet

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/fleetcache"
)

// TestConfigDefaults: a zero field means its default; RateReads below 2
// cannot make a rate, and MaxLanes is not negative.
func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	urls := []string{"http://127.0.0.1:1"}
	r, err := New(Config{Coordinators: urls, Token: "tok"})
	require.NoError(t, err)
	require.Equal(t, DefaultKeep, r.cfg.Keep)
	require.Equal(t, DefaultTimeout, r.cfg.Timeout)
	require.Equal(t, DefaultRateReads, r.cfg.RateReads, "0 means the default")
	require.Equal(t, DefaultMaxLanes, r.cfg.MaxLanes)
	require.Equal(t, []string{"127.0.0.1:1"}, r.Hosts())
	require.NoError(t, r.Close())
	require.NoError(t, r.Close(), "twice")

	r, err = New(Config{Coordinators: urls, Token: "tok", RateReads: 3, MaxLanes: 7, Keep: time.Minute})
	require.NoError(t, err)
	require.Equal(t, 3, r.cfg.RateReads)
	require.Equal(t, 7, r.cfg.MaxLanes)
	require.Equal(t, time.Minute, r.cfg.Keep)
	require.NoError(t, r.Close())

	for _, tc := range []struct {
		cfg  Config
		says string
	}{
		{Config{Token: "tok"}, "at least one coordinator URL"},
		{Config{Coordinators: urls}, "admin token"},
		{Config{Coordinators: urls, Token: "tok", RateReads: 1}, "RateReads must be at least 2"},
		{Config{Coordinators: urls, Token: "tok", RateReads: -5}, "RateReads must be at least 2"},
		{Config{Coordinators: urls, Token: "tok", MaxLanes: -1}, "MaxLanes must not be negative"},
		{Config{Coordinators: urls, Token: "tok", Keep: -time.Second}, "cannot be negative"},
		{Config{Coordinators: []string{"ftp://a:1"}, Token: "tok"}, "http or https"},
	} {
		_, err := New(tc.cfg)
		require.ErrorIs(t, err, edgeindex.ErrInvalid, "%+v", tc.cfg)
		require.Contains(t, err.Error(), tc.says)
	}
}

// TestParseHosts: a host is named by its URL's host:port, and read at its
// URL without a trailing slash.
func TestParseHosts(t *testing.T) {
	t.Parallel()
	hosts, err := parseHosts([]string{"http://a.example:7070", "https://b.example/prefix/", "http://c.example"})
	require.NoError(t, err)
	require.Equal(t, []host{
		{name: "a.example:7070", base: "http://a.example:7070"},
		{name: "b.example:443", base: "https://b.example/prefix"},
		{name: "c.example:80", base: "http://c.example"},
	}, hosts)
}

// TestCacheClockKeepsFastPath: with the wall clock the caches get none of
// their own, so that fleetcache reads only the monotonic clock on a hit;
// an injected clock is passed through.
func TestCacheClockKeepsFastPath(t *testing.T) {
	t.Parallel()
	cfg, err := Config{Coordinators: []string{"http://127.0.0.1:1"}, Token: "t"}.withDefaults()
	require.NoError(t, err)
	require.Nil(t, (&Coordinators{cfg: cfg}).cacheClock(), "the wall clock")
	manual := clock.NewManual(time.Unix(0, 0))
	require.Equal(t, fleetcache.Clock(manual), (&Coordinators{cfg: Config{Clock: manual}}).cacheClock())
}
