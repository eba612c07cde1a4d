package spool_test

import (
	"testing"

	"github.com/edgeindex/edgeindex/internal/testmain"
)

// TestMain stops the throwaway servers, if a test started one, and checks
// that no goroutine leaked.
func TestMain(m *testing.M) {
	testmain.Main(m)
}
