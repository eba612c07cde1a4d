package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/edgeindex/edgeindex/blobstore"
	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/coordinator"
	"github.com/edgeindex/edgeindex/fleet"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/spool"
	"github.com/edgeindex/edgeindex/sqlstore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// realCoordinator serves a real coordinator with one group of 5 ranges,
// counting the requests that reach it.
func realCoordinator(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	st, err := sqlstore.Open(t.Context(), "sqlite://"+filepath.Join(t.TempDir(), "db"), sqlstore.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	sp, err := spool.Open(t.TempDir(), spool.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { sp.Close() })
	_, err = st.AddGroup(t.Context(), grouplease.Group{Name: "alt.binaries.watch", RangeSize: 100})
	require.NoError(t, err)
	_, err = st.AddRanges(t.Context(), grouplease.NewRanges{Group: "alt.binaries.watch", From: 1, To: 500})
	require.NoError(t, err)
	snaps, err := blobstore.OpenDir(t.TempDir())
	require.NoError(t, err)
	svc, err := coordinator.NewService(coordinator.Config{Store: st, Spool: sp, Snapshots: snaps, AdminToken: "admin"})
	require.NoError(t, err)
	srv := coordinator.NewServer(svc)
	var hits atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs, &hits
}

func TestHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-h"}, {"--help"}} {
		var out bytes.Buffer
		require.NoError(t, run(t.Context(), args, "", &out), "%q", args)
		for _, v := range []string{"usage: fleetwatch", "EDGEINDEX_ADMIN_TOKEN", "Example:", "-coordinator"} {
			require.Contains(t, out.String(), v, "%q", args)
		}
	}
}

func TestOnce(t *testing.T) {
	t.Parallel()
	hs, _ := realCoordinator(t)
	var out bytes.Buffer
	require.NoError(t, run(t.Context(), []string{"--coordinator", hs.URL, "--once"}, "admin", &out))
	require.Contains(t, out.String(), "ranges: pending 5")
	require.Contains(t, out.String(), "current")

	out.Reset()
	require.NoError(t, run(t.Context(), []string{"--coordinator", hs.URL, "--once"}, "wrong", &out))
	require.Contains(t, out.String(), "401")
	require.Error(t, run(t.Context(), []string{"--once"}, "admin", &out))
}

// Many looks within --keep make one read of the coordinator.
func TestCachedLooks(t *testing.T) {
	t.Parallel()
	hs, hits := realCoordinator(t)
	r, err := fleet.New(fleet.Config{Coordinators: []string{hs.URL}, Token: "admin", Keep: time.Minute, Clock: clock.NewManual(time.Now())})
	require.NoError(t, err)
	defer r.Close()
	for range 50 {
		a, err := r.Fleet(t.Context())
		require.NoError(t, err)
		require.Equal(t, int64(5), a.Read.Hosts()[0].Fleet.Ranges["pending"])
	}
	require.Equal(t, int64(1), hits.Load())
}
