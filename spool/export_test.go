package spool

import "time"

// Crash stops d as a crash of its process would: no sync, and its marker
// stays, unlocked.
func Crash(d *Disk) { d.crash() }

// SetRecountEvery sets how often a Disk's WaitRoom recounts while it
// waits, and returns a func that puts it back.
func SetRecountEvery(d time.Duration) func() {
	old := recountEvery
	recountEvery = d
	return func() { recountEvery = old }
}
