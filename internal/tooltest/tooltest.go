// Package tooltest finds the archivers tests make real archives and PAR2
// sets with (par2cmdline, 7-Zip, Info-ZIP), skipping a test that lacks
// one unless RequireEnv is set, which makes it fail instead.
package tooltest

import (
	"os"
	"os/exec"
	"testing"
)

// RequireEnv names the environment variable that, set to 1, turns a skip
// for want of an archiver into a failure.
const RequireEnv = "EDGEINDEX_REQUIRE_ARCHIVERS"

// Path returns the path of the program name, from Debian's package pkg,
// or skips the test (fails it under RequireEnv).
func Path(tb testing.TB, name, pkg string) string {
	tb.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			tb.Fatalf("tooltest: %s is required (%s=1): apt-get install %s: %v", name, RequireEnv, pkg, err)
		}
		tb.Skipf("tooltest: no %s (apt-get install %s): %v", name, pkg, err)
	}
	return path
}

// Run runs the program name of package pkg with args in dir, failing the
// test with its output when it fails.
func Run(tb testing.TB, dir, name, pkg string, args ...string) {
	tb.Helper()
	cmd := exec.Command(Path(tb, name, pkg), args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("tooltest: %s %v: %v\n%s", name, args, err, out)
	}
}

// Incompressible returns n pseudo-random bytes of seed (xorshift), which
// no archiver shrinks: an archive of them keeps its size, so its headers
// stand where a test needs them (a 7z archive's past a first segment).
func Incompressible(n int, seed uint32) []byte {
	b := make([]byte, n)
	x := seed | 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}
