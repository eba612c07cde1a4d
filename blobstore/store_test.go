package blobstore_test

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/blobstore"
	"github.com/edgeindex/edgeindex/blobstore/blobtest"
	"github.com/edgeindex/edgeindex/internal/miniotest"
)

func TestDirConformance(t *testing.T) {
	t.Parallel()
	blobtest.Run(t, func(t *testing.T, dir string) blobstore.Store {
		d, err := blobstore.OpenDir(dir)
		require.NoError(t, err)
		return d
	})
}

// The suite through Sub, on disk: keys under a prefix behave the same.
func TestDirSubConformance(t *testing.T) {
	t.Parallel()
	blobtest.Run(t, func(t *testing.T, dir string) blobstore.Store {
		d, err := blobstore.OpenDir(dir)
		require.NoError(t, err)
		sub, err := blobstore.Sub(d, "part/of-it")
		require.NoError(t, err)
		return sub
	})
}

// prefixOf maps a test's directory to a prefix of its own in a bucket.
func prefixOf(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return "d" + hex.EncodeToString(sum[:8])
}

// TestS3Conformance runs the suite on a real MinIO (internal/miniotest):
// each case's directory is a prefix of one bucket, and a reopen is a new
// client on it.
func TestS3Conformance(t *testing.T) {
	t.Parallel()
	raw := miniotest.URL(t)
	blobtest.Run(t, func(t *testing.T, dir string) blobstore.Store {
		cfg, err := blobstore.ParseURL(raw, nil)
		require.NoError(t, err)
		cfg.Prefix = prefixOf(dir)
		s, err := blobstore.OpenS3(t.Context(), cfg)
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	})
}
