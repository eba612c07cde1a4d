package miniotest_test

import (
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/blobstore"
	"github.com/edgeindex/edgeindex/internal/miniotest"
	"github.com/edgeindex/edgeindex/internal/testmain"
)

func TestMain(m *testing.M) {
	testmain.Main(m)
}

// A bucket per test, usable at once, empty.
func TestStore(t *testing.T) {
	t.Parallel()
	a, b := miniotest.Store(t), miniotest.Store(t)
	require.NotEqual(t, a.Config().Bucket, b.Config().Bucket)
	_, err := a.Put(t.Context(), "k", strings.NewReader("x"), 1)
	require.NoError(t, err)
	_, err = b.Stat(t.Context(), "k")
	require.ErrorIs(t, err, blobstore.ErrNotFound)
}

// With TEST_S3_URL a test gets a prefix under it, emptied when it ends:
// the test binary runs itself with a bucket of the throwaway server as
// TEST_S3_URL.
func TestSharedURL(t *testing.T) {
	if os.Getenv("MINIOTEST_CHILD") == "1" {
		s := miniotest.Store(t)
		require.True(t, strings.HasPrefix(s.Config().Prefix, "shared/edgeindex-test-"), s.Config().Prefix)
		_, err := s.Put(t.Context(), "k", strings.NewReader("x"), 1)
		require.NoError(t, err)
		return
	}
	raw := miniotest.URL(t)
	u, err := url.Parse(raw)
	require.NoError(t, err)
	u.Path = "/shared"
	cmd := exec.Command(os.Args[0], "-test.run=^TestSharedURL$", "-test.count=1")
	cmd.Env = append(os.Environ(), "TEST_S3_URL="+u.String(), "MINIOTEST_CHILD=1", "EDGEINDEX_REQUIRE_S3=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "PASS")

	s, err := blobstore.OpenURL(t.Context(), raw)
	require.NoError(t, err)
	defer s.Close()
	var left []string
	require.NoError(t, s.List(t.Context(), "", func(info blobstore.Info) error {
		left = append(left, info.Key)
		return nil
	}))
	require.Empty(t, left, "the child's prefix was emptied")
}

func TestBinaryOverride(t *testing.T) {
	t.Setenv(miniotest.EnvBinary, "/opt/minio/bin/minio")
	got, err := miniotest.Binary()
	require.NoError(t, err)
	require.Equal(t, "/opt/minio/bin/minio", got)
}
