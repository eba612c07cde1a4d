// Package blobtest is the conformance suite for blobstore.Store, in the
// style of River's riverdrivertest: the disk and every object store run the
// same cases.
//
//	func TestDir(t *testing.T) {
//		blobtest.Run(t, func(t *testing.T, dir string) blobstore.Store {
//			d, err := blobstore.OpenDir(dir)
//			require.NoError(t, err)
//			return d
//		})
//	}
//
// open is called with a new temporary directory per case, and again with
// the same one to reopen a store (a restart, or a second coordinator on
// the same bucket): the same dir must give the same blobs, and different
// dirs disjoint ones. A backend that keeps no files maps dir to a prefix.
package blobtest

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/blobstore"
)

// Open returns a store on dir. See the package doc.
type Open func(t *testing.T, dir string) blobstore.Store

// Run runs the conformance suite against the stores open returns. Every
// case runs in parallel.
func Run(t *testing.T, open Open) {
	t.Helper()
	cases := []struct {
		name string
		fn   func(t *testing.T, open Open)
	}{
		{"PutOpenStatDelete", testPutOpenStatDelete},
		{"Overwrite", testOverwrite},
		{"InvalidKeys", testInvalidKeys},
		{"SizeMismatch", testSizeMismatch},
		{"ReaderError", testReaderError},
		{"UnknownSize", testUnknownSize},
		{"Checked", testChecked},
		{"List", testList},
		{"ListStops", testListStops},
		{"Sub", testSub},
		{"Reopen", testReopen},
		{"Concurrent", testConcurrent},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, open)
		})
	}
}

var ctx = context.Background()

// data is distinct test bytes for a key, n long.
func data(key string, n int) []byte {
	seed := key + ";"
	return bytes.Repeat([]byte(seed), n/len(seed)+1)[:n]
}

func put(t *testing.T, s blobstore.Store, key string, b []byte) {
	t.Helper()
	n, err := s.Put(ctx, key, bytes.NewReader(b), int64(len(b)))
	require.NoError(t, err, "put %s", key)
	require.Equal(t, int64(len(b)), n)
}

func read(t *testing.T, s blobstore.Store, key string) []byte {
	t.Helper()
	rc, size, err := s.Open(ctx, key)
	require.NoError(t, err, "open %s", key)
	defer rc.Close()
	b, err := io.ReadAll(rc)
	require.NoError(t, err)
	require.Equal(t, size, int64(len(b)), "Open's size is the blob's")
	return b
}

func requireMissing(t *testing.T, s blobstore.Store, key string) {
	t.Helper()
	_, _, err := s.Open(ctx, key)
	require.ErrorIs(t, err, blobstore.ErrNotFound, "open %s", key)
	require.ErrorIs(t, err, edgeindex.ErrNotFound)
	_, err = s.Stat(ctx, key)
	require.ErrorIs(t, err, blobstore.ErrNotFound, "stat %s", key)
}

func keys(t *testing.T, s blobstore.Store, prefix string) []string {
	t.Helper()
	out := []string{}
	require.NoError(t, s.List(ctx, prefix, func(info blobstore.Info) error {
		out = append(out, info.Key)
		return nil
	}))
	return out
}

func testPutOpenStatDelete(t *testing.T, open Open) {
	s := open(t, t.TempDir())
	key := "a/b/1-2000.gz"
	requireMissing(t, s, key)

	before := time.Now().Add(-time.Minute)
	b := data(key, 3000)
	put(t, s, key, b)
	require.Equal(t, b, read(t, s, key))
	info, err := s.Stat(ctx, key)
	require.NoError(t, err)
	require.Equal(t, key, info.Key)
	require.Equal(t, int64(len(b)), info.Size)
	require.True(t, info.ModTime.After(before), "ModTime %v is about now", info.ModTime)

	// Other keys, also ones that are a prefix of it, hold nothing.
	for _, other := range []string{"a/b/1-2000", "a/b", "a", "a/b/1-2000.gz2", "A/b/1-2000.gz"} {
		requireMissing(t, s, other)
	}

	require.NoError(t, s.Delete(ctx, key))
	requireMissing(t, s, key)
	require.NoError(t, s.Delete(ctx, key), "deleting a missing blob")
	require.NoError(t, s.Delete(ctx, "never/stored"), "deleting a blob never stored")
	require.Empty(t, keys(t, s, ""))

	// An empty blob is a blob.
	put(t, s, "empty", nil)
	require.Empty(t, read(t, s, "empty"))
	info, err = s.Stat(ctx, "empty")
	require.NoError(t, err)
	require.Zero(t, info.Size)
}

func testOverwrite(t *testing.T, open Open) {
	s := open(t, t.TempDir())
	put(t, s, "k", data("first", 5000))
	put(t, s, "k", []byte("second"))
	require.Equal(t, []byte("second"), read(t, s, "k"))
	require.Equal(t, []string{"k"}, keys(t, s, ""))
}

func testInvalidKeys(t *testing.T, open Open) {
	s := open(t, t.TempDir())
	bad := []string{
		"", "/a", "a/", "a//b", ".", "..", "a/../b", "../x", ".hidden", "a/.tmp-x", "a b", "a\x00b", "a\\b",
		"grüße", "a?b", "a#b", "a\nb", strings.Repeat("a", 256), strings.Repeat("a/", 451) + "a",
	}
	for _, k := range bad {
		_, err := s.Put(ctx, k, strings.NewReader("x"), 1)
		require.ErrorIs(t, err, edgeindex.ErrInvalid, "Put %q", k)
		_, _, err = s.Open(ctx, k)
		require.ErrorIs(t, err, edgeindex.ErrInvalid, "Open %q", k)
		_, err = s.Stat(ctx, k)
		require.ErrorIs(t, err, edgeindex.ErrInvalid, "Stat %q", k)
		require.ErrorIs(t, s.Delete(ctx, k), edgeindex.ErrInvalid, "Delete %q", k)
		require.ErrorIs(t, blobstore.CheckKey(k), edgeindex.ErrInvalid, "CheckKey %q", k)
	}
	for _, p := range []string{"/", "../", "a//", ".x", "a/.", "a b"} {
		err := s.List(ctx, p, func(blobstore.Info) error { return nil })
		require.ErrorIs(t, err, edgeindex.ErrInvalid, "List %q", p)
	}
	require.Empty(t, keys(t, s, ""))

	// Every byte a key may hold, the longest element, and a long key (not
	// the longest: a Sub's keys are shorter by its prefix).
	good := []string{"a-b_c.d~e%2Ff+g=h,i@j", "UPPER/lower/0123456789", strings.Repeat("x", 255), strings.Repeat("abcdefgh/", 66) + "abcdefghi"}
	for _, k := range good {
		require.NoError(t, blobstore.CheckKey(k), "CheckKey %q", k)
		put(t, s, k, []byte(k))
		require.Equal(t, []byte(k), read(t, s, k))
	}
}

// errReader returns its bytes, then err.
type errReader struct {
	b   []byte
	err error
}

func (r *errReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, r.err
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

// onlyReader hides every method but Read (no Len, Seek, WriteTo).
type onlyReader struct{ r io.Reader }

func (r onlyReader) Read(p []byte) (int, error) { return r.r.Read(p) }

func testSizeMismatch(t *testing.T, open Open) {
	s := open(t, t.TempDir())
	old := []byte("the old blob")
	put(t, s, "k", old)
	b := data("new", 4000)
	for _, c := range []struct {
		name string
		r    func() io.Reader
		size int64
	}{
		{"short bytes.Reader", func() io.Reader { return bytes.NewReader(b) }, int64(len(b)) + 1},
		{"long bytes.Reader", func() io.Reader { return bytes.NewReader(b) }, int64(len(b)) - 1},
		{"short stream", func() io.Reader { return onlyReader{bytes.NewReader(b)} }, int64(len(b)) + 10},
		{"long stream", func() io.Reader { return onlyReader{bytes.NewReader(b)} }, int64(len(b)) - 10},
		{"long by one byte", func() io.Reader { return onlyReader{bytes.NewReader(b)} }, int64(len(b)) - 1},
		{"empty with a size", func() io.Reader { return onlyReader{strings.NewReader("")} }, 1},
		{"size 0 with bytes", func() io.Reader { return onlyReader{strings.NewReader("x")} }, 0},
	} {
		_, err := s.Put(ctx, "k", c.r(), c.size)
		require.ErrorIs(t, err, blobstore.ErrSize, c.name)
		require.Equal(t, old, read(t, s, "k"), "%s: the old blob stays", c.name)
		_, err = s.Put(ctx, "new-"+strings.ReplaceAll(c.name, " ", "-"), c.r(), c.size)
		require.ErrorIs(t, err, blobstore.ErrSize, c.name)
	}
	require.Equal(t, []string{"k"}, keys(t, s, ""), "a refused Put leaves no blob")
}

func testReaderError(t *testing.T, open Open) {
	s := open(t, t.TempDir())
	old := []byte("the old blob")
	put(t, s, "k", old)
	boom := errors.New("the body broke")
	for _, c := range []struct {
		name string
		n    int
		size int64
	}{
		{"known size, at once", 0, 100},
		{"known size, half-way", 3000, 6000},
		{"unknown size, at once", 0, -1},
		{"unknown size, half-way", 3000, -1},
		{"unknown size, past one PUT", blobstore.SmallPut + 1000, -1},
	} {
		_, err := s.Put(ctx, "k", &errReader{data("x", c.n), boom}, c.size)
		require.ErrorIs(t, err, boom, c.name)
		require.Equal(t, old, read(t, s, "k"), "%s: the old blob stays", c.name)
		_, err = s.Put(ctx, "fresh", &errReader{data("x", c.n), boom}, c.size)
		require.ErrorIs(t, err, boom, c.name)
		requireMissing(t, s, "fresh")
	}
	require.Equal(t, []string{"k"}, keys(t, s, ""))

	// A context already done stores nothing either.
	done, cancel := context.WithCancel(ctx)
	cancel()
	_, err := s.Put(done, "k", strings.NewReader("new"), 3)
	require.Error(t, err)
	require.Equal(t, old, read(t, s, "k"))
}

func testUnknownSize(t *testing.T, open Open) {
	s := open(t, t.TempDir())
	for _, n := range []int{0, 1, 5000, blobstore.SmallPut, blobstore.SmallPut + 1, blobstore.SmallPut + blobstore.PartSize + 7} {
		key := fmt.Sprintf("unknown/%d", n)
		b := data(key, n)
		got, err := s.Put(ctx, key, onlyReader{bytes.NewReader(b)}, -1)
		require.NoError(t, err, "%d bytes", n)
		require.Equal(t, int64(n), got)
		info, err := s.Stat(ctx, key)
		require.NoError(t, err)
		require.Equal(t, int64(n), info.Size)
		require.True(t, bytes.Equal(b, read(t, s, key)), "%d bytes read back", n)
	}
	// The same through a reader of known size that is no bytes.Reader.
	b := data("known", 100_000)
	n, err := s.Put(ctx, "known", onlyReader{bytes.NewReader(b)}, int64(len(b)))
	require.NoError(t, err)
	require.Equal(t, int64(len(b)), n)
	require.Equal(t, b, read(t, s, "known"))
}

func gzipped(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err := zw.Write(b)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

func checkGzip(r io.Reader) error {
	zr, err := gzip.NewReader(r)
	if err == nil {
		_, err = io.Copy(io.Discard, zr)
	}
	if err != nil {
		return edgeindex.Invalidf("not gzip: %v", err)
	}
	return nil
}

func testChecked(t *testing.T, open Open) {
	s := open(t, t.TempDir())
	good := gzipped(t, data("snapshot", 50_000))
	bad := append(append([]byte{}, good[:len(good)-10]...), "0123456789"...) // a broken trailer
	for _, size := range []func(b []byte) int64{
		func(b []byte) int64 { return int64(len(b)) },
		func([]byte) int64 { return -1 },
	} {
		r := blobstore.Checked(onlyReader{bytes.NewReader(bad)}, checkGzip)
		_, err := s.Put(ctx, "snap", r, size(bad))
		require.NoError(t, r.Close())
		require.ErrorIs(t, err, edgeindex.ErrInvalid, "the check's error")
		requireMissing(t, s, "snap")

		r = blobstore.Checked(onlyReader{bytes.NewReader(good)}, checkGzip)
		n, err := s.Put(ctx, "snap", r, size(good))
		require.NoError(t, r.Close())
		require.NoError(t, err)
		require.Equal(t, int64(len(good)), n)
		require.Equal(t, good, read(t, s, "snap"))
		require.NoError(t, s.Delete(ctx, "snap"))
	}

	// A Checked reader closed before its end ends its check.
	r := blobstore.Checked(bytes.NewReader(good), checkGzip)
	_, err := r.Read(make([]byte, 10))
	require.NoError(t, err)
	require.NoError(t, r.Close())
	_, err = r.Read(make([]byte, 10))
	require.Error(t, err)
	require.NotErrorIs(t, err, io.EOF)
}

func testList(t *testing.T, open Open) {
	s := open(t, t.TempDir())
	// Dir cannot keep a blob and a directory of the same name (S3 can), so
	// no key here is a directory of another.
	all := []string{"a-b", "a/bc", "a/bd/c", "a0", "b", "b0/1/2/3/4", "spool/12/1-2.gz", "spool/123/1-2.gz", "spool/2/1-2.gz"}
	for i := len(all) - 1; i >= 0; i-- {
		put(t, s, all[i], data(all[i], 10+i))
	}
	require.Equal(t, all, keys(t, s, ""), "every key, in byte order")
	sizes := map[string]int64{}
	require.NoError(t, s.List(ctx, "", func(info blobstore.Info) error {
		sizes[info.Key] = info.Size
		require.False(t, info.ModTime.IsZero())
		return nil
	}))
	for i, k := range all {
		require.Equal(t, int64(10+i), sizes[k], k)
	}
	for prefix, want := range map[string][]string{
		"a":          {"a-b", "a/bc", "a/bd/c", "a0"},
		"a/":         {"a/bc", "a/bd/c"},
		"a/b":        {"a/bc", "a/bd/c"},
		"a/bd/":      {"a/bd/c"},
		"spool/12":   {"spool/12/1-2.gz", "spool/123/1-2.gz"},
		"spool/12/":  {"spool/12/1-2.gz"},
		"spool/2/1-": {"spool/2/1-2.gz"},
		"b0/1/2/":    {"b0/1/2/3/4"},
		"c":          {},
		"none/":      {},
		"a/bc/":      {},
	} {
		require.Equal(t, want, keys(t, s, prefix), "prefix %q", prefix)
	}
	require.NoError(t, s.Delete(ctx, "a/bd/c"))
	require.Equal(t, []string{"a/bc"}, keys(t, s, "a/"))
}

func testListStops(t *testing.T, open Open) {
	s := open(t, t.TempDir())
	for i := range 5 {
		put(t, s, fmt.Sprintf("k%d", i), []byte("x"))
	}
	stop := errors.New("enough")
	var seen []string
	err := s.List(ctx, "", func(info blobstore.Info) error {
		seen = append(seen, info.Key)
		if len(seen) == 2 {
			return stop
		}
		return nil
	})
	require.ErrorIs(t, err, stop)
	require.Equal(t, []string{"k0", "k1"}, seen)

	done, cancel := context.WithCancel(ctx)
	cancel()
	require.Error(t, s.List(done, "", func(blobstore.Info) error { return nil }))
}

func testSub(t *testing.T, open Open) {
	s := open(t, t.TempDir())
	a, err := blobstore.Sub(s, "spool")
	require.NoError(t, err)
	b, err := blobstore.Sub(s, "spool2")
	require.NoError(t, err)
	ab, err := blobstore.Sub(a, "x/y")
	require.NoError(t, err)
	put(t, a, "1/1-2.gz", []byte("a"))
	put(t, b, "1/1-2.gz", []byte("b"))
	put(t, ab, "k", []byte("ab"))
	require.Equal(t, []byte("a"), read(t, a, "1/1-2.gz"))
	require.Equal(t, []byte("b"), read(t, b, "1/1-2.gz"))
	require.Equal(t, []byte("a"), read(t, s, "spool/1/1-2.gz"))
	require.Equal(t, []byte("ab"), read(t, s, "spool/x/y/k"))
	require.Equal(t, []string{"1/1-2.gz", "x/y/k"}, keys(t, a, ""), "List is relative, and sees only its part")
	require.Equal(t, []string{"k"}, keys(t, ab, ""))
	info, err := a.Stat(ctx, "x/y/k")
	require.NoError(t, err)
	require.Equal(t, "x/y/k", info.Key)
	require.NoError(t, a.Delete(ctx, "1/1-2.gz"))
	require.Equal(t, []byte("b"), read(t, b, "1/1-2.gz"))
	for _, bad := range []string{"", "a/", "../x", ".x"} {
		_, err := blobstore.Sub(s, bad)
		require.ErrorIs(t, err, edgeindex.ErrInvalid, "Sub %q", bad)
	}
	_, err = a.Put(ctx, "../x", strings.NewReader("x"), 1)
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
}

func testReopen(t *testing.T, open Open) {
	dir := t.TempDir()
	s := open(t, dir)
	want := map[string][]byte{}
	for i := range 20 {
		k := fmt.Sprintf("r/%d/%d-%d.gz", i%3, i*1000, i*1000+999)
		want[k] = data(k, 100+i)
		put(t, s, k, want[k])
	}
	require.NoError(t, s.Delete(ctx, "r/0/0-999.gz"))
	delete(want, "r/0/0-999.gz")

	again := open(t, dir)
	got := map[string][]byte{}
	require.NoError(t, again.List(ctx, "", func(info blobstore.Info) error {
		got[info.Key] = nil
		return nil
	}))
	for k := range got {
		got[k] = read(t, again, k)
	}
	require.Equal(t, want, got)
	// A blob one store writes, the other reads at once.
	put(t, again, "late", []byte("late"))
	require.Equal(t, []byte("late"), read(t, s, "late"))

	other := open(t, t.TempDir())
	require.Empty(t, keys(t, other, ""), "another dir is another store")
}

func testConcurrent(t *testing.T, open Open) {
	s := open(t, t.TempDir())
	const writers, rounds = 4, 15
	keysUsed := []string{"c/1", "c/2", "c/3"}
	version := func(k string, w int) []byte { return data(fmt.Sprintf("%s-w%d", k, w), 1000+w*5000) }
	var wg sync.WaitGroup
	errs := make(chan error, 3*writers)
	for w := range writers {
		wg.Add(3)
		go func() {
			defer wg.Done()
			for i := range rounds {
				k := keysUsed[(i+w)%len(keysUsed)]
				b := version(k, w)
				if _, err := s.Put(ctx, k, bytes.NewReader(b), int64(len(b))); err != nil {
					errs <- err
					return
				}
			}
		}()
		go func() { // a blob read is whole: one writer's version
			defer wg.Done()
			for i := range rounds {
				k := keysUsed[(i*2+w)%len(keysUsed)]
				rc, size, err := s.Open(ctx, k)
				if errors.Is(err, blobstore.ErrNotFound) {
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				b, err := io.ReadAll(rc)
				rc.Close()
				if err != nil {
					errs <- err
					return
				}
				ok := int64(len(b)) == size
				if ok {
					ok = false
					for v := range writers {
						ok = ok || bytes.Equal(b, version(k, v))
					}
				}
				if !ok {
					errs <- fmt.Errorf("read %s: %d bytes (size %d) that no writer wrote", k, len(b), size)
					return
				}
			}
		}()
		go func() { // deletes and lists race with them
			defer wg.Done()
			for i := range rounds / 3 {
				if err := s.Delete(ctx, keysUsed[(i+w)%len(keysUsed)]); err != nil {
					errs <- err
					return
				}
				if err := s.List(ctx, "c/", func(blobstore.Info) error { return nil }); err != nil {
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
}
