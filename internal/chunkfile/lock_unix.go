//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package chunkfile

import (
	"errors"
	"os"
	"syscall"
)

// TryLock takes an exclusive lock (flock(2)) of f without waiting; false
// when another open file holds it. The lock goes with f's close, or with
// the process, however it ends.
func TryLock(f *os.File) (bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	if err != nil {
		return false, &os.PathError{Op: "flock", Path: f.Name(), Err: err}
	}
	return true, nil
}

// Lock takes an exclusive lock (flock(2)) of f, waiting for it.
func Lock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "flock", Path: f.Name(), Err: err}
		}
		return nil
	}
}

// Unlock gives back f's lock (flock(2)): at once, for every descriptor of
// f's open file, where a close leaves it held by any copy a forked child
// has not yet closed on exec.
func Unlock(f *os.File) error {
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_UN); err != nil {
		return &os.PathError{Op: "flock", Path: f.Name(), Err: err}
	}
	return nil
}
