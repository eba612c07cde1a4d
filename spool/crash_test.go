package spool_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/coordinator"
	"github.com/edgeindex/edgeindex/edgeframe"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/prefetch"
	"github.com/edgeindex/edgeindex/prefetch/prefetchtest"
	"github.com/edgeindex/edgeindex/spool"
)

// markers lists the Disk markers in dir.
func markers(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, spool.MarkerPrefix+"*"))
	require.NoError(t, err)
	return m
}

// gzipOf is a whole chunk of n bytes of text.
func gzipOf(t *testing.T, seed string, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err := zw.Write(bytes.Repeat([]byte(seed), n/len(seed)+1)[:n])
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// tear rewrites the chunk's file as a power loss may leave a file that was
// never synced.
type tear struct {
	name string
	bad  func(whole []byte) []byte
}

var tears = []tear{
	{"truncated", func(w []byte) []byte { return w[:len(w)/2] }},
	{"trailer cut", func(w []byte) []byte { return w[:len(w)-4] }},
	{"zero-length", func([]byte) []byte { return nil }},
	{"zeros", func(w []byte) []byte { return make([]byte, len(w)) }},
	{"tail zeroed", func(w []byte) []byte {
		b := bytes.Clone(w)
		clear(b[len(b)/2:])
		return b
	}},
	{"garbage", func(w []byte) []byte {
		b := make([]byte, len(w))
		r := rand.NewChaCha8([32]byte{1})
		_, _ = r.Read(b)
		return b
	}},
	{"one byte flipped", func(w []byte) []byte {
		b := bytes.Clone(w)
		b[len(b)/2] ^= 0x40
		return b
	}},
	{"garbage after", func(w []byte) []byte { return append(bytes.Clone(w), "\x00\x00\x00\x00junk"...) }},
}

// TestDiskCrashDropsTornChunks: after a stop without Close, Open keeps the
// whole chunks and removes every torn one, whatever the tear, so none is
// ever read; the size counts only the whole ones; the dead marker goes
// once that is done.
func TestDiskCrashDropsTornChunks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d, err := spool.Open(dir, spool.Config{})
	require.NoError(t, err)
	whole := map[lease.Span][]byte{}
	for i := range len(tears) + 2 {
		sp := lease.Span{From: int64(i*10 + 1), To: int64(i*10 + 10)}
		whole[sp] = gzipOf(t, fmt.Sprintf("chunk %d-%d;", sp.From, sp.To), 500+i*97)
		require.NoError(t, d.Put(1, sp, whole[sp]))
	}
	empty := gzipOf(t, "x", 0) // a span with no article: still whole
	require.NoError(t, d.Put(1, lease.Span{From: 1001, To: 1010}, empty))
	lone := lease.Span{From: 1, To: 10}
	require.NoError(t, d.Put(2, lone, whole[lone]))
	require.Len(t, markers(t, dir), 1)
	spool.Crash(d)
	require.Len(t, markers(t, dir), 1, "a crash leaves the marker")

	// The power loss: a chunk per tear, and the lone chunk of range 2.
	torn := map[lease.Span]bool{}
	for i, tr := range tears {
		sp := lease.Span{From: int64(i*10 + 1), To: int64(i*10 + 10)}
		torn[sp] = true
		require.NoError(t, os.WriteFile(spool.ChunkPath(dir, 1, sp), tr.bad(whole[sp]), 0o600), tr.name)
	}
	require.NoError(t, os.WriteFile(spool.ChunkPath(dir, 2, lone), whole[lone][:10], 0o600))

	d = openDisk(t, dir, spool.Config{})
	require.Equal(t, len(tears)+1, d.Torn())
	var size int64
	for sp, data := range whole {
		if torn[sp] {
			require.False(t, d.Has(1, sp), "%v", sp)
			_, err := d.Read(1, sp)
			require.ErrorIs(t, err, spool.ErrNotFound)
			require.NoFileExists(t, spool.ChunkPath(dir, 1, sp))
			continue
		}
		got, err := d.Read(1, sp)
		require.NoError(t, err)
		require.Equal(t, data, got)
		size += int64(len(data))
	}
	require.True(t, d.Has(1, lease.Span{From: 1001, To: 1010}))
	size += int64(len(empty))
	require.False(t, d.Has(2, lone))
	require.Equal(t, size, d.Size(), "only the whole chunks are counted")
	require.Len(t, markers(t, dir), 1, "the dead marker is gone, the new one is there")

	// Whatever it wrote is trusted after a clean stop, as is what it kept.
	require.NoError(t, d.Put(2, lone, whole[lone]))
	require.NoError(t, d.Close())
	require.Empty(t, markers(t, dir), "Close removes the marker")
	d = openDisk(t, dir, spool.Config{})
	require.Zero(t, d.Torn())
	require.Equal(t, size+int64(len(whole[lone])), d.Size())
}

// TestDiskCleanRestartReadsNothing: after Close, Open trusts the files as
// they are: a chunk that is no gzip at all (nothing checks it) stays.
func TestDiskCleanRestartReadsNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d, err := spool.Open(dir, spool.Config{})
	require.NoError(t, err)
	sp := lease.Span{From: 1, To: 10}
	require.NoError(t, d.Put(1, sp, []byte("not gzip")))
	require.NoError(t, d.Close())
	d = openDisk(t, dir, spool.Config{})
	require.True(t, d.Has(1, sp))
	require.Zero(t, d.Torn())

	// The same file after a crash cannot be proved whole: it goes.
	spool.Crash(d)
	d = openDisk(t, dir, spool.Config{})
	require.False(t, d.Has(1, sp))
	require.Equal(t, 1, d.Torn())
	require.Zero(t, d.Size())
}

// TestDiskSharedDirLiveMarker: a Disk opened on a directory that another
// open Disk (another coordinator on the same data directory) uses checks
// nothing and removes none of its files or its marker.
func TestDiskSharedDirLiveMarker(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := openDisk(t, dir, spool.Config{})
	sp := lease.Span{From: 1, To: 10}
	require.NoError(t, a.Put(1, sp, []byte("not gzip, but a's process runs")))
	b := openDisk(t, dir, spool.Config{})
	require.True(t, b.Has(1, sp))
	require.Zero(t, b.Torn())
	require.Len(t, markers(t, dir), 2)
	require.NoError(t, b.Close())
	require.Len(t, markers(t, dir), 1, "b removed its own marker only")

	// a dies; the next Open checks, a's chunk goes, and so does a's marker.
	spool.Crash(a)
	c := openDisk(t, dir, spool.Config{})
	require.False(t, c.Has(1, sp))
	require.Len(t, markers(t, dir), 1)
}

// TestDiskLostFile: a chunk whose file went behind the spool's back (a
// process sharing the directory dropped its range) is not found, and the
// spool forgets it, so Has says so and the prefetcher fetches it again.
func TestDiskLostFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := openDisk(t, dir, spool.Config{})
	sp := lease.Span{From: 1, To: 10}
	require.NoError(t, d.Put(7, sp, []byte("0123456789")))
	require.NoError(t, d.Put(7, lease.Span{From: 11, To: 20}, []byte("01234")))
	require.NoError(t, os.Remove(spool.ChunkPath(dir, 7, sp)))
	require.True(t, d.Has(7, sp), "nothing told the spool yet")
	_, _, err := d.Open(7, sp)
	require.ErrorIs(t, err, spool.ErrNotFound)
	require.False(t, d.Has(7, sp))
	require.Equal(t, int64(5), d.Size())
	require.NoError(t, d.Put(7, sp, []byte("0123456789")))
	require.Equal(t, int64(15), d.Size())

	// A whole range removed behind its back: the next Put makes its
	// directory again.
	require.NoError(t, os.RemoveAll(filepath.Dir(spool.ChunkPath(dir, 7, sp))))
	require.NoError(t, d.Put(7, lease.Span{From: 21, To: 30}, []byte("x")))
	_, err = d.Read(7, lease.Span{From: 21, To: 30})
	require.NoError(t, err)
}

// TestPrefetchAfterCrash: the chunks a power loss tore are fetched again
// by the coordinator that had fetched them (the database says they were
// fetched; its claim is its own), and the stream serves every chunk whole.
// A chunk that went missing behind the spool is fetched again too.
func TestPrefetchAfterCrash(t *testing.T) {
	t.Parallel()
	e := prefetchtest.NewEnv(t)
	ctx := t.Context()
	p, err := prefetch.New(e.Config("c1"))
	require.NoError(t, err)
	n, err := p.Pass(ctx)
	require.NoError(t, err)
	require.Equal(t, 15, n)

	dir := e.Spool.Dir()
	spool.Crash(e.Spool)
	id := e.Leased.Range.ID
	spans := lease.Spans(1, 50, 10)
	for i, sp := range spans[:4] {
		path := spool.ChunkPath(dir, id, sp)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, tears[i].bad(data), 0o600))
	}
	e.Spool = openDisk(t, dir, spool.Config{})
	require.Equal(t, 4, e.Spool.Torn())

	p, err = prefetch.New(e.Config("c1"))
	require.NoError(t, err)
	n, err = p.Pass(ctx)
	require.NoError(t, err)
	require.Equal(t, 4, n, "the torn chunks, fetched again")

	// Lost behind the spool's back: the stream's Open tells the spool.
	require.NoError(t, os.Remove(spool.ChunkPath(dir, id, spans[4])))
	var buf bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- coordinator.Stream(ctx, coordinator.NewFrameWriter(&buf), e.Leased.Range, 10, coordinator.StreamConfig{Spool: e.Spool, Notify: p.Notify})
	}()
	require.Eventually(t, func() bool { return !e.Spool.Has(id, spans[4]) }, 10*time.Second, time.Millisecond)
	n, err = p.Pass(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n, "the lost chunk, fetched again")
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end")
	}

	rd, err := edgeframe.NewReader(&buf, edgeframe.Config{})
	require.NoError(t, err)
	var got []lease.Span
	for {
		f, err := rd.Next()
		require.NoError(t, err)
		if f.Type == edgeframe.TypeEnd {
			break
		}
		require.Equal(t, edgeframe.TypeChunk, f.Type)
		sp := lease.Span{From: f.From, To: f.To}
		want, err := e.Source.Fetch(ctx, "alt.test", sp)
		require.NoError(t, err)
		require.Equal(t, want, f.Data, "%v", sp)
		zr, err := gzip.NewReader(bytes.NewReader(f.Data))
		require.NoError(t, err)
		_, err = io.Copy(io.Discard, zr)
		require.NoError(t, err, "served whole")
		got = append(got, sp)
	}
	require.Equal(t, spans, got)
	require.False(t, strings.Contains(buf.String(), "error"))
}

// TestDiskCrashOpensTogether: two Opens of a crashed directory at once
// (two coordinators restarting on one data directory): the second waits
// for the first's check, so neither counts a torn chunk.
func TestDiskCrashOpensTogether(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d, err := spool.Open(dir, spool.Config{})
	require.NoError(t, err)
	var spans []lease.Span
	for i := range 50 {
		sp := lease.Span{From: int64(i + 1), To: int64(i + 1)}
		spans = append(spans, sp)
		require.NoError(t, d.Put(1, sp, gzipOf(t, "overview line\n", 2000)))
	}
	spool.Crash(d)
	for _, sp := range spans {
		require.NoError(t, os.Truncate(spool.ChunkPath(dir, 1, sp), 7))
	}
	disks := make(chan *spool.Disk, 2)
	for range 2 {
		go func() {
			d, err := spool.Open(dir, spool.Config{})
			if err != nil {
				t.Error(err)
			}
			disks <- d
		}()
	}
	for range 2 {
		d := <-disks
		require.NotNil(t, d)
		t.Cleanup(func() { require.NoError(t, d.Close()) })
		require.Zero(t, d.Size())
		for _, sp := range spans {
			require.False(t, d.Has(1, sp))
		}
	}
}

// A crash is found on reopening even while the process forks: a child
// holds a copy of the crashed Disk's marker, and its lock, until it
// execs, and a reopen in that moment took the marker for a live Disk's
// (TestDiskCrashDropsTornChunks failed so in CI, beside the bucket tests'
// MinIO). Crash waits for the lock to be free, as a real crash's exit
// frees it. Without the wait, 30 of 300 cycles missed their torn chunk.
func TestCrashFoundWhileForking(t *testing.T) {
	t.Parallel()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = exec.Command("/bin/true").Run()
			}
		})
	}
	defer wg.Wait()
	defer close(stop)
	sp := lease.Span{From: 1, To: 10}
	for i := range 100 {
		dir := t.TempDir()
		d, err := spool.Open(dir, spool.Config{})
		require.NoError(t, err)
		require.NoError(t, d.Put(1, sp, gzipOf(t, "chunk;", 100)))
		spool.Crash(d)
		require.NoError(t, os.WriteFile(spool.ChunkPath(dir, 1, sp), []byte{0x1f}, 0o600))
		d = openDisk(t, dir, spool.Config{})
		require.Equal(t, 1, d.Torn(), "cycle %d: the crash went unseen", i)
		require.False(t, d.Has(1, sp))
	}
}
