package connlease_test

import (
	"testing"

	"github.com/edgeindex/edgeindex/internal/testmain"
)

// TestMain checks that no goroutine leaked (goleak): every Budget's
// renewer ends at Close.
func TestMain(m *testing.M) { testmain.Main(m) }
