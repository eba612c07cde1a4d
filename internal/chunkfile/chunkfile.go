// Package chunkfile is the on-disk layout the spool, the corpus and the
// coordinator's snapshots share: chunk file names, and files written
// atomically (a temporary file, fsync, rename, fsync of the directory), so
// a crash leaves the old file or the new one and never half of one.
package chunkfile

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/lease"
)

// TempPrefix begins the name of every file still being written. Such a
// file is never read; stores remove the ones a crash left behind.
const TempPrefix = ".tmp-"

// Name is the file name of a span's chunk: "<from>-<to>.gz".
func Name(span lease.Span) string {
	return strconv.FormatInt(span.From, 10) + "-" + strconv.FormatInt(span.To, 10) + ".gz"
}

// ParseName reads a name Name made; false for any other name.
func ParseName(name string) (lease.Span, bool) {
	base, ok := strings.CutSuffix(name, ".gz")
	if !ok {
		return lease.Span{}, false
	}
	a, b, ok := strings.Cut(base, "-")
	if !ok {
		return lease.Span{}, false
	}
	from, err1 := strconv.ParseInt(a, 10, 64)
	to, err2 := strconv.ParseInt(b, 10, 64)
	span := lease.Span{From: from, To: to}
	if err1 != nil || err2 != nil || CheckSpan(span) != nil || Name(span) != name {
		return lease.Span{}, false
	}
	return span, true
}

// CheckSpan refuses a span that is not 0 <= From <= To, with an error
// that is edgeindex.ErrInvalid.
func CheckSpan(s lease.Span) error {
	if s.From < 0 || s.From > s.To {
		return edgeindex.Invalidf("span %d-%d: want 0 <= from <= to", s.From, s.To)
	}
	return nil
}

// ReadAll reads and closes the chunk a store's Open returned; it takes Open's
// results, so a store's Read is ReadAll(Open(...)). Open's error comes back
// as it is; a read error of a file names the file.
func ReadAll(rc io.ReadCloser, size int64, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	// The size comes from the store: trusted for the first allocation only
	// up to maxPrealloc, and one more byte, so a right size is one read.
	buf := bytes.NewBuffer(make([]byte, 0, max(0, min(size, maxPrealloc))+1))
	if _, err := buf.ReadFrom(rc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// maxPrealloc is the most ReadAll allocates before reading.
const maxPrealloc = 64 << 20

// Mkdir creates dir if it is missing and reports whether it did.
func Mkdir(dir string) (bool, error) {
	err := os.Mkdir(dir, 0o755)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	return err == nil, err
}

// WriteSync writes data to f, syncs and closes it.
func WriteSync(f *os.File, data []byte) error {
	_, err := f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// SyncDir fsyncs a directory so the renames and removals in it are durable.
func SyncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// WriteAtomic writes data to final through a synced temporary file in the
// same directory, renamed into place, then syncs the directory. When it has
// to create final's directory it syncs root, the directory above, too.
func WriteAtomic(root, final string, data []byte) error {
	dir := filepath.Dir(final)
	created, err := Mkdir(dir)
	if err != nil {
		return err
	}
	if created {
		if err := SyncDir(root); err != nil {
			return err
		}
	}
	tmp, err := os.CreateTemp(dir, TempPrefix+filepath.Base(final)+"-*")
	if err != nil {
		return err
	}
	err = WriteSync(tmp, data)
	if err == nil {
		err = os.Rename(tmp.Name(), final)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return SyncDir(dir)
}

// WriteAtomicFrom is WriteAtomic for data copied from r; it returns how
// many bytes it wrote. check, when not nil, reads the temporary file back
// (from its start) before it is synced and renamed. When the copy or check
// fails, nothing is left behind. The file's mode is 0600.
func WriteAtomicFrom(root, final string, r io.Reader, check func(f *os.File) error) (int64, error) {
	dir := filepath.Dir(final)
	created, err := Mkdir(dir)
	if err != nil {
		return 0, err
	}
	if created {
		if err := SyncDir(root); err != nil {
			return 0, err
		}
	}
	tmp, err := os.CreateTemp(dir, TempPrefix+filepath.Base(final)+"-*")
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(tmp, r)
	if err == nil && check != nil {
		if _, err = tmp.Seek(0, io.SeekStart); err == nil {
			err = check(tmp)
		}
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), final)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return n, err
	}
	return n, SyncDir(dir)
}
