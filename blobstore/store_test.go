package blobstore_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"testing"
	"testing/iotest"

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

// A bad key or a missing bucket fails at OpenS3, with no secret in the
// sentence.
func TestOpenS3Refuses(t *testing.T) {
	t.Parallel()
	raw := miniotest.URL(t)
	cfg, err := blobstore.ParseURL(raw, nil)
	require.NoError(t, err)

	wrong := cfg
	wrong.SecretKey = "wrong-secret-never-shown"
	_, err = blobstore.OpenS3(t.Context(), wrong)
	require.Error(t, err)
	require.NotContains(t, err.Error(), wrong.SecretKey)
	require.NotContains(t, err.Error(), cfg.SecretKey)

	missing := cfg
	missing.Bucket = "no-such-bucket-here"
	_, err = blobstore.OpenS3(t.Context(), missing)
	require.ErrorContains(t, err, "no such bucket")
	require.NotContains(t, err.Error(), cfg.SecretKey)
}

// A multipart upload that fails is aborted: no parts are left behind.
func TestS3AbortsFailedUploads(t *testing.T) {
	t.Parallel()
	s := miniotest.Store(t)
	boom := errors.New("the body broke")
	r := io.MultiReader(bytes.NewReader(make([]byte, blobstore.SmallPut+blobstore.PartSize+1)), iotest.ErrReader(boom))
	_, err := s.Put(t.Context(), "big", r, -1)
	require.ErrorIs(t, err, boom)
	cfg := s.Config()
	for u := range s.Client().ListIncompleteUploads(t.Context(), cfg.Bucket, "", true) {
		require.NoError(t, u.Err)
		t.Errorf("an incomplete upload is left: %s", u.Key)
	}
}
