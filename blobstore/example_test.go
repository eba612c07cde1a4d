package blobstore_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/edgeindex/edgeindex/blobstore"
)

// A coordinator's lane snapshots in a Store: each upload a blob of its own,
// refused before it becomes visible unless it is whole gzip, the lane's
// blobs found by prefix. The same code runs on an S3 bucket
// (blobstore.OpenURL) instead of a directory.
func Example() {
	dir, err := os.MkdirTemp("", "blobstore-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	root, err := blobstore.OpenDir(dir)
	if err != nil {
		panic(err)
	}
	snaps, err := blobstore.Sub(root, "snapshots")
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	isGzip := func(r io.Reader) error {
		zr, err := gzip.NewReader(r)
		if err == nil {
			_, err = io.Copy(io.Discard, zr)
		}
		return err
	}

	var body bytes.Buffer
	zw := gzip.NewWriter(&body)
	zw.Write([]byte("the lane's window"))
	zw.Close()
	upload := blobstore.Checked(&body, isGzip)
	n, err := snaps.Put(ctx, "12-history-5001-7-ab12.gz", upload, -1)
	upload.Close()
	fmt.Println("stored:", n > 0, err)

	bad := blobstore.Checked(strings.NewReader("not gzip"), isGzip)
	_, err = snaps.Put(ctx, "12-history-6001-8-cd34.gz", bad, -1)
	bad.Close()
	fmt.Println("refused:", err != nil)

	snaps.List(ctx, "12-history-", func(info blobstore.Info) error {
		fmt.Println("listed:", info.Key)
		return nil
	})
	rc, size, err := snaps.Open(ctx, "12-history-5001-7-ab12.gz")
	if err != nil {
		panic(err)
	}
	defer rc.Close()
	zr, err := gzip.NewReader(rc)
	if err != nil {
		panic(err)
	}
	window, _ := io.ReadAll(zr)
	fmt.Printf("read: %q, %d bytes stored\n", window, size)
	// Output:
	// stored: true <nil>
	// refused: true
	// listed: 12-history-5001-7-ab12.gz
	// read: "the lane's window", 41 bytes stored
}

// ParseURL reads a coordinator's --storage URL; what the URL leaves out
// comes from the AWS environment variables. String never shows the
// credentials.
func ExampleParseURL() {
	env := map[string]string{
		"AWS_ACCESS_KEY_ID":     "edgeindex",
		"AWS_SECRET_ACCESS_KEY": "not-printed",
		"AWS_REGION":            "us-east-1",
	}
	cfg, err := blobstore.ParseURL("s3://indexer/edge?endpoint=127.0.0.1:9000&tls=false&path-style=true", func(k string) string { return env[k] })
	if err != nil {
		panic(err)
	}
	fmt.Println(cfg.Endpoint, cfg.Bucket, cfg.Prefix, cfg.Region, cfg.AccessKey)
	fmt.Println(cfg)
	// Output:
	// 127.0.0.1:9000 indexer edge us-east-1 edgeindex
	// s3://indexer/edge?endpoint=127.0.0.1:9000&region=us-east-1&tls=false&path-style=true
}
