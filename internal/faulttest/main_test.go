package faulttest

import (
	"testing"

	"github.com/edgeindex/edgeindex/internal/testmain"
)

// TestMain stops the throwaway MinIO of the scale-out test and checks that
// no goroutine leaked.
func TestMain(m *testing.M) { testmain.Main(m) }
