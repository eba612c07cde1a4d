package blobstore_test

import (
	"testing"

	"github.com/edgeindex/edgeindex/internal/testmain"
)

func TestMain(m *testing.M) {
	testmain.Main(m)
}
