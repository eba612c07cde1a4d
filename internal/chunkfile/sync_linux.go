package chunkfile

import (
	"os"

	"golang.org/x/sys/unix"
)

// SyncFS makes every write to the file system that holds dir durable: one
// syncfs(2), however many files were written without a sync.
func SyncFS(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return &os.PathError{Op: "syncfs", Path: dir, Err: err}
	}
	return nil
}
