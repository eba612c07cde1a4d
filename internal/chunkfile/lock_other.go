//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package chunkfile

import "os"

// TryLock reports true: without flock(2) a lock cannot be told from a
// process that ended, so every other holder counts as ended. Processes
// must not share a spool directory there.
func TryLock(f *os.File) (bool, error) { return true, nil }

// Lock does nothing: see TryLock.
func Lock(f *os.File) error { return nil }

// Unlock does nothing: see TryLock.
func Unlock(f *os.File) error { return nil }
