package postproc_test

import (
	"testing"

	"github.com/edgeindex/edgeindex/internal/testmain"
)

// TestMain checks that no goroutine leaked.
func TestMain(m *testing.M) {
	testmain.Main(m)
}
