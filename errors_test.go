package edgeindex_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/edgeindex/edgeindex"
)

func TestInvalidfIsInvalid(t *testing.T) {
	err := edgeindex.Invalidf("from %d is after to %d", 5, 4)
	if !errors.Is(err, edgeindex.ErrInvalid) {
		t.Fatalf("%v is not ErrInvalid", err)
	}
	if got := err.Error(); got != "from 5 is after to 4" {
		t.Fatalf("text %q carries more than the sentence", got)
	}
	if errors.Is(err, edgeindex.ErrConflict) {
		t.Fatal("an invalid error is a conflict too")
	}
}

func TestFinishedLostIsBoth(t *testing.T) {
	lost := fmt.Errorf("range 3: %w", edgeindex.ErrLeaseLost)
	err := edgeindex.FinishedLost(lost)
	if !errors.Is(err, edgeindex.ErrFinished) || !errors.Is(err, edgeindex.ErrLeaseLost) {
		t.Fatalf("%v is not both ErrFinished and ErrLeaseLost", err)
	}
	if err.Error() != lost.Error() {
		t.Fatalf("text %q, want %q", err, lost)
	}
	if errors.Is(lost, edgeindex.ErrFinished) {
		t.Fatal("a plain lost lease is ErrFinished")
	}
}

func ExampleInvalidf() {
	err := edgeindex.Invalidf("lane: history or tail, not %q", "middle")
	fmt.Println(err, errors.Is(err, edgeindex.ErrInvalid))
	// Output: lane: history or tail, not "middle" true
}
