package spool

import (
	"os"
	"time"

	"github.com/edgeindex/edgeindex/internal/chunkfile"
)

// Crash stops d as a crash of its process would: no sync, and its marker
// stays, unlocked. It returns once another open of the marker can take
// its lock: a child process forked meanwhile (the package's tests start
// MinIO) holds a copy of every descriptor, and with it the flock(2), until
// it execs.
func Crash(d *Disk) {
	name := ""
	if d.marker != nil {
		name = d.marker.Name()
	}
	d.crash()
	if name == "" {
		return
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		f, err := os.Open(name)
		if err != nil {
			return
		}
		ok, err := chunkfile.TryLock(f)
		if ok {
			// Given back before the close: a child forked while f is
			// open would hold it on.
			err = chunkfile.Unlock(f)
		}
		_ = f.Close()
		if err != nil || ok {
			return
		}
	}
}

// SetRecountEvery sets how often a Disk's WaitRoom recounts while it
// waits, and returns a func that puts it back.
func SetRecountEvery(d time.Duration) func() {
	old := recountEvery
	recountEvery = d
	return func() { recountEvery = old }
}
