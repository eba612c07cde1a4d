package main

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/edgeindex/edgeindex/lease"
)

func TestOverSpans(t *testing.T) {
	rs := []lease.Range{{Start: 1, End: 5000}, {Start: 5001, End: 9000}, {Start: 9001, End: 1 << 40}}
	got := overSpans(rs, 9500)
	want := []lease.Span{{From: 1, To: 2000}, {From: 2001, To: 4000}, {From: 4001, To: 5000},
		{From: 5001, To: 7000}, {From: 7001, To: 9000}, {From: 9001, To: 9500}}
	if !slices.Equal(got, want) {
		t.Fatalf("overSpans = %v, want %v", got, want)
	}
}

func TestRawCursor(t *testing.T) {
	for raw, want := range map[string]string{`"abc"`: "abc", `42`: "42", `null`: ""} {
		if got := rawCursor(json.RawMessage(raw)); got != want {
			t.Errorf("rawCursor(%s) = %q, want %q", raw, got, want)
		}
	}
}

func TestInnTB(t *testing.T) {
	tb := &innTB{}
	closed := false
	tb.Cleanup(func() { closed = true })
	if err := tb.try(func() { tb.Skipf("no %s", "innd") }); !errors.Is(err, errNoINN) {
		t.Fatalf("Skipf: %v, want errNoINN", err)
	}
	if err := tb.try(func() { tb.Fatalf("broken") }); err == nil || errors.Is(err, errNoINN) || !tb.Failed() {
		t.Fatalf("Fatalf: %v, failed %t", err, tb.Failed())
	}
	tb.close()
	if !closed {
		t.Fatal("close did not run the cleanup")
	}
}
