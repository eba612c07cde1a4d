package corpus_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/corpus"
	"github.com/edgeindex/edgeindex/corpus/corpustest"
	"github.com/edgeindex/edgeindex/lease"
)

func openDisk(t *testing.T, dir string, cfg corpus.Config) *corpus.Disk {
	t.Helper()
	d, err := corpus.Open(dir, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	return d
}

func TestDiskConformance(t *testing.T) {
	t.Parallel()
	corpustest.Run(t, func(t *testing.T, dir string) corpus.Store {
		return openDisk(t, dir, corpus.Config{})
	})
}

func TestDiskConfig(t *testing.T) {
	t.Parallel()
	_, err := corpus.Open(t.TempDir(), corpus.Config{MaxChunkBytes: -1})
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
	_, err = corpus.Open("", corpus.Config{})
	require.ErrorIs(t, err, edgeindex.ErrInvalid)

	d := openDisk(t, t.TempDir(), corpus.Config{MaxChunkBytes: 10})
	sp := lease.Span{From: 1, To: 2}
	require.NoError(t, d.Put("g", sp, make([]byte, 10)))
	require.ErrorIs(t, d.Put("g", sp, make([]byte, 11)), corpus.ErrTooLarge)
	got, err := d.Read("g", sp)
	require.NoError(t, err)
	require.Len(t, got, 10, "a refused Put leaves the old chunk")
}

func TestDiskLayout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := openDisk(t, dir, corpus.Config{})
	sp := lease.Span{From: 3_000_000_001, To: 3_000_002_000}
	require.NoError(t, d.Put("alt.binaries.test", sp, []byte("chunk")))
	path := filepath.Join(dir, "alt.binaries.test", "3000000001-3000002000.gz")
	p, err := corpus.ChunkPath(dir, "alt.binaries.test", sp)
	require.NoError(t, err)
	require.Equal(t, path, p)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, []byte("chunk"), got)
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temp file left after Put")

	// Files the corpus did not write are left alone and not listed.
	for _, name := range []string{"README", "0001-2.gz", "5-2.gz", "1-2.txt"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "alt.binaries.test", name), []byte("x"), 0o600))
	}
	spans, err := d.Spans("alt.binaries.test")
	require.NoError(t, err)
	require.Equal(t, []lease.Span{sp}, spans)
}

func TestEscapeGroup(t *testing.T) {
	t.Parallel()
	for group, want := range map[string]string{
		"alt.binaries.test": "alt.binaries.test",
		"comp.lang.go":      "comp.lang.go",
		"a-b_c+d":           "a-b_c+d",
		"../x":              "%2E.%2Fx",
		".":                 "%2E",
		"..":                "%2E.",
		"a/b":               "a%2Fb",
		"a%2Fb":             "a%252%46b",
		"A":                 "%41",
		"a\x00b":            "a%00b",
		"~":                 "%7E",
	} {
		got, err := corpus.EscapeGroup(group)
		require.NoError(t, err)
		require.Equal(t, want, got, "group %q", group)
		back, ok := corpus.UnescapeGroup(got)
		require.True(t, ok, "group %q", group)
		require.Equal(t, group, back)
	}

	_, err := corpus.EscapeGroup("")
	require.ErrorIs(t, err, edgeindex.ErrInvalid)

	long := strings.Repeat("x", 500)
	a, err := corpus.EscapeGroup(long)
	require.NoError(t, err)
	b, err := corpus.EscapeGroup(long + "y")
	require.NoError(t, err)
	require.NotEqual(t, a, b)
	require.Len(t, a, 96+1+64)
	require.Contains(t, a, "~")
	_, ok := corpus.UnescapeGroup(a)
	require.False(t, ok, "a hashed name does not reverse")

	for _, name := range []string{"", ".x", "A", "%2e", "%2", "%zz", "a/b", "%61"} {
		_, ok := corpus.UnescapeGroup(name)
		require.False(t, ok, "%q is not an escaped name", name)
	}
}

func FuzzEscapeGroup(f *testing.F) {
	for _, s := range []string{"alt.binaries.test", "../x", ".", "..", "a/b", "\x00", strings.Repeat("é", 100)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, group string) {
		name, err := corpus.EscapeGroup(group)
		if group == "" {
			require.ErrorIs(t, err, edgeindex.ErrInvalid)
			return
		}
		require.NoError(t, err)
		require.NotContains(t, []string{"", ".", ".."}, name)
		require.NotContains(t, name, "/")
		require.NotContains(t, name, "\\")
		require.NotContains(t, name, "\x00")
		require.LessOrEqual(t, len(name), 200)
		require.Equal(t, filepath.Base(name), name)
		if back, ok := corpus.UnescapeGroup(name); ok {
			require.Equal(t, group, back)
		} else {
			require.Contains(t, name, "~", "only hashed names do not reverse")
		}
	})
}
