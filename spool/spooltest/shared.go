package spooltest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/spool"
)

// RunShared runs the cases of a store that several coordinators share
// (the Bucket spool): open with the same dir is another coordinator on the
// same bucket. The stores must see each other's chunks within a second or
// so (a short refresh), and have a MaxBytes of at most 1 MiB, which the
// bound case fills. Every case runs in parallel.
func RunShared(t *testing.T, open Open) {
	t.Helper()
	cases := []struct {
		name string
		fn   func(t *testing.T, open Open)
	}{
		{"SeesChunks", testSharedSeesChunks},
		{"WaitChunk", testSharedWaitChunk},
		{"Drop", testSharedDrop},
		{"Bound", testSharedBound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, open)
		})
	}
}

// eventually fails the test unless cond holds within waitLimit.
func eventually(t *testing.T, cond func() bool, what string) {
	t.Helper()
	require.Eventually(t, cond, waitLimit, 10*time.Millisecond, what)
}

func testSharedSeesChunks(t *testing.T, open Open) {
	dir := t.TempDir()
	a, b := open(t, dir), open(t, dir)
	sp := span(1, 1000)
	data := chunk(1, sp, 700)
	notify := b.Notify()
	require.NoError(t, a.Put(1, sp, data))

	// Read and Open ask the store: at once.
	got, err := b.Read(1, sp)
	require.NoError(t, err)
	require.Equal(t, data, got)
	// Has, Size and Notify within a refresh.
	eventually(t, func() bool { return b.Has(1, sp) }, "b sees a's chunk")
	eventually(t, func() bool { return b.Size() == int64(len(data)) }, "b counts a's chunk")
	select {
	case <-notify:
	case <-time.After(waitLimit):
		t.Fatal("a's Put did not close b's Notify channel")
	}

	// An overwrite by the other is counted at its new size.
	require.NoError(t, b.Put(1, sp, data[:100]))
	eventually(t, func() bool { return a.Size() == 100 }, "a counts b's overwrite")
	got, err = a.Read(1, sp)
	require.NoError(t, err)
	require.Equal(t, data[:100], got)
}

func testSharedWaitChunk(t *testing.T, open Open) {
	dir := t.TempDir()
	a, b := open(t, dir), open(t, dir)
	sp := span(1001, 2000)
	done := make(chan error, 1)
	go func() { done <- b.WaitChunk(context.Background(), 7, sp) }()
	select {
	case err := <-done:
		t.Fatalf("WaitChunk returned %v before any Put", err)
	case <-time.After(50 * time.Millisecond):
	}
	require.NoError(t, a.Put(7, sp, []byte("chunk")))
	require.NoError(t, wait(t, done, "b's WaitChunk after a's Put"))
}

func testSharedDrop(t *testing.T, open Open) {
	dir := t.TempDir()
	a, b := open(t, dir), open(t, dir)
	spans := lease.Spans(1, 3000, 1000)
	for _, sp := range spans {
		require.NoError(t, a.Put(1, sp, chunk(1, sp, 100)))
		require.NoError(t, a.Put(2, sp, chunk(2, sp, 100)))
	}
	eventually(t, func() bool { return b.Size() == 600 }, "b counts a's chunks")

	// b drops chunks only a stored.
	require.NoError(t, b.Drop(1))
	require.NoError(t, b.DropChunk(2, spans[0]))
	for _, sp := range spans {
		_, err := a.Read(1, sp)
		require.ErrorIs(t, err, spool.ErrNotFound, "gone for a at once")
		require.False(t, b.Has(1, sp))
	}
	_, err := a.Read(2, spans[0])
	require.ErrorIs(t, err, spool.ErrNotFound)
	require.Equal(t, int64(200), b.Size(), "b's own drops count at once")
	eventually(t, func() bool { return a.Size() == 200 && !a.Has(1, spans[0]) && !a.Has(2, spans[0]) }, "a sees b's drops")
	require.True(t, a.Has(2, spans[1]))
}

func testSharedBound(t *testing.T, open Open) {
	dir := t.TempDir()
	a, b := open(t, dir), open(t, dir)
	max := a.MaxBytes()
	require.Equal(t, max, b.MaxBytes(), "one bound for the store")
	require.LessOrEqual(t, max, int64(1<<20), "RunShared wants a MaxBytes of at most 1 MiB")
	half := max/2 + 1
	require.NoError(t, a.Put(1, span(1, 10), make([]byte, half)))
	eventually(t, func() bool { return b.Size() == half }, "b counts a's chunk")

	// b has no room for another half: it waits, and a's Drop frees it.
	require.ErrorIs(t, b.WaitRoom(canceled(), half), context.Canceled)
	done := make(chan error, 1)
	go func() { done <- b.WaitRoom(context.Background(), half) }()
	select {
	case err := <-done:
		t.Fatalf("WaitRoom returned %v with %d of %d bytes stored", err, b.Size(), max)
	case <-time.After(50 * time.Millisecond):
	}
	require.NoError(t, a.Drop(1))
	require.NoError(t, wait(t, done, "b's WaitRoom after a's Drop"))
}
