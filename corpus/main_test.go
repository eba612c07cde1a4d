package corpus_test

import (
	"testing"

	"github.com/edgeindex/edgeindex/internal/miniotest"
)

// TestMain stops the throwaway MinIO, if a test started one, and checks
// that no goroutine leaked.
func TestMain(m *testing.M) {
	miniotest.Main(m)
}
