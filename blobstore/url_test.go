package blobstore_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/blobstore"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

const secret = "s3cr3t-never-shown"

func TestParseURL(t *testing.T) {
	t.Parallel()
	creds := map[string]string{blobstore.EnvAccessKey: "AKID", blobstore.EnvSecretKey: secret}
	with := func(extra map[string]string) func(string) string {
		m := map[string]string{}
		for k, v := range creds {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return env(m)
	}
	for _, c := range []struct {
		url  string
		env  func(string) string
		want blobstore.S3Config
	}{
		{"s3://bucket", with(nil), blobstore.S3Config{Endpoint: "s3.amazonaws.com", Bucket: "bucket"}},
		{"s3://bucket/a/b/", with(map[string]string{blobstore.EnvRegion: "eu-west-1", blobstore.EnvSessionToken: "tok"}),
			blobstore.S3Config{Endpoint: "s3.amazonaws.com", Bucket: "bucket", Prefix: "a/b", Region: "eu-west-1", SessionToken: "tok"}},
		{"s3://bucket/p?endpoint=127.0.0.1:9000&tls=false&path-style=true&region=us-east-1", with(nil),
			blobstore.S3Config{Endpoint: "127.0.0.1:9000", Bucket: "bucket", Prefix: "p", Region: "us-east-1", DisableTLS: true, PathStyle: true}},
		{"s3://bucket", with(map[string]string{blobstore.EnvEndpoint: "http://minio.local:9000", blobstore.EnvRegionOld: "r1"}),
			blobstore.S3Config{Endpoint: "minio.local:9000", Bucket: "bucket", Region: "r1", DisableTLS: true}},
		{"s3://bucket?tls=true", with(map[string]string{blobstore.EnvEndpoint: "http://a:1", blobstore.EnvEndpointS3: "https://b:2"}),
			blobstore.S3Config{Endpoint: "b:2", Bucket: "bucket"}},
		{"s3://bucket?endpoint=https://c:3&region=x", with(map[string]string{blobstore.EnvRegion: "y"}),
			blobstore.S3Config{Endpoint: "c:3", Bucket: "bucket", Region: "x"}},
		{"s3://user:" + secret + "@bucket/x?endpoint=h:1&tls=0", env(nil),
			blobstore.S3Config{Endpoint: "h:1", Bucket: "bucket", Prefix: "x", DisableTLS: true}},
	} {
		got, err := blobstore.ParseURL(c.url, c.env)
		require.NoError(t, err, c.url)
		got.AccessKey, got.SecretKey = "", ""
		require.Equal(t, c.want, got, c.url)
	}

	// Credentials: the URL's, else the environment's.
	got, err := blobstore.ParseURL("s3://user:"+secret+"@bucket", with(nil))
	require.NoError(t, err)
	require.Equal(t, "user", got.AccessKey)
	require.Equal(t, secret, got.SecretKey)
	got, err = blobstore.ParseURL("s3://bucket", with(nil))
	require.NoError(t, err)
	require.Equal(t, "AKID", got.AccessKey)
	require.NotContains(t, got.String(), secret)
	require.NotContains(t, got.String(), "AKID")
	require.Equal(t, "s3://bucket?endpoint=s3.amazonaws.com&tls=true&path-style=false", got.String())
}

func TestParseURLErrors(t *testing.T) {
	t.Parallel()
	creds := env(map[string]string{blobstore.EnvAccessKey: "AKID", blobstore.EnvSecretKey: secret})
	for _, c := range []struct {
		url string
		env func(string) string
	}{
		{"s3://bucket", env(nil)}, // no credentials
		{"s3://user@bucket", env(nil)},
		{"s3://:" + secret + "@bucket", env(nil)},
		{"http://bucket/x", creds},
		{"s3:bucket", creds},
		{"s3://", creds},
		{"s3://ab", creds},
		{"s3://-bucket", creds},
		{"s3://bucket/../x", creds},
		{"s3://bucket/a//b", creds},
		{"s3://bucket?tls=maybe", creds},
		{"s3://bucket?path-style=2", creds},
		{"s3://bucket?secret=" + secret, creds},
		{"s3://bucket?endpoint=ftp://h:1", creds},
		{"s3://bucket?endpoint=http://u:" + secret + "@h:1", creds},
		{"s3://u:" + secret + "@bucket\x7f", creds},
		{"s3://u:" + secret + "@bucket?tls=maybe", env(nil)},
	} {
		_, err := blobstore.ParseURL(c.url, c.env)
		require.ErrorIs(t, err, edgeindex.ErrInvalid, c.url)
		require.NotContains(t, err.Error(), secret, "%s: the error quotes no secret", c.url)
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	require.Equal(t, "s3://u:xxxxx@bucket/p?tls=false", blobstore.Redact("s3://u:"+secret+"@bucket/p?tls=false"))
	require.Equal(t, "s3://bucket", blobstore.Redact("s3://bucket"))
	require.NotContains(t, blobstore.Redact("s3://u:"+secret+"@bucket\x7f"), secret)
}
