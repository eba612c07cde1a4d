package release_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no goroutine outlives the tests: the package starts
// some of its own to do its work.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
