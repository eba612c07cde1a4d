// Package testmain is the one TestMain of the packages whose tests start
// throwaway servers (internal/pgtest's PostgreSQL, internal/miniotest's
// MinIO): it runs the tests, stops every server a test started, checks
// that no goroutine leaked (goleak), and exits.
package testmain

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

var (
	mu    sync.Mutex
	stops []func()
)

// AtExit registers stop to run once the tests have run, before the leak
// check: the helper that starts a server registers its stop.
func AtExit(stop func()) {
	mu.Lock()
	defer mu.Unlock()
	stops = append(stops, stop)
}

// Main runs m's tests, runs the registered stops, last first, checks that
// no goroutine leaked when the tests passed, and exits. Call it from
// TestMain.
func Main(m *testing.M) {
	code := m.Run()
	mu.Lock()
	for i := len(stops) - 1; i >= 0; i-- {
		stops[i]()
	}
	stops = nil
	mu.Unlock()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
