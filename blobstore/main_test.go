package blobstore_test

import (
	"testing"

	"github.com/edgeindex/edgeindex/internal/miniotest"
)

func TestMain(m *testing.M) {
	miniotest.Main(m)
}
