package blobstore

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/edgeindex/edgeindex"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3 is a Store in a bucket of an S3-compatible object store, under a
// prefix: key k is the object PREFIX/k. It talks to the store with
// minio-go, a client kept up by MinIO that signs with AWS Signature V4 and
// works with AWS S3 and the S3-compatible servers alike.
//
// A Put of known size is one PUT with that Content-Length, so the object
// appears whole at once. A Put of unknown size reads up to SmallPut bytes
// first: a blob that ends there is one PUT too; a larger one is a
// multipart upload of PartSize parts, completed only after the last byte
// was read and aborted on any error, so it is never seen half-written
// either (a process killed in the middle leaves an incomplete upload,
// which is no object: a bucket lifecycle rule that aborts incomplete
// uploads after a day removes its parts). Open is the body of one GET,
// streamed; the size is its Content-Length.
type S3 struct {
	client *minio.Client
	core   minio.Core
	bucket string
	prefix string // "" or ending in '/'
	tr     *http.Transport
	cfg    S3Config
}

var _ Store = (*S3)(nil)

// SmallPut is the most a Put of unknown size buffers to send it in one PUT.
const SmallPut = 8 << 20

// PartSize is the part size of the multipart uploads of larger blobs of
// unknown size: the memory one such upload holds.
const PartSize = 16 << 20

// OpenS3 connects to the bucket cfg names, and checks that it is there and
// that the credentials may see it, so a bad URL or key fails here, once.
func OpenS3(ctx context.Context, cfg S3Config) (*S3, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	client, tr, err := cfg.client()
	if err != nil {
		return nil, err
	}
	s := &S3{client: client, core: minio.Core{Client: client}, bucket: cfg.Bucket, tr: tr, cfg: cfg}
	if cfg.Prefix != "" {
		s.prefix = cfg.Prefix + "/"
	}
	ok, err := client.BucketExists(ctx, cfg.Bucket)
	if err == nil && !ok {
		err = errors.New("no such bucket")
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("blobstore: %s: %w", cfg, err)
	}
	return s, nil
}

// NewClient returns a bare minio-go client for cfg, which must name an
// endpoint and credentials, for what a Store does not do (making a
// bucket), and a func that closes its idle connections. OpenS3 makes its
// client the same way.
func (c S3Config) NewClient() (*minio.Client, func(), error) {
	client, tr, err := c.withDefaults().client()
	if err != nil {
		return nil, nil, err
	}
	closeIdle := func() {}
	if tr != nil {
		closeIdle = tr.CloseIdleConnections
	}
	return client, closeIdle, nil
}

// client makes the client; the transport is its own (nil when c has one).
func (c S3Config) client() (*minio.Client, *http.Transport, error) {
	var tr *http.Transport
	rt := c.Transport
	if rt == nil {
		var err error
		tr, err = minio.DefaultTransport(!c.DisableTLS)
		if err != nil {
			return nil, nil, fmt.Errorf("blobstore: %w", err)
		}
		rt = tr
	}
	lookup := minio.BucketLookupAuto
	if c.PathStyle {
		lookup = minio.BucketLookupPath
	}
	client, err := minio.New(c.Endpoint, &minio.Options{
		Creds:        credentials.NewStaticV4(c.AccessKey, c.SecretKey, c.SessionToken),
		Secure:       !c.DisableTLS,
		Transport:    rt,
		Region:       c.Region,
		BucketLookup: lookup,
	})
	if err != nil {
		if tr != nil {
			tr.CloseIdleConnections()
		}
		return nil, nil, fmt.Errorf("blobstore: %s: %w", c, err)
	}
	return client, tr, nil
}

// OpenURL is ParseURL (with the process's environment) and OpenS3.
func OpenURL(ctx context.Context, rawURL string) (*S3, error) {
	cfg, err := ParseURL(rawURL, nil)
	if err != nil {
		return nil, err
	}
	return OpenS3(ctx, cfg)
}

// Config is the configuration the store was opened with.
func (s *S3) Config() S3Config { return s.cfg }

// Client is the minio-go client, for what Store does not do (e.g. a
// lifecycle rule on the bucket).
func (s *S3) Client() *minio.Client { return s.client }

// Close closes the idle connections of the store's own transport. The
// store must not be used after it.
func (s *S3) Close() error {
	if s.tr != nil {
		s.tr.CloseIdleConnections()
	}
	return nil
}

func (s *S3) object(key string) (string, error) {
	if err := CheckKey(key); err != nil {
		return "", err
	}
	return s.prefix + key, nil
}

// notFound reports whether err is the store's answer that there is no such
// object.
func notFound(err error) bool {
	resp := minio.ToErrorResponse(err)
	return resp.Code == minio.NoSuchKey || resp.StatusCode == http.StatusNotFound && resp.Code != minio.NoSuchBucket
}

// Put implements Store.
func (s *S3) Put(ctx context.Context, key string, r io.Reader, size int64) (int64, error) {
	obj, err := s.object(key)
	if err != nil {
		return 0, err
	}
	if r == nil {
		r = bytes.NewReader(nil)
	}
	opts := minio.PutObjectOptions{ContentType: "application/octet-stream"}
	var rec *recorder
	switch {
	case size >= 0 && seekableLen(r) == size:
		// A bytes.Reader or the like: retried by the client if need be.
	case size == 0:
		// The client reads no body of length 0: check there is none.
		e := &exact{r: r}
		if err := e.probe(); err != io.EOF {
			return 0, fmt.Errorf("blobstore: put %s: %w", key, err)
		}
		r = bytes.NewReader(nil)
	case size >= 0:
		rec = &recorder{r: &exact{r: r, left: size}}
		r = rec
	default:
		// Read the start: a small blob is one PUT of known size.
		rec = &recorder{r: r}
		head := make([]byte, SmallPut)
		n, rerr := io.ReadFull(rec, head)
		switch rerr {
		case io.EOF, io.ErrUnexpectedEOF:
			r, size = bytes.NewReader(head[:n]), int64(n)
		case nil:
			r = io.MultiReader(bytes.NewReader(head), rec)
			opts.PartSize = PartSize
		default:
			return 0, fmt.Errorf("blobstore: put %s: %w", key, rerr)
		}
	}
	info, err := s.client.PutObject(ctx, s.bucket, obj, r, size, opts)
	if err != nil {
		if rec != nil && rec.err != nil {
			err = rec.err // the reader's own error, kept for errors.Is/As
		}
		return 0, fmt.Errorf("blobstore: put %s: %w", key, err)
	}
	return info.Size, nil
}

// seekableLen is the number of bytes left in r when r can be read again
// from the start (so the client may retry), or -1.
func seekableLen(r io.Reader) int64 {
	type lenSeeker interface {
		Len() int
		io.Seeker
	}
	switch r.(type) {
	case *bytes.Reader, *strings.Reader:
		return int64(r.(lenSeeker).Len())
	}
	return -1
}

// recorder keeps the first error of r other than io.EOF.
type recorder struct {
	r   io.Reader
	err error
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF && r.err == nil {
		r.err = err
	}
	return n, err
}

// Open implements Store.
func (s *S3) Open(ctx context.Context, key string) (io.ReadCloser, int64, error) {
	obj, err := s.object(key)
	if err != nil {
		return nil, 0, err
	}
	rc, info, _, err := s.core.GetObject(ctx, s.bucket, obj, minio.GetObjectOptions{})
	if notFound(err) {
		return nil, 0, fmt.Errorf("blobstore: %s: %w", key, ErrNotFound)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("blobstore: open %s: %w", key, err)
	}
	return rc, info.Size, nil
}

// Stat implements Store.
func (s *S3) Stat(ctx context.Context, key string) (Info, error) {
	obj, err := s.object(key)
	if err != nil {
		return Info{}, err
	}
	info, err := s.client.StatObject(ctx, s.bucket, obj, minio.StatObjectOptions{})
	if notFound(err) {
		return Info{}, fmt.Errorf("blobstore: %s: %w", key, ErrNotFound)
	}
	if err != nil {
		return Info{}, fmt.Errorf("blobstore: stat %s: %w", key, err)
	}
	return Info{Key: key, Size: info.Size, ModTime: info.LastModified}, nil
}

// Delete implements Store.
func (s *S3) Delete(ctx context.Context, key string) error {
	obj, err := s.object(key)
	if err != nil {
		return err
	}
	err = s.client.RemoveObject(ctx, s.bucket, obj, minio.RemoveObjectOptions{})
	if err != nil && !notFound(err) {
		return fmt.Errorf("blobstore: delete %s: %w", key, err)
	}
	return nil
}

// List implements Store. It lists pages of up to 1000 keys, one request
// each.
func (s *S3) List(ctx context.Context, prefix string, fn func(Info) error) error {
	if err := checkPrefix(prefix); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the client's lister when fn stops early
	for obj := range s.client.ListObjectsIter(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix + prefix, Recursive: true}) {
		if obj.Err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			return fmt.Errorf("blobstore: list %q: %w", prefix, obj.Err)
		}
		key := strings.TrimPrefix(obj.Key, s.prefix)
		if CheckKey(key) != nil {
			continue // an object this package did not write
		}
		if err := fn(Info{Key: key, Size: obj.Size, ModTime: obj.LastModified}); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// DefaultEndpoint is AWS's S3 endpoint, the one of an S3Config that names
// none.
const DefaultEndpoint = "s3.amazonaws.com"

// withDefaults returns c with every zero field that has a default set to it.
func (c S3Config) withDefaults() S3Config {
	c.Endpoint = cmp.Or(c.Endpoint, DefaultEndpoint)
	return c
}

// validate checks a S3Config that has its defaults.
func (c S3Config) validate() error {
	if c.Bucket == "" {
		return edgeindex.Invalidf("blobstore: no S3 bucket")
	}
	if c.Prefix != "" {
		if err := CheckKey(c.Prefix); err != nil {
			return err
		}
	}
	if c.AccessKey == "" || c.SecretKey == "" {
		return edgeindex.Invalidf("blobstore: %s: no credentials (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)", c)
	}
	return nil
}
