package blobstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/edgeindex/edgeindex"
)

// Sentinel errors of the package.
var (
	// ErrNotFound means no blob has the key. It wraps edgeindex.ErrNotFound, so
	// errors.Is matches either.
	ErrNotFound = fmt.Errorf("blob %w", edgeindex.ErrNotFound)
	// ErrSize means a Put's reader held more or fewer bytes than its size.
	// Nothing was stored.
	ErrSize = errors.New("blob size does not match")
)

// Store keeps blobs under keys (see the package doc for what a key may
// hold; a malformed key is an error wrapping edgeindex.ErrInvalid). Dir and S3
// implement it; blobtest.Run checks any implementation. A Store is safe for
// concurrent use, by several processes on several machines too.
type Store interface {
	// Put stores r's bytes under key, replacing any blob there, atomically:
	// a reader sees the old blob or the new one, whole, and a Put that
	// fails leaves the old one. size is the number of bytes r holds, or -1
	// when it is not known; a reader with more or fewer is an error
	// wrapping ErrSize. An error r returns (also one it returns in place of
	// io.EOF, see Checked) stores nothing and is returned, wrapped. A nil r
	// is empty. Put returns the number of bytes stored.
	Put(ctx context.Context, key string, r io.Reader, size int64) (int64, error)
	// Open returns the blob for streaming and its size, or an error
	// wrapping ErrNotFound. The caller closes it. The reader holds no copy
	// of the blob: a Put or Delete after Open may or may not be seen by it
	// (a file on disk keeps the old bytes; an S3 body usually does too).
	Open(ctx context.Context, key string) (io.ReadCloser, int64, error)
	// Stat returns the blob's Info, or an error wrapping ErrNotFound.
	Stat(ctx context.Context, key string) (Info, error)
	// Delete removes the blob. Deleting a missing blob is not an error.
	Delete(ctx context.Context, key string) error
	// List calls fn for every blob whose key begins with prefix (a string
	// prefix, not only whole elements; "" lists every blob), in ascending
	// byte order of their keys. A blob stored or deleted while List runs
	// may or may not be listed. An error from fn stops List and is
	// returned.
	List(ctx context.Context, prefix string, fn func(Info) error) error
}

// Info describes a stored blob.
type Info struct {
	Key     string // relative to the Store it was listed from
	Size    int64
	ModTime time.Time // when it was stored, as the backend keeps it
}

// MaxKeyLen is the longest key, in bytes; S3 allows 1024 with the prefix.
const MaxKeyLen = 900

// maxElem is the longest key element: a file name on most file systems.
const maxElem = 255

// CheckKey refuses a malformed key (see the package doc) with an error
// wrapping edgeindex.ErrInvalid.
func CheckKey(key string) error {
	if key == "" {
		return edgeindex.Invalidf("blob key is empty")
	}
	if len(key) > MaxKeyLen {
		return edgeindex.Invalidf("blob key of %d bytes: at most %d", len(key), MaxKeyLen)
	}
	for elem := range strings.SplitSeq(key, "/") {
		if err := checkElem(key, elem, false); err != nil {
			return err
		}
	}
	return nil
}

// checkPrefix refuses a List prefix that no key can begin with, or that
// would leave a directory: every element but the last is a whole, valid
// element, and the last may be empty or the start of one.
func checkPrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	if len(prefix) > MaxKeyLen {
		return edgeindex.Invalidf("blob prefix of %d bytes: at most %d", len(prefix), MaxKeyLen)
	}
	elems := strings.Split(prefix, "/")
	for i, elem := range elems {
		if err := checkElem(prefix, elem, i == len(elems)-1); err != nil {
			return err
		}
	}
	return nil
}

func checkElem(key, elem string, last bool) error {
	if elem == "" {
		if last {
			return nil
		}
		return edgeindex.Invalidf("blob key %q has an empty element", key)
	}
	if len(elem) > maxElem {
		return edgeindex.Invalidf("blob key %q has an element of %d bytes: at most %d", key, len(elem), maxElem)
	}
	if elem[0] == '.' {
		return edgeindex.Invalidf("blob key %q has an element that begins with '.'", key)
	}
	for i := 0; i < len(elem); i++ {
		if !keyByte(elem[i]) {
			return edgeindex.Invalidf("blob key %q holds the byte %q: only letters, digits and -_.~%%+=,@", key, elem[i])
		}
	}
	return nil
}

func keyByte(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("-_.~%+=,@", c) >= 0
}

// Sub returns the part of s under dir: key k of the result is dir+"/"+k in
// s, and List lists only that part, with keys relative to it. dir is one or
// more key elements; the keys of the result are shorter than MaxKeyLen by
// len(dir)+1.
func Sub(s Store, dir string) (Store, error) {
	if err := CheckKey(dir); err != nil {
		return nil, err
	}
	if sub, ok := s.(*subStore); ok {
		return &subStore{s: sub.s, prefix: sub.prefix + dir + "/"}, nil
	}
	return &subStore{s: s, prefix: dir + "/"}, nil
}

type subStore struct {
	s      Store
	prefix string
}

func (b *subStore) key(key string) (string, error) {
	if err := CheckKey(key); err != nil {
		return "", err
	}
	return b.prefix + key, nil
}

func (b *subStore) Put(ctx context.Context, key string, r io.Reader, size int64) (int64, error) {
	k, err := b.key(key)
	if err != nil {
		return 0, err
	}
	return b.s.Put(ctx, k, r, size)
}

func (b *subStore) Open(ctx context.Context, key string) (io.ReadCloser, int64, error) {
	k, err := b.key(key)
	if err != nil {
		return nil, 0, err
	}
	return b.s.Open(ctx, k)
}

func (b *subStore) Stat(ctx context.Context, key string) (Info, error) {
	k, err := b.key(key)
	if err != nil {
		return Info{}, err
	}
	info, err := b.s.Stat(ctx, k)
	info.Key = strings.TrimPrefix(info.Key, b.prefix)
	return info, err
}

func (b *subStore) Delete(ctx context.Context, key string) error {
	k, err := b.key(key)
	if err != nil {
		return err
	}
	return b.s.Delete(ctx, k)
}

func (b *subStore) List(ctx context.Context, prefix string, fn func(Info) error) error {
	if err := checkPrefix(prefix); err != nil {
		return err
	}
	return b.s.List(ctx, b.prefix+prefix, func(info Info) error {
		info.Key = strings.TrimPrefix(info.Key, b.prefix)
		return fn(info)
	})
}

// Checked returns a reader of r's bytes that also hands them, as they are
// read, to check (which runs in its own goroutine and reads its argument to
// the end). Where r ends, the reader returns check's error in place of
// io.EOF, so a Put of it stores nothing when check refuses the bytes. Close
// ends check's goroutine when r was not read to its end: call it when done.
func Checked(r io.Reader, check func(io.Reader) error) io.ReadCloser {
	pr, pw := io.Pipe()
	c := &checked{r: r, pw: pw, done: make(chan error, 1)}
	go func() {
		err := check(pr)
		if err == nil {
			// check may stop before the end; the rest still has to go.
			_, err = io.Copy(io.Discard, pr)
		}
		pr.CloseWithError(errCheckDone)
		c.done <- err
	}()
	return c
}

var errCheckDone = errors.New("blobstore: the check has ended")

type checked struct {
	r      io.Reader
	pw     *io.PipeWriter
	done   chan error
	result error
	ended  bool
}

func (c *checked) Read(p []byte) (int, error) {
	if c.ended {
		if c.result != nil {
			return 0, c.result
		}
		return 0, io.EOF
	}
	n, err := c.r.Read(p)
	if n > 0 {
		if _, werr := c.pw.Write(p[:n]); werr != nil {
			// check has ended before the end of the bytes: with its error,
			// or with nil after reading all it wanted (which io.Copy above
			// rules out); either way its verdict is final.
			c.finish()
			if c.result != nil {
				return 0, c.result
			}
		}
	}
	if err == io.EOF {
		c.finish()
		if c.result != nil {
			return n, c.result
		}
	}
	return n, err
}

func (c *checked) finish() {
	if c.ended {
		return
	}
	c.ended = true
	c.pw.Close()
	c.result = <-c.done
}

func (c *checked) Close() error {
	if !c.ended {
		c.ended = true
		c.pw.CloseWithError(errors.New("blobstore: closed before the end"))
		<-c.done
		// Never an io.EOF after this, that would look like a checked end.
		c.result = errors.New("blobstore: checked reader read after Close")
	}
	return nil
}

// exact reads exactly size bytes of r: fewer is io.ErrUnexpectedEOF
// wrapped in ErrSize, and before it hands out the last byte it makes sure
// r has no more (an error wrapping ErrSize when it does), so a transport
// that stops reading at the length never stores a cut blob.
type exact struct {
	r    io.Reader
	left int64
	err  error // r's first error other than io.EOF
}

func (e *exact) Read(p []byte) (int, error) {
	if e.left == 0 {
		return 0, e.probe()
	}
	if int64(len(p)) > e.left {
		p = p[:e.left]
	}
	n, err := e.r.Read(p)
	e.left -= int64(n)
	if err != nil && err != io.EOF {
		e.err = err
		return n, err
	}
	if e.left == 0 {
		if perr := e.probe(); perr != io.EOF {
			return 0, perr
		}
		return n, nil
	}
	if err == io.EOF {
		return n, fmt.Errorf("%w: %d bytes short", ErrSize, e.left)
	}
	return n, nil
}

// probe returns io.EOF when r is at its end, or the reason it is not.
func (e *exact) probe() error {
	var b [1]byte
	for range 100 {
		n, err := e.r.Read(b[:])
		if n > 0 {
			return fmt.Errorf("%w: more bytes than the size", ErrSize)
		}
		if err == io.EOF {
			return io.EOF
		}
		if err != nil {
			e.err = err
			return err
		}
	}
	return io.ErrNoProgress
}

// OpenWithin is s.Open(key) with timeout bounding the wait for the blob's
// first byte, not its reading: the reader streams the blob for as long as
// it is read, and closing it ends the request. A timeout is an error
// wrapping context.DeadlineExceeded.
func OpenWithin(s Store, key string, timeout time.Duration) (io.ReadCloser, int64, error) {
	ctx, cancel := context.WithCancel(context.Background())
	timer := time.AfterFunc(timeout, cancel)
	rc, size, err := s.Open(ctx, key)
	if !timer.Stop() || err != nil {
		cancel()
		if err == nil {
			rc.Close()
			err = fmt.Errorf("blobstore: open %s: no answer within %s: %w", key, timeout, context.DeadlineExceeded)
		}
		return nil, 0, err
	}
	return &cancelCloser{rc, cancel}, size, nil
}

// cancelCloser ends a blob's context when the blob is closed.
type cancelCloser struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelCloser) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}
