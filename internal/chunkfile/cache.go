package chunkfile

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
)

// This file holds what a cache of chunks needs beside WriteAtomic: the
// spool writes its chunks without fsync (a chunk can always be fetched
// again), so after an unclean stop it must tell a whole chunk from a torn
// one, and at a clean stop make everything it wrote durable at once.

// ErrTorn means a chunk file is not one whole gzip stream: cut short,
// empty, or overwritten, as a crash of the machine can leave a file that
// was never synced.
var ErrTorn = errors.New("chunk file is torn")

// WriteClose writes data to f and closes it, without syncing it.
func WriteClose(f *os.File, data []byte) error {
	_, err := f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// CheckGzip reads r to its end as gzip and returns an error wrapping
// ErrTorn unless it is whole: every member's header, its deflate data, and
// its CRC-32 and size trailer check out, and nothing follows the last
// member. An empty input is torn too. A read error of r (the disk failed)
// is no verdict on the bytes: it is returned as it is, not as ErrTorn.
func CheckGzip(r io.Reader) error {
	br := bufio.NewReaderSize(errReader{r}, 32<<10)
	zr, err := gzip.NewReader(br)
	if err == nil {
		_, err = io.Copy(io.Discard, zr)
	}
	var rerr *readError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &rerr):
		return rerr.err
	default:
		return fmt.Errorf("%w: %w", ErrTorn, err)
	}
}

// CheckGzipFile is CheckGzip of the file at path; an error opening it is
// returned as it is.
func CheckGzipFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return CheckGzip(f)
}

// readError marks an error of the underlying reader, so CheckGzip tells it
// from gzip's verdict on the bytes.
type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }

// errReader wraps the errors of r, but io.EOF, in a readError.
type errReader struct{ r io.Reader }

func (e errReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF {
		err = &readError{err}
	}
	return n, err
}
