package chunkfile_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/internal/chunkfile"
)

func gz(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, err := zw.Write([]byte(s))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return b.Bytes()
}

func TestCheckGzip(t *testing.T) {
	t.Parallel()
	whole := gz(t, "1\tsubject\tfrom\tdate\t<id>\t\t100\t10\n")
	two := append(bytes.Clone(whole), gz(t, "2\tmore\n")...)
	for _, ok := range [][]byte{whole, two, gz(t, "")} {
		require.NoError(t, chunkfile.CheckGzip(bytes.NewReader(ok)))
	}
	flipped := bytes.Clone(whole)
	flipped[len(flipped)-6] ^= 1 // the CRC-32
	for name, bad := range map[string][]byte{
		"empty":         nil,
		"header only":   whole[:10],
		"truncated":     whole[:len(whole)-1],
		"zeros":         make([]byte, len(whole)),
		"crc wrong":     flipped,
		"trailing junk": append(bytes.Clone(whole), 0, 0, 0),
	} {
		err := chunkfile.CheckGzip(bytes.NewReader(bad))
		require.ErrorIs(t, err, chunkfile.ErrTorn, name)
	}
	// A read error is the reader's, not a verdict on the bytes.
	boom := errors.New("disk failed")
	err := chunkfile.CheckGzip(iotest.ErrReader(boom))
	require.ErrorIs(t, err, boom)
	require.NotErrorIs(t, err, chunkfile.ErrTorn)
	err = chunkfile.CheckGzip(io.MultiReader(bytes.NewReader(whole[:20]), iotest.ErrReader(boom)))
	require.ErrorIs(t, err, boom)
	err = chunkfile.CheckGzipFile(filepath.Join(t.TempDir(), "missing.gz"))
	require.ErrorIs(t, err, os.ErrNotExist)
	require.NotErrorIs(t, err, chunkfile.ErrTorn)
}

func TestCheckGzipFileReadError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// A directory cannot be read as a file: an I/O error, not a torn chunk.
	err := chunkfile.CheckGzipFile(dir)
	require.Error(t, err)
	require.NotErrorIs(t, err, chunkfile.ErrTorn)
	path := filepath.Join(dir, "1-1.gz")
	require.NoError(t, os.WriteFile(path, []byte("torn"), 0o600))
	require.ErrorIs(t, chunkfile.CheckGzipFile(path), chunkfile.ErrTorn)
}

func TestSyncFSAndLock(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "a"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a", "1-1.gz"), []byte("x"), 0o600))
	require.NoError(t, chunkfile.SyncFS(dir))

	path := filepath.Join(dir, "marker")
	a, err := os.Create(path)
	require.NoError(t, err)
	ok, err := chunkfile.TryLock(a)
	require.NoError(t, err)
	require.True(t, ok)
	b, err := os.Open(path)
	require.NoError(t, err)
	defer b.Close()
	ok, err = chunkfile.TryLock(b)
	require.NoError(t, err)
	require.False(t, ok, "held by a")
	require.NoError(t, a.Close())
	ok, err = chunkfile.TryLock(b)
	require.NoError(t, err)
	require.True(t, ok, "a's close let it go")
}
