package spooltest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/internal/suite"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/spool"
)

// Open returns a store on dir. See the package doc.
type Open func(t *testing.T, dir string) spool.Store

// waitLimit bounds how long a case waits for a goroutine that must finish;
// it only fails a broken store, it never paces a working one.
const waitLimit = 10 * time.Second

// Run runs the conformance suite against the stores open returns: every
// case, including those that look at the files of a store that keeps the
// disk layout (spool.ChunkPath, spool.TempPrefix). Every case runs in
// parallel in its own temporary directory.
func Run(t *testing.T, open Open) { t.Helper(); suite.Run(t, open, true, cases) }

// RunStore runs the cases that hold for any Store, whatever keeps its
// bytes (an object store, say): Run less the cases that look at files.
// dir is then only a name: the same dir is the same store, reopened.
func RunStore(t *testing.T, open Open) { t.Helper(); suite.Run(t, open, false, cases) }

// cases are the suite's cases; Files marks those that look at the disk
// layout.
var cases = []suite.Case[Open]{
	{Name: "PutHasRead", Fn: testPutHasRead},
	{Name: "Overwrite", Fn: testOverwrite},
	{Name: "InvalidSpan", Fn: testInvalidSpan},
	{Name: "SizeAccounting", Fn: testSizeAccounting},
	{Name: "Drop", Fn: testDrop},
	{Name: "DropFiles", Fn: testDropFiles, Files: true},
	{Name: "WaitRoom", Fn: testWaitRoom},
	{Name: "WaitChunk", Fn: testWaitChunk},
	{Name: "Close", Fn: testClose},
	{Name: "Restart", Fn: testRestart},
	{Name: "CrashLeftovers", Fn: testCrashLeftovers, Files: true},
	{Name: "Concurrent", Fn: testConcurrent},
}

func span(from, to int64) lease.Span { return lease.Span{From: from, To: to} }

// chunk is distinct test data for a range and span, n bytes long.
func chunk(rangeID int64, s lease.Span, n int) []byte {
	seed := fmt.Sprintf("r%d:%d-%d;", rangeID, s.From, s.To)
	return bytes.Repeat([]byte(seed), n/len(seed)+1)[:n]
}

// wait returns the error sent on done, failing the test if none comes.
func wait(t *testing.T, done <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(waitLimit):
		t.Fatalf("%s did not return", what)
		return nil
	}
}

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func testPutHasRead(t *testing.T, open Open) {
	s := open(t, t.TempDir())
	a := span(1, 1000)

	require.False(t, s.Has(7, a))
	_, err := s.Read(7, a)
	require.ErrorIs(t, err, spool.ErrNotFound)
	require.ErrorIs(t, err, edgeindex.ErrNotFound)
	_, _, err = s.Open(7, a)
	require.ErrorIs(t, err, spool.ErrNotFound)

	data := chunk(7, a, 300)
	require.NoError(t, s.Put(7, a, data))
	require.True(t, s.Has(7, a))
	got, err := s.Read(7, a)
	require.NoError(t, err)
	require.Equal(t, data, got)

	rc, size, err := s.Open(7, a)
	require.NoError(t, err)
	require.Equal(t, int64(len(data)), size)
	got, err = io.ReadAll(rc)
	require.NoError(t, err)
	require.NoError(t, rc.Close())
	require.Equal(t, data, got)

	// The same span in another range, and another span in the same range,
	// are other chunks.
	require.False(t, s.Has(8, a))
	require.False(t, s.Has(7, span(1001, 2000)))
	require.False(t, s.Has(7, span(1, 999)))

	// An empty chunk is a chunk.
	require.NoError(t, s.Put(8, a, nil))
	require.True(t, s.Has(8, a))
	got, err = s.Read(8, a)
	require.NoError(t, err)
	require.Empty(t, got)
}

func testOverwrite(t *testing.T, open Open) {
	s := open(t, t.TempDir())
	a := span(0, 99)
	first, second := chunk(1, a, 500), bytes.Repeat([]byte("x"), 120)
	require.NoError(t, s.Put(1, a, first))
	require.NoError(t, s.Put(1, a, second))
	got, err := s.Read(1, a)
	require.NoError(t, err)
	require.Equal(t, second, got)
	require.Equal(t, int64(len(second)), s.Size())
}

func testInvalidSpan(t *testing.T, open Open) {
	s := open(t, t.TempDir())
	for _, bad := range []lease.Span{span(10, 9), span(-1, 5), span(-5, -1)} {
		require.ErrorIs(t, s.Put(1, bad, []byte("x")), edgeindex.ErrInvalid, "Put %v", bad)
		require.False(t, s.Has(1, bad))
		_, err := s.Read(1, bad)
		require.ErrorIs(t, err, edgeindex.ErrInvalid, "Read %v", bad)
		_, _, err = s.Open(1, bad)
		require.ErrorIs(t, err, edgeindex.ErrInvalid, "Open %v", bad)
		require.ErrorIs(t, s.DropChunk(1, bad), edgeindex.ErrInvalid, "DropChunk %v", bad)
		require.ErrorIs(t, s.WaitChunk(context.Background(), 1, bad), edgeindex.ErrInvalid, "WaitChunk %v", bad)
	}
	require.Zero(t, s.Size())
}

func testSizeAccounting(t *testing.T, open Open) {
	s := open(t, t.TempDir())
	require.Zero(t, s.Size())
	require.Positive(t, s.MaxBytes())

	require.NoError(t, s.Put(1, span(1, 10), make([]byte, 100)))
	require.NoError(t, s.Put(1, span(11, 20), make([]byte, 250)))
	require.NoError(t, s.Put(2, span(1, 10), make([]byte, 40)))
	require.Equal(t, int64(390), s.Size())

	require.NoError(t, s.Put(1, span(11, 20), make([]byte, 50))) // shrink
	require.Equal(t, int64(190), s.Size())
	require.NoError(t, s.Put(1, span(1, 10), make([]byte, 300))) // grow
	require.Equal(t, int64(390), s.Size())

	require.NoError(t, s.DropChunk(1, span(11, 20)))
	require.Equal(t, int64(340), s.Size())
	require.NoError(t, s.DropChunk(1, span(11, 20))) // already gone
	require.Equal(t, int64(340), s.Size())
	require.NoError(t, s.Drop(1))
	require.Equal(t, int64(40), s.Size())
	require.NoError(t, s.Drop(2))
	require.Zero(t, s.Size())
}

func testDrop(t *testing.T, open Open) {
	s := open(t, t.TempDir())
	spans := lease.Spans(1, 5000, 1000)
	for _, sp := range spans {
		require.NoError(t, s.Put(1, sp, chunk(1, sp, 64)))
		require.NoError(t, s.Put(2, sp, chunk(2, sp, 64)))
	}
	require.NoError(t, s.Drop(1))
	for _, sp := range spans {
		require.False(t, s.Has(1, sp))
		_, err := s.Read(1, sp)
		require.ErrorIs(t, err, spool.ErrNotFound)
		require.True(t, s.Has(2, sp), "range 2 keeps its chunks")
	}

	require.NoError(t, s.Drop(1), "dropping an empty range")
	require.NoError(t, s.Drop(99), "dropping an unknown range")

	require.NoError(t, s.DropChunk(2, spans[2]))
	require.False(t, s.Has(2, spans[2]))
	_, err := s.Read(2, spans[2])
	require.ErrorIs(t, err, spool.ErrNotFound)
	require.True(t, s.Has(2, spans[1]))
	require.NoError(t, s.DropChunk(2, spans[2]), "dropping a missing chunk")

	// A dropped range can be stored again.
	require.NoError(t, s.Put(1, spans[0], []byte("again")))
	got, err := s.Read(1, spans[0])
	require.NoError(t, err)
	require.Equal(t, []byte("again"), got)

	// Range ids whose text is a prefix of another's are other ranges.
	require.NoError(t, s.Put(12, spans[0], []byte("12")))
	require.NoError(t, s.Put(123, spans[0], []byte("123")))
	require.NoError(t, s.Drop(12))
	require.True(t, s.Has(123, spans[0]))
	got, err = s.Read(123, spans[0])
	require.NoError(t, err)
	require.Equal(t, []byte("123"), got)
}

// testDropFiles checks that Drop and DropChunk remove the files.
func testDropFiles(t *testing.T, open Open) {
	dir := t.TempDir()
	s := open(t, dir)
	spans := lease.Spans(1, 5000, 1000)
	for _, sp := range spans {
		require.NoError(t, s.Put(1, sp, chunk(1, sp, 64)))
		require.NoError(t, s.Put(2, sp, chunk(2, sp, 64)))
	}
	require.NoError(t, s.Drop(1))
	_, err := os.Stat(filepath.Dir(spool.ChunkPath(dir, 1, spans[0])))
	require.ErrorIs(t, err, fs.ErrNotExist, "the range's files are gone")
	require.NoError(t, s.DropChunk(2, spans[2]))
	_, err = os.Stat(spool.ChunkPath(dir, 2, spans[2]))
	require.ErrorIs(t, err, fs.ErrNotExist)
	_, err = os.Stat(spool.ChunkPath(dir, 2, spans[1]))
	require.NoError(t, err)
}

func testWaitRoom(t *testing.T, open Open) {
	s := open(t, t.TempDir())
	ctx := context.Background()
	max := s.MaxBytes()

	require.ErrorIs(t, s.WaitRoom(ctx, -1), edgeindex.ErrInvalid)
	require.ErrorIs(t, s.WaitRoom(ctx, max+1), edgeindex.ErrInvalid)
	require.NoError(t, s.WaitRoom(ctx, 0))
	require.NoError(t, s.WaitRoom(ctx, max))

	require.NoError(t, s.Put(1, span(1, 10), make([]byte, 100)))
	require.NoError(t, s.Put(2, span(1, 10), make([]byte, 100)))
	require.NoError(t, s.WaitRoom(canceled(), max-200), "room is there: no wait, even with ctx done")
	require.ErrorIs(t, s.WaitRoom(canceled(), max-199), context.Canceled, "no room: waits until ctx is done")

	short, cancel := context.WithTimeout(ctx, time.Millisecond)
	defer cancel()
	require.ErrorIs(t, s.WaitRoom(short, max), context.DeadlineExceeded)

	// DropChunk frees 100 bytes: enough for one waiter, not for the other.
	small, big := make(chan error, 1), make(chan error, 1)
	go func() { small <- s.WaitRoom(ctx, max-100) }()
	bigCtx, cancelBig := context.WithCancel(ctx)
	defer cancelBig()
	go func() { big <- s.WaitRoom(bigCtx, max) }()
	require.NoError(t, s.DropChunk(1, span(1, 10)))
	require.NoError(t, wait(t, small, "WaitRoom after DropChunk"))
	select {
	case err := <-big:
		t.Fatalf("WaitRoom(max) returned %v with %d bytes stored", err, s.Size())
	default:
	}
	// Drop frees the rest.
	require.NoError(t, s.Drop(2))
	require.NoError(t, wait(t, big, "WaitRoom after Drop"))
	require.Zero(t, s.Size())

	// An overwrite that shrinks a chunk frees room too.
	require.NoError(t, s.Put(3, span(1, 10), make([]byte, 100)))
	done := make(chan error, 1)
	go func() { done <- s.WaitRoom(ctx, max-50) }()
	require.NoError(t, s.Put(3, span(1, 10), make([]byte, 50)))
	require.NoError(t, wait(t, done, "WaitRoom after a shrinking Put"))

	// Put itself never blocks on the bound.
	require.NoError(t, s.Put(4, span(1, 10), make([]byte, 10)))
}

func testWaitChunk(t *testing.T, open Open) {
	s := open(t, t.TempDir())
	ctx := context.Background()
	a, b := span(1, 100), span(101, 200)

	require.ErrorIs(t, s.WaitChunk(canceled(), 1, a), context.Canceled)

	notify := s.Notify()
	select {
	case <-notify:
		t.Fatal("Notify channel closed before any Put")
	default:
	}

	done := make(chan error, 1)
	go func() { done <- s.WaitChunk(ctx, 1, b) }()
	// A chunk of another span wakes waiters but does not satisfy them.
	require.NoError(t, s.Put(1, a, []byte("a")))
	select {
	case <-notify:
	case <-time.After(waitLimit):
		t.Fatal("Put did not close the Notify channel")
	}
	select {
	case err := <-done:
		t.Fatalf("WaitChunk(b) returned %v after Put(a)", err)
	default:
	}
	require.NoError(t, s.WaitChunk(canceled(), 1, a), "stored: no wait, even with ctx done")

	require.NoError(t, s.Put(1, b, []byte("b")))
	require.NoError(t, wait(t, done, "WaitChunk after Put"))

	// A fresh Notify channel waits for the next Put.
	next := s.Notify()
	select {
	case <-next:
		t.Fatal("fresh Notify channel already closed")
	default:
	}
}

func testClose(t *testing.T, open Open) {
	s := open(t, t.TempDir())
	ctx := context.Background()
	require.NoError(t, s.Put(1, span(1, 10), make([]byte, 10)))

	room, chunkDone := make(chan error, 1), make(chan error, 1)
	go func() { room <- s.WaitRoom(ctx, s.MaxBytes()) }()
	go func() { chunkDone <- s.WaitChunk(ctx, 1, span(11, 20)) }()
	notify := s.Notify()

	require.NoError(t, s.Close())
	require.ErrorIs(t, wait(t, room, "WaitRoom after Close"), spool.ErrClosed)
	require.ErrorIs(t, wait(t, chunkDone, "WaitChunk after Close"), spool.ErrClosed)
	select {
	case <-notify:
	case <-time.After(waitLimit):
		t.Fatal("Close did not close the Notify channel")
	}

	require.ErrorIs(t, s.Put(1, span(11, 20), []byte("x")), spool.ErrClosed)
	_, err := s.Read(1, span(1, 10))
	require.ErrorIs(t, err, spool.ErrClosed)
	require.ErrorIs(t, s.Drop(1), spool.ErrClosed)
	require.ErrorIs(t, s.DropChunk(1, span(1, 10)), spool.ErrClosed)
	require.ErrorIs(t, s.WaitRoom(ctx, 0), spool.ErrClosed)
	require.False(t, s.Has(1, span(1, 10)))
	require.NoError(t, s.Close(), "Close twice")
}

func testRestart(t *testing.T, open Open) {
	dir := t.TempDir()
	s := open(t, dir)
	want := map[int64]map[lease.Span][]byte{}
	var total int64
	for _, id := range []int64{1, 2, 1 << 40} {
		want[id] = map[lease.Span][]byte{}
		for i, sp := range lease.Spans(5_000_000_000, 5_000_004_999, 2000) {
			data := chunk(id, sp, 100+i*37)
			want[id][sp] = data
			total += int64(len(data))
			require.NoError(t, s.Put(id, sp, data))
		}
	}
	require.NoError(t, s.Drop(2))
	total -= int64(len(want[2]) * 0)
	for _, data := range want[2] {
		total -= int64(len(data))
	}
	delete(want, 2)
	require.Equal(t, total, s.Size())
	require.NoError(t, s.Close())

	s = open(t, dir)
	require.Equal(t, total, s.Size(), "size recounted on open")
	for id, m := range want {
		for sp, data := range m {
			require.True(t, s.Has(id, sp))
			got, err := s.Read(id, sp)
			require.NoError(t, err)
			require.Equal(t, data, got)
		}
	}
	require.False(t, s.Has(2, span(5_000_000_000, 5_000_001_999)), "a dropped range stays dropped")

	// The reopened store works as before.
	require.NoError(t, s.Drop(1))
	require.NoError(t, s.Drop(1<<40))
	require.Zero(t, s.Size())
}

func testCrashLeftovers(t *testing.T, open Open) {
	dir := t.TempDir()
	s := open(t, dir)
	kept := span(1, 100)
	data := chunk(1, kept, 200)
	require.NoError(t, s.Put(1, kept, data))
	require.NoError(t, s.Close())

	torn := span(101, 200)
	full := chunk(1, torn, 200)
	tornPath := spool.ChunkPath(dir, 1, torn)
	leftovers := []struct {
		path string
		data []byte
	}{
		// A write cut halfway, next to a finished chunk.
		{filepath.Join(filepath.Dir(tornPath), spool.TempPrefix+filepath.Base(tornPath)+"-1234"), full[:77]},
		// An empty temp file: cut before the first byte.
		{filepath.Join(filepath.Dir(tornPath), spool.TempPrefix+filepath.Base(tornPath)+"-5678"), nil},
		// The only file of a range that never got a chunk.
		{filepath.Join(filepath.Dir(spool.ChunkPath(dir, 3, kept)), spool.TempPrefix+"1-100.gz-1"), full[:10]},
		// A temp file at the top.
		{filepath.Join(dir, spool.TempPrefix+"stray"), full},
	}
	for _, l := range leftovers {
		require.NoError(t, os.MkdirAll(filepath.Dir(l.path), 0o755))
		require.NoError(t, os.WriteFile(l.path, l.data, 0o600))
	}

	s = open(t, dir)
	require.Equal(t, int64(len(data)), s.Size(), "leftovers are not counted")
	require.False(t, s.Has(1, torn))
	_, err := s.Read(1, torn)
	require.ErrorIs(t, err, spool.ErrNotFound)
	require.False(t, s.Has(3, kept))
	got, err := s.Read(1, kept)
	require.NoError(t, err)
	require.Equal(t, data, got)
	for _, l := range leftovers {
		_, err := os.Stat(l.path)
		require.ErrorIs(t, err, fs.ErrNotExist, "leftover %s removed", l.path)
	}
	// No temp file is left anywhere.
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), spool.TempPrefix) {
			return fmt.Errorf("temp file %s left after open", path)
		}
		return nil
	}))
	// The span that was torn can be written now.
	require.NoError(t, s.Put(1, torn, full))
	got, err = s.Read(1, torn)
	require.NoError(t, err)
	require.Equal(t, full, got)
}

func testConcurrent(t *testing.T, open Open) {
	s := open(t, t.TempDir())
	spans := lease.Spans(1, 8000, 1000)
	const workers, rounds = 4, 30
	versions := func(id int64, sp lease.Span) [][]byte {
		out := make([][]byte, workers)
		for w := range out {
			out[w] = chunk(id, sp, 50+w*10)
		}
		return out
	}

	var wg sync.WaitGroup
	errs := make(chan error, 4*workers)
	for w := range workers {
		wg.Add(3)
		go func() { // writers: every worker writes its own version of the same chunks
			defer wg.Done()
			for i := range rounds {
				sp := spans[(i+w)%len(spans)]
				if err := s.Put(1, sp, versions(1, sp)[w]); err != nil {
					errs <- err
					return
				}
				if err := s.Put(2, sp, versions(2, sp)[w]); err != nil {
					errs <- fmt.Errorf("range 2: %w", err)
					return
				}
			}
		}()
		go func() { // readers: a chunk read is whole, one of the versions
			defer wg.Done()
			for i := range rounds {
				sp := spans[(i*3+w)%len(spans)]
				got, err := s.Read(1, sp)
				if errors.Is(err, spool.ErrNotFound) {
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				if !oneOf(got, versions(1, sp)) {
					errs <- fmt.Errorf("read of %v returned %d bytes that no writer wrote", sp, len(got))
					return
				}
				_ = s.Has(1, sp)
				_ = s.Size()
			}
		}()
		go func() { // droppers race with range 2's writers
			defer wg.Done()
			for i := range rounds / 3 {
				var err error
				if i%2 == 0 {
					err = s.Drop(2)
				} else {
					err = s.DropChunk(2, spans[(i+w)%len(spans)])
				}
				if err != nil {
					errs <- err
					return
				}
				if err := s.WaitRoom(context.Background(), 0); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	// Afterwards the accounting matches what is stored.
	var sum int64
	for _, id := range []int64{1, 2} {
		for _, sp := range spans {
			if !s.Has(id, sp) {
				_, err := s.Read(id, sp)
				require.ErrorIs(t, err, spool.ErrNotFound, "range %d %v: Has false but readable", id, sp)
				continue
			}
			got, err := s.Read(id, sp)
			require.NoError(t, err, "range %d %v", id, sp)
			require.True(t, oneOf(got, versions(id, sp)), "range %d %v", id, sp)
			sum += int64(len(got))
		}
	}
	require.Equal(t, sum, s.Size())
}

func oneOf(got []byte, versions [][]byte) bool {
	for _, v := range versions {
		if bytes.Equal(got, v) {
			return true
		}
	}
	return false
}
