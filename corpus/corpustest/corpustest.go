package corpustest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/corpus"
	"github.com/edgeindex/edgeindex/internal/suite"
	"github.com/edgeindex/edgeindex/lease"
)

// Open returns a store on dir. See the package doc.
type Open func(t *testing.T, dir string) corpus.Store

// Run runs the conformance suite against the stores open returns: every
// case, including those that look at the files of a store that keeps the
// disk layout (corpus.ChunkPath, corpus.TempPrefix). Every case runs in
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
	{Name: "InvalidArgs", Fn: testInvalidArgs},
	{Name: "Delete", Fn: testDelete},
	{Name: "DeleteFiles", Fn: testDeleteFiles, Files: true},
	{Name: "Spans", Fn: testSpans},
	{Name: "Close", Fn: testClose},
	{Name: "Restart", Fn: testRestart},
	{Name: "CrashLeftovers", Fn: testCrashLeftovers, Files: true},
	{Name: "HostileGroups", Fn: testHostileGroups},
	{Name: "PathEscaping", Fn: testPathEscaping, Files: true},
	{Name: "Concurrent", Fn: testConcurrent},
}

func span(from, to int64) lease.Span { return lease.Span{From: from, To: to} }

// chunk is distinct test data for a group and span, n bytes long.
func chunk(group string, s lease.Span, n int) []byte {
	seed := fmt.Sprintf("%q:%d-%d;", group, s.From, s.To)
	return bytes.Repeat([]byte(seed), n/len(seed)+1)[:n]
}

func chunkPath(t *testing.T, dir, group string, s lease.Span) string {
	t.Helper()
	p, err := corpus.ChunkPath(dir, group, s)
	require.NoError(t, err)
	return p
}

const group = "alt.binaries.test"

func testPutHasRead(t *testing.T, open Open) {
	s := open(t, t.TempDir())
	a := span(1, 2000)

	require.False(t, s.Has(group, a))
	_, err := s.Read(group, a)
	require.ErrorIs(t, err, corpus.ErrNotFound)
	require.ErrorIs(t, err, edgeindex.ErrNotFound)
	_, _, err = s.Open(group, a)
	require.ErrorIs(t, err, corpus.ErrNotFound)

	data := chunk(group, a, 500)
	require.NoError(t, s.Put(group, a, data))
	require.True(t, s.Has(group, a))
	got, err := s.Read(group, a)
	require.NoError(t, err)
	require.Equal(t, data, got)

	rc, size, err := s.Open(group, a)
	require.NoError(t, err)
	require.Equal(t, int64(len(data)), size)
	got, err = io.ReadAll(rc)
	require.NoError(t, err)
	require.NoError(t, rc.Close())
	require.Equal(t, data, got)

	require.False(t, s.Has("alt.binaries.other", a))
	require.False(t, s.Has(group, span(1, 1999)))
	require.False(t, s.Has(group, span(2001, 4000)))

	require.NoError(t, s.Put("alt.binaries.other", a, nil), "an empty chunk")
	got, err = s.Read("alt.binaries.other", a)
	require.NoError(t, err)
	require.Empty(t, got)
}

func testOverwrite(t *testing.T, open Open) {
	s := open(t, t.TempDir())
	a := span(0, 99)
	require.NoError(t, s.Put(group, a, chunk(group, a, 900)))
	second := []byte("second")
	require.NoError(t, s.Put(group, a, second))
	got, err := s.Read(group, a)
	require.NoError(t, err)
	require.Equal(t, second, got)
	spans, err := s.Spans(group)
	require.NoError(t, err)
	require.Equal(t, []lease.Span{a}, spans)
}

func testInvalidArgs(t *testing.T, open Open) {
	s := open(t, t.TempDir())
	a := span(1, 10)
	require.ErrorIs(t, s.Put("", a, []byte("x")), edgeindex.ErrInvalid)
	require.False(t, s.Has("", a))
	_, err := s.Read("", a)
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
	_, _, err = s.Open("", a)
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
	require.ErrorIs(t, s.Delete("", a), edgeindex.ErrInvalid)
	_, err = s.Spans("")
	require.ErrorIs(t, err, edgeindex.ErrInvalid)

	for _, bad := range []lease.Span{span(10, 9), span(-1, 5)} {
		require.ErrorIs(t, s.Put(group, bad, []byte("x")), edgeindex.ErrInvalid, "Put %v", bad)
		require.False(t, s.Has(group, bad))
		_, err := s.Read(group, bad)
		require.ErrorIs(t, err, edgeindex.ErrInvalid, "Read %v", bad)
		_, _, err = s.Open(group, bad)
		require.ErrorIs(t, err, edgeindex.ErrInvalid, "Open %v", bad)
		require.ErrorIs(t, s.Delete(group, bad), edgeindex.ErrInvalid, "Delete %v", bad)
	}
	spans, err := s.Spans(group)
	require.NoError(t, err)
	require.Empty(t, spans)
}

func testDelete(t *testing.T, open Open) {
	s := open(t, t.TempDir())
	spans := lease.Spans(1, 5000, 1000)
	for _, sp := range spans {
		require.NoError(t, s.Put(group, sp, chunk(group, sp, 64)))
	}
	require.NoError(t, s.Put("other.group", spans[1], []byte("kept")))

	require.NoError(t, s.Delete(group, spans[1]))
	require.False(t, s.Has(group, spans[1]))
	_, err := s.Read(group, spans[1])
	require.ErrorIs(t, err, corpus.ErrNotFound)
	require.True(t, s.Has("other.group", spans[1]), "the same span of another group is kept")
	require.True(t, s.Has(group, spans[0]))

	require.NoError(t, s.Delete(group, spans[1]), "deleting a missing chunk")
	require.NoError(t, s.Delete("never.stored", spans[1]), "deleting in an unknown group")

	got, err := s.Spans(group)
	require.NoError(t, err)
	require.Equal(t, []lease.Span{spans[0], spans[2], spans[3], spans[4]}, got)

	// Stored again, as after a corrupt chunk is fetched anew.
	require.NoError(t, s.Put(group, spans[1], []byte("refetched")))
	data, err := s.Read(group, spans[1])
	require.NoError(t, err)
	require.Equal(t, []byte("refetched"), data)
}

// testDeleteFiles checks that Delete removes the file.
func testDeleteFiles(t *testing.T, open Open) {
	dir := t.TempDir()
	s := open(t, dir)
	a, b := span(1, 1000), span(1001, 2000)
	require.NoError(t, s.Put(group, a, []byte("a")))
	require.NoError(t, s.Put(group, b, []byte("b")))
	require.NoError(t, s.Delete(group, a))
	_, err := os.Stat(chunkPath(t, dir, group, a))
	require.ErrorIs(t, err, fs.ErrNotExist, "the file is gone")
	_, err = os.Stat(chunkPath(t, dir, group, b))
	require.NoError(t, err)
}

func testSpans(t *testing.T, open Open) {
	s := open(t, t.TempDir())
	got, err := s.Spans(group)
	require.NoError(t, err)
	require.Empty(t, got, "unknown group")

	// Stored out of order, with numbers whose text does not sort like them.
	want := []lease.Span{span(0, 8), span(9, 9), span(10, 99), span(100, 999), span(100, 1999), span(1000, 9999), span(3_000_000_000, 3_000_001_999)}
	for _, i := range []int{4, 6, 0, 2, 5, 1, 3} {
		require.NoError(t, s.Put(group, want[i], []byte("x")))
	}
	require.NoError(t, s.Put(group+".other", span(5, 5), []byte("y")))
	got, err = s.Spans(group)
	require.NoError(t, err)
	require.Equal(t, want, got)
	got, err = s.Spans(group + ".other")
	require.NoError(t, err)
	require.Equal(t, []lease.Span{span(5, 5)}, got)
}

func testClose(t *testing.T, open Open) {
	s := open(t, t.TempDir())
	a := span(1, 10)
	require.NoError(t, s.Put(group, a, []byte("x")))
	require.NoError(t, s.Close())
	require.ErrorIs(t, s.Put(group, a, []byte("y")), corpus.ErrClosed)
	require.False(t, s.Has(group, a))
	_, err := s.Read(group, a)
	require.ErrorIs(t, err, corpus.ErrClosed)
	_, _, err = s.Open(group, a)
	require.ErrorIs(t, err, corpus.ErrClosed)
	require.ErrorIs(t, s.Delete(group, a), corpus.ErrClosed)
	_, err = s.Spans(group)
	require.ErrorIs(t, err, corpus.ErrClosed)
	require.NoError(t, s.Close(), "Close twice")
}

func testRestart(t *testing.T, open Open) {
	dir := t.TempDir()
	s := open(t, dir)
	groups := []string{group, "alt.binaries.other", "comp.lang.go"}
	spans := lease.Spans(4_000_000_001, 4_000_010_000, 2000)
	for _, g := range groups {
		for i, sp := range spans {
			require.NoError(t, s.Put(g, sp, chunk(g, sp, 100+i)))
		}
	}
	require.NoError(t, s.Delete(groups[1], spans[2]))
	require.NoError(t, s.Close())

	s = open(t, dir)
	for _, g := range groups {
		got, err := s.Spans(g)
		require.NoError(t, err)
		if g == groups[1] {
			require.Equal(t, append(append([]lease.Span{}, spans[:2]...), spans[3:]...), got)
		} else {
			require.Equal(t, spans, got)
		}
		for _, sp := range got {
			data, err := s.Read(g, sp)
			require.NoError(t, err)
			i := int(sp.From-spans[0].From) / 2000
			require.Equal(t, chunk(g, sp, 100+i), data)
		}
	}
}

func testCrashLeftovers(t *testing.T, open Open) {
	dir := t.TempDir()
	s := open(t, dir)
	kept, torn := span(1, 100), span(101, 200)
	data := chunk(group, kept, 200)
	require.NoError(t, s.Put(group, kept, data))
	require.NoError(t, s.Close())

	full := chunk(group, torn, 300)
	tornPath := chunkPath(t, dir, group, torn)
	gdir := filepath.Dir(tornPath)
	leftovers := []struct {
		path string
		data []byte
	}{
		{filepath.Join(gdir, corpus.TempPrefix+filepath.Base(tornPath)+"-1"), full[:111]}, // cut halfway
		{filepath.Join(gdir, corpus.TempPrefix+filepath.Base(tornPath)+"-2"), nil},        // cut before the first byte
		{filepath.Join(filepath.Dir(chunkPath(t, dir, "never.finished", kept)), corpus.TempPrefix+"1-100.gz-3"), full},
		{filepath.Join(dir, corpus.TempPrefix+"stray"), full},
	}
	for _, l := range leftovers {
		require.NoError(t, os.MkdirAll(filepath.Dir(l.path), 0o755))
		require.NoError(t, os.WriteFile(l.path, l.data, 0o600))
	}

	s = open(t, dir)
	require.False(t, s.Has(group, torn))
	_, err := s.Read(group, torn)
	require.ErrorIs(t, err, corpus.ErrNotFound)
	require.False(t, s.Has("never.finished", kept))
	spans, err := s.Spans(group)
	require.NoError(t, err)
	require.Equal(t, []lease.Span{kept}, spans)
	spans, err = s.Spans("never.finished")
	require.NoError(t, err)
	require.Empty(t, spans)
	got, err := s.Read(group, kept)
	require.NoError(t, err)
	require.Equal(t, data, got)
	for _, l := range leftovers {
		_, err := os.Stat(l.path)
		require.ErrorIs(t, err, fs.ErrNotExist, "leftover %s removed", l.path)
	}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), corpus.TempPrefix) {
			return fmt.Errorf("temp file %s left after open", path)
		}
		return nil
	}))
	require.NoError(t, s.Put(group, torn, full))
	got, err = s.Read(group, torn)
	require.NoError(t, err)
	require.Equal(t, full, got)
}

// hostileGroups are names that must not leave the directory, nor collide.
func hostileGroups() []string {
	long := strings.Repeat("a", 1000)
	return []string{
		"../x", "../../etc/passwd", "a/b", "a%2Fb", "a%2fb", ".", "..", "...", "x/../../y", "/abs", "//",
		"a\x00b", "\x00", "a\\b", `..\..\x`, "C:x", "A", "a", "Alt.Binaries.Test", "alt.binaries.test",
		".hidden", corpus.TempPrefix + "group", "~", "%", "%%", "%2E", "grüße", "a b", "a\tb", "a\nb",
		long, long[:999] + "b", strings.Repeat("../", 300), strings.Repeat("\xff", 300),
	}
}

// testHostileGroups checks that every hostile name is a group of its own,
// across a restart, whatever the store keeps its bytes in.
func testHostileGroups(t *testing.T, open Open) {
	dir := t.TempDir()
	s := open(t, dir)
	a := span(1, 10)
	groups := hostileGroups()
	for _, g := range groups {
		require.NoError(t, s.Put(g, a, chunk(g, a, 50)), "group %q", g)
	}
	check := func(s corpus.Store) { readsOwnChunks(t, s, groups, a) }
	check(s)
	require.NoError(t, s.Delete("a", a))
	require.True(t, s.Has("A", a), "groups that differ in case differ")
	require.NoError(t, s.Put("a", a, chunk("a", a, 50)))
	require.NoError(t, s.Close())
	check(open(t, dir))
}

func testPathEscaping(t *testing.T, open Open) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "corpus")
	s := open(t, dir)
	a := span(1, 10)
	groups := hostileGroups()
	for _, g := range groups {
		p := chunkPath(t, dir, g, a)
		require.Equal(t, dir, filepath.Dir(filepath.Dir(p)), "group %q is one element under dir", g)
		elem := filepath.Base(filepath.Dir(p))
		require.NotContains(t, []string{".", ".."}, elem, "group %q", g)
		require.LessOrEqual(t, len(elem), 200, "group %q", g)
		require.NoError(t, s.Put(g, a, chunk(g, a, 50)), "group %q", g)
	}
	check := func(s corpus.Store) { readsOwnChunks(t, s, groups, a) }
	check(s)

	// Nothing was written outside dir, and dir holds one directory per group
	// and one file in each.
	top, err := os.ReadDir(parent)
	require.NoError(t, err)
	require.Len(t, top, 1)
	require.Equal(t, "corpus", top[0].Name())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, len(groups), "one directory per group, no collision")
	files := 0
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil || strings.HasPrefix(rel, "..") {
			return fmt.Errorf("%s is outside %s", path, dir)
		}
		if !d.IsDir() {
			files++
		}
		return nil
	}))
	require.Equal(t, len(groups), files)

	// Names that look like temp files or hidden files survive a restart.
	require.NoError(t, s.Close())
	check(open(t, dir))
}

func testConcurrent(t *testing.T, open Open) {
	s := open(t, t.TempDir())
	spans := lease.Spans(1, 8000, 1000)
	groups := []string{"g.one", "g.two"}
	const workers, rounds = 4, 30
	versions := func(g string, sp lease.Span) [][]byte {
		out := make([][]byte, workers)
		for w := range out {
			out[w] = chunk(g, sp, 40+w*10)
		}
		return out
	}
	var wg sync.WaitGroup
	errs := make(chan error, 3*workers)
	for w := range workers {
		wg.Add(3)
		go func() {
			defer wg.Done()
			for i := range rounds {
				g, sp := groups[i%2], spans[(i+w)%len(spans)]
				if err := s.Put(g, sp, versions(g, sp)[w]); err != nil {
					errs <- err
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for i := range rounds {
				g, sp := groups[(i+w)%2], spans[(i*3+w)%len(spans)]
				got, err := s.Read(g, sp)
				if errors.Is(err, corpus.ErrNotFound) {
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				if !oneOf(got, versions(g, sp)) {
					errs <- fmt.Errorf("read of %s %v returned %d bytes that no writer wrote", g, sp, len(got))
					return
				}
				if _, err := s.Spans(g); err != nil {
					errs <- err
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for i := range rounds / 3 {
				if err := s.Delete(groups[1], spans[(i+w)%len(spans)]); err != nil {
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
	for _, g := range groups {
		listed, err := s.Spans(g)
		require.NoError(t, err)
		for _, sp := range spans {
			has := s.Has(g, sp)
			require.Equal(t, has, contains(listed, sp), "%s %v: Has and Spans agree", g, sp)
			if has {
				got, err := s.Read(g, sp)
				require.NoError(t, err)
				require.True(t, oneOf(got, versions(g, sp)))
			}
		}
	}
}

func contains(spans []lease.Span, sp lease.Span) bool {
	for _, s := range spans {
		if s == sp {
			return true
		}
	}
	return false
}

func oneOf(got []byte, versions [][]byte) bool {
	for _, v := range versions {
		if bytes.Equal(got, v) {
			return true
		}
	}
	return false
}

// readsOwnChunks checks that every group reads back its own chunk a, and
// lists a alone.
func readsOwnChunks(t *testing.T, s corpus.Store, groups []string, a lease.Span) {
	t.Helper()
	for _, g := range groups {
		got, err := s.Read(g, a)
		require.NoError(t, err, "group %q", g)
		require.Equal(t, chunk(g, a, 50), got, "group %q reads its own chunk", g)
		spans, err := s.Spans(g)
		require.NoError(t, err)
		require.Equal(t, []lease.Span{a}, spans, "group %q", g)
	}
}
