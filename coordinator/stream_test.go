package coordinator_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/coordinator"
	"github.com/edgeindex/edgeindex/corpus"
	"github.com/edgeindex/edgeindex/edgeframe"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/spool"
)

// fakeClock is a clock.Manual that tells the test through waiting each
// time the code under test waits on it.
type fakeClock struct {
	*clock.Manual
	waiting chan struct{}
}

func newFakeClock() *fakeClock {
	return &fakeClock{Manual: clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), waiting: make(chan struct{}, 100)}
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	ch := c.Manual.After(d)
	if d > 0 {
		c.waiting <- struct{}{}
	}
	return ch
}

// Advance moves the clock once the code under test waits on it.
func (c *fakeClock) Advance(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case <-c.waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream never waited on the clock")
	}
	c.Manual.Advance(d)
}

// streamEnv is a spool and corpus in a temp dir with one range 1..50 of
// chunks of 10.
type streamEnv struct {
	spool  *spool.Disk
	corpus *corpus.Disk
	r      lease.Range
	clock  *fakeClock
}

func newStreamEnv(t *testing.T) *streamEnv {
	t.Helper()
	sp, err := spool.Open(t.TempDir(), spool.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { sp.Close() })
	cp, err := corpus.Open(t.TempDir(), corpus.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { cp.Close() })
	return &streamEnv{spool: sp, corpus: cp, clock: newFakeClock(),
		r: lease.Range{ID: 7, Group: "alt.test", Start: 1, End: 50, Next: 1, State: lease.StateLeased}}
}

func chunkData(span lease.Span) []byte { return fmt.Appendf(nil, "chunk %d-%d", span.From, span.To) }

func (e *streamEnv) putAll(t *testing.T, except ...int64) {
	t.Helper()
	for _, span := range lease.Spans(e.r.Start, e.r.End, 10) {
		skip := false
		for _, x := range except {
			skip = skip || x == span.From
		}
		if !skip {
			require.NoError(t, e.spool.Put(e.r.ID, span, chunkData(span)))
		}
	}
}

// run streams the range in a goroutine and returns a function that waits
// for the stream's end and decodes what it wrote.
func (e *streamEnv) run(ctx context.Context, cfg coordinator.StreamConfig) func(t *testing.T) ([]edgeframe.Frame, error, error) {
	var buf bytes.Buffer
	var mu sync.Mutex
	cfg.Spool, cfg.Clock = e.spool, e.clock
	if cfg.Corpus == nil {
		cfg.Corpus = e.corpus
	}
	done := make(chan error, 1)
	go func() {
		mu.Lock()
		defer mu.Unlock()
		done <- coordinator.Stream(ctx, coordinator.NewFrameWriter(&buf), e.r, 10, cfg)
	}()
	return func(t *testing.T) ([]edgeframe.Frame, error, error) {
		t.Helper()
		serr := <-done
		mu.Lock()
		defer mu.Unlock()
		rd, err := edgeframe.NewReader(&buf, edgeframe.Config{})
		require.NoError(t, err)
		var frames []edgeframe.Frame
		for {
			f, err := rd.Next()
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				return frames, serr, err
			}
			f.Data = bytes.Clone(f.Data)
			frames = append(frames, f)
		}
	}
}

func kinds(frames []edgeframe.Frame) string {
	var b bytes.Buffer
	for _, f := range frames {
		switch f.Type {
		case edgeframe.TypeChunk:
			fmt.Fprintf(&b, "C%d ", f.From)
		case edgeframe.TypeKeepalive:
			b.WriteString("K ")
		case edgeframe.TypeEnd:
			b.WriteString("E")
		case edgeframe.TypeError:
			b.WriteString("X")
		}
	}
	return b.String()
}

func TestStreamFromNext(t *testing.T) {
	t.Parallel()
	e := newStreamEnv(t)
	e.putAll(t)
	e.r.Next = 25 // inside the third chunk
	frames, serr, rerr := e.run(t.Context(), coordinator.StreamConfig{})(t)
	require.NoError(t, serr)
	require.NoError(t, rerr)
	require.Equal(t, "C21 C31 C41 E", kinds(frames))
	require.Equal(t, "chunk 21-30", string(frames[0].Data))
	require.Equal(t, int64(30), frames[0].To)
	require.Equal(t, int64(50), frames[2].To)
}

func TestStreamCorpusFirst(t *testing.T) {
	t.Parallel()
	e := newStreamEnv(t)
	e.r.Capture = true
	e.putAll(t)
	span := lease.Span{From: 11, To: 20}
	require.NoError(t, e.corpus.Put(e.r.Group, span, []byte("from the corpus")))
	frames, serr, _ := e.run(t.Context(), coordinator.StreamConfig{})(t)
	require.NoError(t, serr)
	require.Equal(t, "C1 C11 C21 C31 C41 E", kinds(frames))
	require.Equal(t, "from the corpus", string(frames[1].Data))
	require.Equal(t, "chunk 1-10", string(frames[0].Data))
}

func TestStreamWaitsWithKeepalives(t *testing.T) {
	t.Parallel()
	e := newStreamEnv(t)
	e.putAll(t, 21)
	var checks int
	wait := e.run(t.Context(), coordinator.StreamConfig{
		CheckEvery: 20 * time.Second,
		Check:      func(context.Context) error { checks++; return nil },
	})
	e.clock.Advance(t, 20*time.Second) // silent for 20 s: a keepalive
	e.clock.Advance(t, 20*time.Second) // and another
	<-e.clock.waiting                  // the stream waits again
	require.NoError(t, e.spool.Put(e.r.ID, lease.Span{From: 21, To: 30}, chunkData(lease.Span{From: 21, To: 30})))
	frames, serr, rerr := wait(t)
	require.NoError(t, serr)
	require.NoError(t, rerr)
	require.Equal(t, "C1 C11 K K C21 C31 C41 E", kinds(frames))
	require.Equal(t, 2, checks, "streaming checks the lease")
}

func TestStreamWaitLimit(t *testing.T) {
	t.Parallel()
	e := newStreamEnv(t)
	e.putAll(t, 31)
	wait := e.run(t.Context(), coordinator.StreamConfig{WaitLimit: time.Minute})
	for range 3 {
		e.clock.Advance(t, 20*time.Second)
	}
	frames, serr, rerr := wait(t)
	require.ErrorIs(t, serr, coordinator.ErrWaitLimit)
	require.ErrorIs(t, rerr, edgeframe.ErrAborted, "the stream ends with an error frame")
	require.Equal(t, "C1 C11 C21 K K X", kinds(frames))
	require.Contains(t, frames[len(frames)-1].Message, "31-40")
}

func TestStreamLeaseLost(t *testing.T) {
	t.Parallel()
	e := newStreamEnv(t)
	e.putAll(t, 1)
	wait := e.run(t.Context(), coordinator.StreamConfig{
		CheckEvery: time.Second,
		Check:      func(context.Context) error { return fmt.Errorf("heartbeat: %w", edgeindex.ErrLeaseLost) },
	})
	e.clock.Advance(t, 20*time.Second)
	frames, serr, _ := wait(t)
	require.ErrorIs(t, serr, edgeindex.ErrLeaseLost)
	require.Equal(t, "K X", kinds(frames))
	require.Contains(t, frames[1].Message, "lease lost")
}

func TestStreamShutdown(t *testing.T) {
	t.Parallel()
	e := newStreamEnv(t)
	ctx, cancel := context.WithCancel(t.Context())
	wait := e.run(ctx, coordinator.StreamConfig{})
	<-e.clock.waiting // the stream waits for the first chunk
	e.clock.waiting <- struct{}{}
	cancel()
	frames, serr, _ := wait(t)
	require.ErrorIs(t, serr, context.Canceled)
	require.Equal(t, "X", kinds(frames))
	require.Equal(t, "the coordinator is shutting down", frames[0].Message)
}

func TestStreamEmptyRest(t *testing.T) {
	t.Parallel()
	e := newStreamEnv(t)
	e.r.Next = 51 // every article stored: only the end frame
	frames, serr, _ := e.run(t.Context(), coordinator.StreamConfig{})(t)
	require.NoError(t, serr)
	require.Equal(t, "E", kinds(frames))
}

func TestStreamKnownLength(t *testing.T) {
	t.Parallel()
	e := newStreamEnv(t)
	e.putAll(t)
	e.r.Next = 11
	var length int64 = -1
	var buf bytes.Buffer
	err := coordinator.Stream(t.Context(), coordinator.Frames(&buf, nil, 0, func(n int64) { length = n }), e.r, 10,
		coordinator.StreamConfig{Spool: e.spool, Clock: e.clock})
	require.NoError(t, err)
	require.Equal(t, int64(buf.Len()), length, "the promised length is the stream's")
	rd, err := edgeframe.NewReader(&buf, edgeframe.Config{})
	require.NoError(t, err)
	var frames []edgeframe.Frame
	for {
		f, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		frames = append(frames, f)
	}
	require.Equal(t, "C11 C21 C31 C41 E", kinds(frames))

	// With a chunk missing, the length is not known: no promise is made.
	require.NoError(t, e.spool.DropChunk(e.r.ID, lease.Span{From: 41, To: 50}))
	called := false
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err = coordinator.Stream(ctx, coordinator.Frames(io.Discard, nil, 0, func(int64) { called = true }), e.r, 10,
		coordinator.StreamConfig{Spool: e.spool, Clock: e.clock})
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, called)
}

// stallConn is a connection to a worker that reads accept bytes, then
// stops reading: a write blocks until its deadline passes. Without a
// deadline it would block forever.
type stallConn struct {
	mu        sync.Mutex
	accept    int
	got       int
	deadline  time.Time
	changed   chan struct{} // closed and replaced when the deadline moves
	deadlines int
}

func newStallConn(accept int) *stallConn {
	return &stallConn{accept: accept, changed: make(chan struct{})}
}

func (c *stallConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deadline = t
	c.deadlines++
	close(c.changed)
	c.changed = make(chan struct{})
	return nil
}

func (c *stallConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	n := min(len(p), c.accept-c.got)
	c.got += n
	c.mu.Unlock()
	if n == len(p) {
		return n, nil
	}
	for {
		c.mu.Lock()
		d, changed := c.deadline, c.changed
		c.mu.Unlock()
		var expired <-chan time.Time
		if !d.IsZero() {
			expired = time.After(time.Until(d))
		}
		select {
		case <-expired:
			return n, os.ErrDeadlineExceeded
		case <-changed:
		}
	}
}

// Defect 4: a worker that stops reading costs the stream at most one write
// timeout, on the known-length path too (the chunk goes out whole,
// through sendfile, in one call when nothing bounds it).
func TestStreamStalledReader(t *testing.T) {
	t.Parallel()
	e := newStreamEnv(t)
	big := make([]byte, 4<<20)
	for _, span := range lease.Spans(e.r.Start, e.r.End, 10) {
		require.NoError(t, e.spool.Put(e.r.ID, span, big))
	}
	for _, known := range []bool{true, false} {
		conn := newStallConn(64 << 10)
		checked := 0
		cfg := coordinator.StreamConfig{Spool: e.spool,
			Check: func(context.Context) error { checked++; return nil }, CheckEvery: time.Nanosecond}
		if !known { // a chunk missing: the stream's length is not known
			require.NoError(t, e.spool.DropChunk(e.r.ID, lease.Span{From: 41, To: 50}))
		}
		w := coordinator.Frames(conn, conn.SetWriteDeadline, 50*time.Millisecond, nil)
		start := time.Now()
		done := make(chan error, 1)
		go func() { done <- coordinator.Stream(t.Context(), w, e.r, 10, cfg) }()
		select {
		case err := <-done:
			require.ErrorIs(t, err, os.ErrDeadlineExceeded, "known length %t", known)
		case <-time.After(10 * time.Second):
			t.Fatalf("known length %t: the stream is still blocked on a worker that does not read", known)
		}
		require.Less(t, time.Since(start), 5*time.Second)
		require.Zero(t, checked, "known length %t: a stalled stream does not renew the lease", known)
	}
}

// Defect 4: when the coordinator drains, a write blocked on a worker that
// does not read ends within the grace, whatever the write timeout.
func TestStreamStalledReaderDrain(t *testing.T) {
	t.Parallel()
	e := newStreamEnv(t)
	big := make([]byte, 1<<20)
	for _, span := range lease.Spans(e.r.Start, e.r.End, 10) {
		require.NoError(t, e.spool.Put(e.r.ID, span, big))
	}
	conn := newStallConn(64 << 10)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- coordinator.Stream(ctx, coordinator.Frames(conn, conn.SetWriteDeadline, time.Hour, nil), e.r, 10,
			coordinator.StreamConfig{Spool: e.spool})
	}()
	require.Eventually(t, func() bool {
		conn.mu.Lock()
		defer conn.mu.Unlock()
		return conn.got == conn.accept
	}, 5*time.Second, time.Millisecond)
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		require.Error(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the drained stream is still blocked")
	}
	require.Less(t, time.Since(start), coordinator.DrainGrace+2*time.Second)
}

// pieceSink records the writes and ReadFroms a DeadlineWriter makes.
type pieceSink struct {
	writes, deadlines int
	max               int
	sources           []io.Reader
}

func (p *pieceSink) Write(b []byte) (int, error) {
	p.writes++
	p.max = max(p.max, len(b))
	return len(b), nil
}

func (p *pieceSink) ReadFrom(r io.Reader) (int64, error) {
	p.sources = append(p.sources, r)
	return io.Copy(io.Discard, r)
}

func TestDeadlineWriterPieces(t *testing.T) {
	t.Parallel()
	sink := &pieceSink{}
	dw := coordinator.NewDeadlineWriter(sink, func(time.Time) error { sink.deadlines++; return nil }, time.Second)
	n, err := dw.Write(make([]byte, 3*coordinator.WritePiece+1))
	require.NoError(t, err)
	require.Equal(t, 3*coordinator.WritePiece+1, n)
	require.Equal(t, 4, sink.writes)
	require.Equal(t, 4, sink.deadlines, "a deadline before every piece")
	require.Equal(t, coordinator.WritePiece, sink.max)

	path := filepath.Join(t.TempDir(), "chunk")
	require.NoError(t, os.WriteFile(path, make([]byte, 2*coordinator.WritePiece+10), 0o600))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	lr := &io.LimitedReader{R: f, N: 2*coordinator.WritePiece + 5}
	copied, err := io.Copy(dw, lr)
	require.NoError(t, err)
	require.Equal(t, int64(2*coordinator.WritePiece+5), copied)
	require.Zero(t, lr.N)
	require.Len(t, sink.sources, 3)
	for _, src := range sink.sources {
		l, ok := src.(*io.LimitedReader)
		require.True(t, ok)
		require.Same(t, f, l.R, "each piece reads the file itself, so the kernel can send it")
	}
	require.Equal(t, 7, sink.deadlines)
}
