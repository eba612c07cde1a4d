package syncbuf_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/edgeindex/edgeindex/internal/syncbuf"
)

// TestConcurrentWrites writes from several goroutines while reading:
// under -race, any unguarded access fails the test.
func TestConcurrentWrites(t *testing.T) {
	var b syncbuf.Buffer
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				_, _ = b.Write([]byte("x"))
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if got := b.String(); got != strings.Repeat("x", 400) {
		t.Fatalf("got %d bytes, want 400", len(got))
	}
}
