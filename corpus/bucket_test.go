package corpus_test

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/blobstore"
	"github.com/edgeindex/edgeindex/corpus"
	"github.com/edgeindex/edgeindex/corpus/corpustest"
	"github.com/edgeindex/edgeindex/internal/miniotest"
	"github.com/edgeindex/edgeindex/lease"
)

// prefixOf maps a test's directory to a prefix of its own in a bucket.
func prefixOf(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return "d" + hex.EncodeToString(sum[:8])
}

func openBucket(t *testing.T, store blobstore.Store, cfg corpus.BucketConfig) *corpus.Bucket {
	t.Helper()
	b, err := corpus.OpenBucket(store, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return b
}

func TestBucketConformanceDir(t *testing.T) {
	t.Parallel()
	corpustest.RunStore(t, func(t *testing.T, dir string) corpus.Store {
		d, err := blobstore.OpenDir(dir)
		require.NoError(t, err)
		return openBucket(t, d, corpus.BucketConfig{})
	})
}

// TestBucketConformanceS3 runs the corpus suite on a real MinIO: each
// case's directory is a prefix of one bucket, each open a new client.
func TestBucketConformanceS3(t *testing.T) {
	t.Parallel()
	raw := miniotest.URL(t)
	corpustest.RunStore(t, func(t *testing.T, dir string) corpus.Store {
		cfg, err := blobstore.ParseURL(raw, nil)
		require.NoError(t, err)
		cfg.Prefix = prefixOf(dir) + "/corpus"
		s, err := blobstore.OpenS3(t.Context(), cfg)
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return openBucket(t, s, corpus.BucketConfig{})
	})
}

func TestBucketConfig(t *testing.T) {
	t.Parallel()
	d, err := blobstore.OpenDir(t.TempDir())
	require.NoError(t, err)
	_, err = corpus.OpenBucket(d, corpus.BucketConfig{MaxChunkBytes: -1})
	require.ErrorIs(t, err, edgeindex.ErrInvalid)
	_, err = corpus.OpenBucket(nil, corpus.BucketConfig{})
	require.ErrorIs(t, err, edgeindex.ErrInvalid)

	b := openBucket(t, d, corpus.BucketConfig{MaxChunkBytes: 10})
	sp := lease.Span{From: 1, To: 2}
	require.NoError(t, b.Put("g", sp, make([]byte, 10)))
	require.ErrorIs(t, b.Put("g", sp, make([]byte, 11)), corpus.ErrTooLarge)

	key, err := corpus.BucketKey("../Alt.Binaries", sp)
	require.NoError(t, err)
	require.Equal(t, "%2E.%2F%41lt.%42inaries/1-2.gz", key)
	require.NoError(t, blobstore.CheckKey(key))
	_, err = d.Stat(t.Context(), "g/1-2.gz")
	require.NoError(t, err)
}
