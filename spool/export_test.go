package spool

// Crash stops d as a crash of its process would: no sync, and its marker
// stays, unlocked.
func Crash(d *Disk) { d.crash() }
