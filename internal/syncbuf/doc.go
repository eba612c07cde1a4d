// Package syncbuf holds Buffer, a bytes.Buffer safe for concurrent use:
// the output of a process a test starts, which os/exec copies into from
// its own goroutine while the test reads it.
package syncbuf
