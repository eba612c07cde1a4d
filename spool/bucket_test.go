package spool_test

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/blobstore"
	"github.com/edgeindex/edgeindex/internal/miniotest"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/spool"
	"github.com/edgeindex/edgeindex/spool/spooltest"
)

// prefixOf maps a test's directory to a prefix of its own in a bucket.
func prefixOf(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return "d" + hex.EncodeToString(sum[:8])
}

func openBucket(t *testing.T, store blobstore.Store, cfg spool.BucketConfig) *spool.Bucket {
	t.Helper()
	b, err := spool.OpenBucket(t.Context(), store, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return b
}

// onDir opens a Bucket spool on a blobstore.Dir in dir.
func onDir(cfg spool.BucketConfig) spooltest.Open {
	return func(t *testing.T, dir string) spool.Store {
		d, err := blobstore.OpenDir(dir)
		require.NoError(t, err)
		return openBucket(t, d, cfg)
	}
}

// onS3 opens a Bucket spool on a prefix, named after dir, of one bucket
// of a real MinIO; each open is a new client, as another coordinator's.
func onS3(t *testing.T, cfg spool.BucketConfig) spooltest.Open {
	raw := miniotest.URL(t)
	return func(t *testing.T, dir string) spool.Store {
		scfg, err := blobstore.ParseURL(raw, nil)
		require.NoError(t, err)
		scfg.Prefix = prefixOf(dir) + "/spool"
		s, err := blobstore.OpenS3(t.Context(), scfg)
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return openBucket(t, s, cfg)
	}
}

var shared = spool.BucketConfig{MaxBytes: 64 << 10, Refresh: 20 * time.Millisecond}

func TestBucketConformanceDir(t *testing.T) {
	t.Parallel()
	spooltest.RunStore(t, onDir(spool.BucketConfig{}))
}

func TestBucketConformanceDirSmallBound(t *testing.T) {
	t.Parallel()
	spooltest.RunStore(t, onDir(spool.BucketConfig{MaxBytes: 4096}))
}

func TestBucketSharedDir(t *testing.T) {
	t.Parallel()
	spooltest.RunShared(t, onDir(shared))
}

// TestBucketConformanceS3 runs the spool suite on a real MinIO.
func TestBucketConformanceS3(t *testing.T) {
	t.Parallel()
	spooltest.RunStore(t, onS3(t, spool.BucketConfig{}))
}

func TestBucketConformanceS3SmallBound(t *testing.T) {
	t.Parallel()
	spooltest.RunStore(t, onS3(t, spool.BucketConfig{MaxBytes: 4096}))
}

// TestBucketSharedS3 runs the cases of coordinators sharing one bucket on
// a real MinIO: chunks, drops and the size bound seen across them.
func TestBucketSharedS3(t *testing.T) {
	t.Parallel()
	spooltest.RunShared(t, onS3(t, shared))
}

func TestBucketConfig(t *testing.T) {
	t.Parallel()
	d, err := blobstore.OpenDir(t.TempDir())
	require.NoError(t, err)
	b := openBucket(t, d, spool.BucketConfig{})
	require.Equal(t, spool.DefaultMaxBytes, b.MaxBytes())
	_, err = spool.OpenBucket(t.Context(), d, spool.BucketConfig{MaxBytes: -1})
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
	_, err = spool.OpenBucket(t.Context(), d, spool.BucketConfig{Refresh: -time.Second})
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
	_, err = spool.OpenBucket(t.Context(), nil, spool.BucketConfig{})
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
}

// The layout in the store, and blobs that are not the spool's: left alone
// and not counted.
func TestBucketLayout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d, err := blobstore.OpenDir(dir)
	require.NoError(t, err)
	for _, k := range []string{"README", "notanumber/1-2.gz", "7/0001-2.gz", "7/5-2.gz", "7/1-2.txt", "07/1-2.gz"} {
		_, err := d.Put(t.Context(), k, nil, 0)
		require.NoError(t, err)
	}
	b := openBucket(t, d, spool.BucketConfig{})
	require.Zero(t, b.Size())
	sp := lease.Span{From: 3_000_000_001, To: 3_000_002_000}
	require.Equal(t, "42/3000000001-3000002000.gz", spool.BucketKey(42, sp))
	require.NoError(t, b.Put(42, sp, []byte("chunk")))
	info, err := d.Stat(t.Context(), "42/3000000001-3000002000.gz")
	require.NoError(t, err)
	require.Equal(t, int64(5), info.Size)
	require.NoError(t, b.Put(7, sp, []byte("x")))
	require.NoError(t, b.Put(-1, sp, []byte("x")))
	require.Equal(t, []int64{-1, 7, 42}, b.Ranges())
	require.NoError(t, b.Drop(7))
	require.Equal(t, []int64{-1, 42}, b.Ranges())
	_, err = d.Stat(t.Context(), "7/5-2.gz")
	require.NoError(t, err, "a blob that is no chunk survives a Drop of its range")
}

// Learn finds a chunk another coordinator stored and wakes the waiters at
// once, long before the next refresh.
func TestBucketLearn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d, err := blobstore.OpenDir(dir)
	require.NoError(t, err)
	slow := spool.BucketConfig{Refresh: time.Hour}
	a, b := openBucket(t, d, slow), openBucket(t, d, slow)
	sp := lease.Span{From: 1, To: 100}
	notify := b.Notify()
	require.NoError(t, a.Put(3, sp, []byte("x")))
	require.False(t, b.Has(3, sp), "not before a refresh or a Learn")
	found, err := b.Learn(t.Context(), 3, sp)
	require.NoError(t, err)
	require.True(t, found)
	require.True(t, b.Has(3, sp))
	select {
	case <-notify:
	default:
		t.Fatal("Learn did not close Notify")
	}
	require.NoError(t, a.Drop(3))
	found, err = b.Learn(t.Context(), 3, sp)
	require.NoError(t, err)
	require.False(t, found)
	require.False(t, b.Has(3, sp))
	require.Zero(t, b.Size())
	require.NoError(t, b.Refresh(t.Context()))
}
