//go:build !linux

package chunkfile

import (
	"io/fs"
	"os"
	"path/filepath"
)

// SyncFS makes every file and directory under dir durable: without
// syncfs(2), it fsyncs each of them, the directories after their files.
func SyncFS(dir string) error {
	var dirs []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil // removed meanwhile: nothing to sync
			}
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, path)
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		f, err := os.Open(path)
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			return err
		}
		err = f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	})
	for i := len(dirs) - 1; err == nil && i >= 0; i-- {
		if err = SyncDir(dirs[i]); os.IsNotExist(err) {
			err = nil
		}
	}
	return err
}
