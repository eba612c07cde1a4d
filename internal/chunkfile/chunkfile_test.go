package chunkfile_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/internal/chunkfile"
	"github.com/edgeindex/edgeindex/lease"
)

func TestNames(t *testing.T) {
	t.Parallel()
	span := lease.Span{From: 3_000_000_000, To: 3_000_001_999}
	name := chunkfile.Name(span)
	require.Equal(t, "3000000000-3000001999.gz", name)
	got, ok := chunkfile.ParseName(name)
	require.True(t, ok)
	require.Equal(t, span, got)
	for _, bad := range []string{"1-2", "2-1.gz", "01-2.gz", "a-2.gz", "-1-2.gz", ".tmp-1-2.gz", "1-2.gz.tmp"} {
		_, ok := chunkfile.ParseName(bad)
		require.False(t, ok, bad)
	}
	require.ErrorIs(t, chunkfile.CheckSpan(lease.Span{From: 5, To: 4}), edgeindex.ErrInvalid)
}

func TestWriteAtomic(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	final := filepath.Join(root, "group", "1-10.gz")
	require.NoError(t, chunkfile.WriteAtomic(root, final, []byte("one")))
	require.NoError(t, chunkfile.WriteAtomic(root, final, []byte("two")))
	b, err := os.ReadFile(final)
	require.NoError(t, err)
	require.Equal(t, "two", string(b), "a write replaces the file whole")
	entries, err := os.ReadDir(filepath.Dir(final))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left")
	require.Error(t, chunkfile.WriteAtomic(root, filepath.Join(root, "missing", "deeper", "x"), nil))
}

func TestWriteAtomicFrom(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	final := filepath.Join(root, "x.gz")
	n, err := chunkfile.WriteAtomicFrom(root, final, strings.NewReader("hello"), func(f *os.File) error {
		b, err := io.ReadAll(f)
		require.Equal(t, "hello", string(b), "check reads the file from its start")
		return err
	})
	require.NoError(t, err)
	require.Equal(t, int64(5), n)
	info, err := os.Stat(final)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	refused := errors.New("refused")
	_, err = chunkfile.WriteAtomicFrom(root, filepath.Join(root, "y.gz"), strings.NewReader("bad"), func(*os.File) error { return refused })
	require.ErrorIs(t, err, refused)
	_, err = chunkfile.WriteAtomicFrom(root, filepath.Join(root, "z.gz"), iotest.ErrReader(refused), nil)
	require.ErrorIs(t, err, refused)
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	require.Len(t, entries, 1, "a refused or failed write leaves nothing behind")
}
