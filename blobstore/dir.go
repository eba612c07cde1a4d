package blobstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/internal/chunkfile"
)

// TempPrefix begins the name of every file a Dir is still writing. No key
// element begins with '.', so no blob has such a name; OpenDir removes the
// ones a crash left behind.
const TempPrefix = chunkfile.TempPrefix

// Dir is a Store on a local directory: key a/b/c is the file root/a/b/c
// (mode 0600, directories 0700). A Put writes a temporary file in the same
// directory, fsyncs it, renames it into place and fsyncs the directory. A
// Delete removes the directories it leaves empty. The context of a call is
// checked when it begins. Several processes may share the directory.
type Dir struct {
	root string
}

var _ Store = (*Dir)(nil)

// OpenDir opens the store in root, creating root if needed, and removes
// the temporary files that a crash left anywhere under it.
func OpenDir(root string) (*Dir, error) {
	if root == "" {
		return nil, edgeindex.Invalidf("blobstore: the directory is empty")
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("blobstore: %w", err)
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != root && strings.HasPrefix(d.Name(), TempPrefix) {
			if err := os.RemoveAll(path); err != nil {
				return err
			}
			if d.IsDir() {
				return fs.SkipDir
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("blobstore: remove leftovers: %w", err)
	}
	return &Dir{root: root}, nil
}

// Root is the store's directory.
func (d *Dir) Root() string { return d.root }

// Path is the file of key, checked.
func (d *Dir) Path(key string) (string, error) {
	if err := CheckKey(key); err != nil {
		return "", err
	}
	return filepath.Join(d.root, filepath.FromSlash(key)), nil
}

// Put implements Store.
func (d *Dir) Put(ctx context.Context, key string, r io.Reader, size int64) (int64, error) {
	final, err := d.Path(key)
	if err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if r == nil {
		r = bytes.NewReader(nil)
	}
	if size >= 0 {
		r = &exact{r: r, left: size}
	}
	var tmp *os.File
	// A Delete may remove the directory, left empty, between its creation
	// and the temporary file's: create it again.
	for try := 0; ; try++ {
		if err = d.mkdirs(filepath.Dir(final)); err == nil {
			tmp, err = os.CreateTemp(filepath.Dir(final), TempPrefix+"put-*")
		}
		if err == nil || !errors.Is(err, fs.ErrNotExist) || try == 5 {
			break
		}
	}
	if err != nil {
		return 0, fmt.Errorf("blobstore: put %s: %w", key, err)
	}
	n, err := io.Copy(tmp, r)
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
		return 0, fmt.Errorf("blobstore: put %s: %w", key, err)
	}
	// A Delete of the same key may have removed the blob, and then its
	// directory, since the rename: the put landed and was deleted after.
	if err := chunkfile.SyncDir(filepath.Dir(final)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return n, fmt.Errorf("blobstore: put %s: %w", key, err)
	}
	return n, nil
}

// mkdirs creates dir and its missing parents under root, syncing the
// directory above each one it creates.
func (d *Dir) mkdirs(dir string) error {
	if dir == d.root {
		return nil
	}
	if info, err := os.Stat(dir); err == nil {
		if !info.IsDir() {
			return fmt.Errorf("%s is not a directory", dir)
		}
		return nil
	}
	if err := d.mkdirs(filepath.Dir(dir)); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
		return err
	}
	return chunkfile.SyncDir(filepath.Dir(dir))
}

// Open implements Store. The reader is an *os.File.
func (d *Dir) Open(ctx context.Context, key string) (io.ReadCloser, int64, error) {
	path, err := d.Path(key)
	if err != nil {
		return nil, 0, err
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, 0, fmt.Errorf("blobstore: %s: %w", key, ErrNotFound)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("blobstore: open %s: %w", key, err)
	}
	info, err := f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("blobstore: %s: %w", key, ErrNotFound)
	}
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("blobstore: open %s: %w", key, err)
	}
	return f, info.Size(), nil
}

// Stat implements Store.
func (d *Dir) Stat(ctx context.Context, key string) (Info, error) {
	path, err := d.Path(key)
	if err != nil {
		return Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return Info{}, err
	}
	info, err := os.Stat(path)
	if err == nil && !info.Mode().IsRegular() || errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return Info{}, fmt.Errorf("blobstore: %s: %w", key, ErrNotFound)
	}
	if err != nil {
		return Info{}, fmt.Errorf("blobstore: stat %s: %w", key, err)
	}
	return Info{Key: key, Size: info.Size(), ModTime: info.ModTime()}, nil
}

// Delete implements Store. It removes the directories the blob leaves
// empty, up to the store's root.
func (d *Dir) Delete(ctx context.Context, key string) error {
	path, err := d.Path(key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if info, err := os.Lstat(path); err != nil || !info.Mode().IsRegular() {
		if err == nil || errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil // no blob there (a directory is not one)
		}
		return fmt.Errorf("blobstore: delete %s: %w", key, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("blobstore: delete %s: %w", key, err)
	}
	dir := filepath.Dir(path)
	if err := chunkfile.SyncDir(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("blobstore: delete %s: %w", key, err)
	}
	// Remove the directories left empty; one that is not empty (another
	// blob, or a Put's temporary file) stops the climb.
	for dir != d.root {
		if os.Remove(dir) != nil {
			break
		}
		dir = filepath.Dir(dir)
		chunkfile.SyncDir(dir)
	}
	return nil
}

// List implements Store.
func (d *Dir) List(ctx context.Context, prefix string, fn func(Info) error) error {
	if err := checkPrefix(prefix); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// Walk the deepest directory every key with the prefix is under.
	base := d.root
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		base = filepath.Join(d.root, filepath.FromSlash(prefix[:i]))
	}
	infos, err := d.walk(base, prefix)
	if err != nil {
		return fmt.Errorf("blobstore: list %q: %w", prefix, err)
	}
	slices.SortFunc(infos, func(a, b Info) int { return strings.Compare(a.Key, b.Key) })
	for _, info := range infos {
		if err := fn(info); err != nil {
			return err
		}
	}
	return nil
}

// walk returns the files under base whose keys have the prefix, in the
// order the walk finds them. It skips what a Dir did not write (names
// starting with "."), the directories no such key can be under, and
// what is removed while it walks.
func (d *Dir) walk(base, prefix string) ([]Info, error) {
	var infos []Info
	err := filepath.WalkDir(base, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				return nil // removed while walking, or base is no directory
			}
			return err
		}
		if path == base {
			return nil
		}
		if strings.HasPrefix(e.Name(), ".") {
			// A temporary file, or nothing a Dir wrote.
			if e.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(d.root, path)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if e.IsDir() {
			// Skip a directory no key with the prefix can be under.
			if !strings.HasPrefix(key+"/", prefix) && !strings.HasPrefix(prefix, key+"/") {
				return fs.SkipDir
			}
			return nil
		}
		if !e.Type().IsRegular() || !strings.HasPrefix(key, prefix) || CheckKey(key) != nil {
			return nil
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		infos = append(infos, Info{Key: key, Size: info.Size(), ModTime: info.ModTime()})
		return nil
	})
	return infos, err
}
