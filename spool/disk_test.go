package spool_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/spool"
	"github.com/edgeindex/edgeindex/spool/spooltest"
)

func openDisk(t *testing.T, dir string, cfg spool.Config) *spool.Disk {
	t.Helper()
	d, err := spool.Open(dir, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	return d
}

func TestDiskConformance(t *testing.T) {
	t.Parallel()
	spooltest.Run(t, func(t *testing.T, dir string) spool.Store {
		return openDisk(t, dir, spool.Config{})
	})
}

func TestDiskConformanceSmallBound(t *testing.T) {
	t.Parallel()
	spooltest.Run(t, func(t *testing.T, dir string) spool.Store {
		return openDisk(t, dir, spool.Config{MaxBytes: 4096})
	})
}

func TestDiskConfig(t *testing.T) {
	t.Parallel()
	d := openDisk(t, t.TempDir(), spool.Config{})
	require.Equal(t, spool.DefaultMaxBytes, d.MaxBytes())
	require.Equal(t, int64(2<<30), d.MaxBytes())

	_, err := spool.Open(t.TempDir(), spool.Config{MaxBytes: -1})
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
	_, err = spool.Open("", spool.Config{})
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
}

func TestDiskLayout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := openDisk(t, dir, spool.Config{})
	sp := lease.Span{From: 3_000_000_001, To: 3_000_002_000}
	require.NoError(t, d.Put(42, sp, []byte("chunk")))
	path := filepath.Join(dir, "42", "3000000001-3000002000.gz")
	require.Equal(t, path, spool.ChunkPath(dir, 42, sp))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, []byte("chunk"), got)
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temp file left after Put")
}

// Files the spool did not write are left alone and not counted.
func TestDiskIgnoresForeignFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	foreign := []string{
		filepath.Join(dir, "README"),
		filepath.Join(dir, "notanumber", "1-2.gz"),
		filepath.Join(dir, "7", "0001-2.gz"), // not the canonical name
		filepath.Join(dir, "7", "5-2.gz"),    // from > to
		filepath.Join(dir, "7", "1-2.txt"),
	}
	for _, p := range foreign {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("foreign"), 0o600))
	}
	d := openDisk(t, dir, spool.Config{})
	require.Zero(t, d.Size())
	require.False(t, d.Has(7, lease.Span{From: 1, To: 2}))
	for _, p := range foreign {
		_, err := os.Stat(p)
		require.NoError(t, err, "%s kept", p)
	}
}

// A Put racing a Drop of its range is ordered before it: it returns nil and
// never brings the range back after the Drop.
func TestDiskDropDuringPut(t *testing.T) {
	t.Parallel()
	d := openDisk(t, t.TempDir(), spool.Config{})
	spans := lease.Spans(1, 100_000, 1000)
	done, errs := make(chan struct{}), make(chan error, 1)
	go func() {
		defer close(done)
		for _, sp := range spans {
			if err := d.Put(5, sp, []byte("data")); err != nil {
				errs <- err
				return
			}
		}
	}()
	for range 20 {
		require.NoError(t, d.Drop(5))
	}
	<-done
	close(errs)
	require.NoError(t, <-errs)
	require.NoError(t, d.Drop(5))
	require.Zero(t, d.Size())
	for _, sp := range spans {
		require.False(t, d.Has(5, sp))
	}
	require.NoError(t, d.WaitRoom(context.Background(), d.MaxBytes()))
}

func TestDiskDropLeavesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := openDisk(t, dir, spool.Config{})
	require.NoError(t, d.Drop(7)) // no chunks: nothing to remove
	require.NoError(t, d.Put(7, lease.Span{From: 1, To: 10}, []byte("data")))
	require.NoError(t, d.Drop(7))
	require.Zero(t, d.Size())
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range left {
		require.True(t, strings.HasPrefix(e.Name(), spool.MarkerPrefix) || e.Name() == spool.LockName,
			"the range's directory is removed, not left aside: %s", e.Name())
	}

	// A directory a crash left aside is removed by the next Open.
	aside := filepath.Join(dir, spool.TempPrefix+"drop-7-1-1")
	require.NoError(t, os.MkdirAll(aside, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(aside, "1-10.gz"), []byte("data"), 0o644))
	d2 := openDisk(t, dir, spool.Config{})
	require.Zero(t, d2.Size())
	_, err = os.Stat(aside)
	require.ErrorIs(t, err, os.ErrNotExist)
}

// TestDiskRoomFreedBehindItsBack: chunks another process dropped (group
// rm's, or another coordinator's on the same directory) stop counting:
// a WaitRoom with no room looks on disk at once, and again while it
// waits, rather than waiting for room until the process restarts. (Not
// parallel: it sets how often the wait looks.)
func TestDiskRoomFreedBehindItsBack(t *testing.T) {
	defer spool.SetRecountEvery(20 * time.Millisecond)()
	dir := t.TempDir()
	serve := openDisk(t, dir, spool.Config{MaxBytes: 1000})
	rm := openDisk(t, dir, spool.Config{MaxBytes: 1000})
	sp := lease.Span{From: 1, To: 10}
	require.NoError(t, serve.Put(1, sp, make([]byte, 600)))
	require.NoError(t, serve.Put(2, sp, make([]byte, 300)))

	require.NoError(t, rm.Drop(1))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	require.NoError(t, serve.WaitRoom(ctx, 500), "dropped before the wait: room at once")
	require.Equal(t, int64(300), serve.Size())
	require.False(t, serve.Has(1, sp))

	done := make(chan error, 1)
	go func() { done <- serve.WaitRoom(ctx, 800) }()
	select {
	case err := <-done:
		t.Fatalf("WaitRoom returned %v with 300 of 1000 bytes stored", err)
	case <-time.After(100 * time.Millisecond):
	}
	require.NoError(t, rm.Drop(2))
	select {
	case err := <-done:
		require.NoError(t, err, "dropped during the wait")
	}
	require.Zero(t, serve.Size())
}

// TestDiskWaitRoomReturnsCtxsError: a WaitRoom cancelled as its own wait
// between two looks on disk times out returns the caller's error,
// context.Canceled, not the inner wait's DeadlineExceeded. (Not parallel:
// it sets how often the wait looks.)
func TestDiskWaitRoomReturnsCtxsError(t *testing.T) {
	defer spool.SetRecountEvery(10 * time.Millisecond)()
	d := openDisk(t, t.TempDir(), spool.Config{MaxBytes: 1000})
	require.NoError(t, d.Put(1, lease.Span{From: 1, To: 10}, make([]byte, 900)))
	for range 100 {
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(10*time.Millisecond, cancel)
		require.ErrorIs(t, d.WaitRoom(ctx, 500), context.Canceled)
		cancel()
	}
}
