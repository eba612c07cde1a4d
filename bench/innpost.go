package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeindex/edgeindex/internal/inntest"
	"github.com/edgeindex/edgeindex/internal/quickack"
	"github.com/edgeindex/edgeindex/lease"
)

// errNoINN is why the inn lines are not measured: INN's binaries are
// missing, or this user cannot run innd.
var errNoINN = errors.New("no INN")

// innTB is the testing.TB that inntest asks for, outside a test: a fatal
// error or a skip panics with an innAbort that startINN recovers, logs go
// to a buffer, and cleanups run, last first, when close is called. Only
// the methods inntest calls are implemented; the embedded nil TB panics on
// the others.
type innTB struct {
	testing.TB
	mu       sync.Mutex
	log      bytes.Buffer
	cleanups []func()
	failed   bool
}

// innAbort is what innTB's Fatalf and Skipf panic with.
type innAbort struct{ err error }

func (t *innTB) Helper() {}

func (t *innTB) Logf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(&t.log, format+"\n", args...)
}

func (t *innTB) Fatalf(format string, args ...any) {
	t.mu.Lock()
	t.failed = true
	t.mu.Unlock()
	panic(innAbort{fmt.Errorf(format, args...)})
}

func (t *innTB) Skipf(format string, args ...any) {
	panic(innAbort{fmt.Errorf("%w: %s", errNoINN, fmt.Sprintf(format, args...))})
}

func (t *innTB) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

func (t *innTB) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

// close runs the cleanups, last first.
func (t *innTB) close() {
	t.mu.Lock()
	fs := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

// try runs f, turning an innAbort panic into an error.
func (t *innTB) try(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			a, ok := r.(innAbort)
			if !ok {
				panic(r)
			}
			err = a.err
		}
	}()
	f()
	return nil
}

// startINN starts a throwaway innd with the group, as internal/inntest
// starts it for tests. The caller closes the innTB, which stops innd and
// removes its directory.
func startINN(group string) (*inntest.Server, *innTB, error) {
	tb := &innTB{}
	var s *inntest.Server
	err := tb.try(func() {
		s = inntest.Start(tb)
		s.NewGroup(tb, group)
	})
	if err != nil {
		tb.close()
		return nil, nil, err
	}
	return s, tb, nil
}

// postStream offers arts to the server at addr in streaming mode (MODE
// STREAM, then TAKETHIS for every article, pipelined on one connection,
// without CHECK: every Message-ID is new), and returns once innd has
// accepted every one (239). innd takes articles one at a time whatever the
// number of connections, so one pipelined connection is its fastest feed.
func postStream(addr string, arts []inntest.Article) error {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer nc.Close()
	c := textproto.NewConn(nc)
	if _, _, err := c.ReadCodeLine(200); err != nil {
		return fmt.Errorf("greeting: %w", err)
	}
	if err := c.PrintfLine("MODE STREAM"); err != nil {
		return err
	}
	if _, _, err := c.ReadCodeLine(203); err != nil {
		return fmt.Errorf("MODE STREAM: %w", err)
	}
	sent := make(chan error, 1)
	go func() { sent <- takeThis(nc, arts) }()
	for i := range arts {
		if _, msg, err := c.ReadCodeLine(239); err != nil {
			nc.Close()
			<-sent
			return fmt.Errorf("TAKETHIS %s (article %d): %w (%s)", arts[i].MessageID, i, err, msg)
		}
	}
	if err := <-sent; err != nil {
		return err
	}
	c.PrintfLine("QUIT")
	return nil
}

// takeThis writes a TAKETHIS command and its dot-stuffed article for each
// of arts, through one buffer.
func takeThis(nc net.Conn, arts []inntest.Article) error {
	w := textproto.NewWriter(bufio.NewWriterSize(nc, 256<<10))
	for _, a := range arts {
		if _, err := fmt.Fprintf(w.W, "TAKETHIS %s\r\n", a.MessageID); err != nil {
			return err
		}
		dw := w.DotWriter() // its Close writes ".\r\n" and flushes
		if _, err := dw.Write(a.Bytes()); err != nil {
			return err
		}
		if err := dw.Close(); err != nil {
			return err
		}
	}
	return nil
}

// postOne offers a with IHAVE, as tests post (inntest's Post), and
// returns once innd has accepted it (235): it is in the overview then.
func postOne(srv *inntest.Server, tb *innTB, a inntest.Article) error {
	return tb.try(func() { srv.Post(tb, []inntest.Article{a}) })
}

// lineCounter counts the lines written to it and keeps nothing.
type lineCounter struct{ n int64 }

func (l *lineCounter) Write(p []byte) (int, error) {
	l.n += int64(bytes.Count(p, []byte{'\n'}))
	return len(p), nil
}

// overBaseline is the raw floor of the inn line: conns bare connections,
// each MODE READER and GROUP, then OVER for the next of spans until none
// is left, each answer read to its end into nothing (its lines counted).
// No edgeindex code: net/textproto, and quick ACKs on reads (without them
// every OVER waits about 40 ms for a delayed ACK, see inntest's doc). It
// returns the overview lines read and how long from the first dial.
func overBaseline(ctx context.Context, addr, group string, spans []lease.Span, conns int) (int64, time.Duration, error) {
	var next, lines atomic.Int64
	elapsed, err := parallel(ctx, conns, func(int) error {
		c, err := dialReader(addr, group)
		if err != nil {
			return err
		}
		defer c.Close()
		for {
			i := next.Add(1) - 1
			if i >= int64(len(spans)) || ctx.Err() != nil {
				return ctx.Err()
			}
			n, err := overDiscard(c, spans[i])
			lines.Add(n)
			if err != nil {
				return err
			}
		}
	})
	return lines.Load(), elapsed, err
}

// dialReader dials addr, asks for the reader (MODE READER) and selects
// group.
func dialReader(addr, group string) (*textproto.Conn, error) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	c := textproto.NewConn(quickack.Conn(nc))
	for _, step := range []struct {
		cmd  string
		code int
	}{{"", 200}, {"MODE READER", 200}, {"GROUP " + group, 211}} {
		if step.cmd != "" {
			err = c.PrintfLine("%s", step.cmd)
		}
		if err == nil {
			_, _, err = c.ReadCodeLine(step.code)
		}
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("%q: %w", step.cmd, err)
		}
	}
	return c, nil
}

// overDiscard sends OVER for span and reads the answer to its end.
func overDiscard(c *textproto.Conn, span lease.Span) (int64, error) {
	if err := c.PrintfLine("OVER %d-%d", span.From, span.To); err != nil {
		return 0, err
	}
	code, msg, err := c.ReadCodeLine(0)
	if err != nil {
		return 0, err
	}
	switch code {
	case 224:
	case 423:
		return 0, nil
	default:
		return 0, fmt.Errorf("OVER %d-%d: %d %s", span.From, span.To, code, msg)
	}
	var n lineCounter
	_, err = io.Copy(&n, c.DotReader())
	return n.n, err
}

// postToResult posts one single-part article (whose binary is complete at
// once) with post and returns how long from innd's acceptance until its
// item is in the results feed. n is the number the article gets.
func postToResult(ctx context.Context, base, admin string, post func(inntest.Article) error, n int64) (time.Duration, error) {
	cursor, err := resultsEnd(ctx, base, admin)
	if err != nil {
		return 0, err
	}
	id, err := randomHex()
	if err != nil {
		return 0, err
	}
	a := inntest.Article{MessageID: "<latency." + id + "@inntest.example.test>", From: "Poster One <poster1@example.test>",
		Subject: fmt.Sprintf(`"latency-%d.nfo" yEnc (1/1)`, n), Newsgroups: innGroup, Body: []byte("one part\n")}
	if err := post(a); err != nil {
		return 0, fmt.Errorf("inn: posting the latency article: %w", err)
	}
	posted := time.Now()
	for time.Since(posted) < time.Minute {
		rs, _, err := resultsPage(ctx, base, admin, cursor)
		if err != nil {
			return 0, err
		}
		if len(rs) > 0 {
			return time.Since(posted), nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return 0, errors.New("inn: the latency article had no result after a minute")
}

// resultsEnd pages through the results feed and returns the cursor past
// its last item.
func resultsEnd(ctx context.Context, base, admin string) (string, error) {
	cursor := ""
	for {
		rs, next, err := resultsPage(ctx, base, admin, cursor)
		if err != nil || len(rs) == 0 {
			return cursor, err
		}
		cursor = next
	}
}

// resultsPage is one GET /v1/results of the group after cursor.
func resultsPage(ctx context.Context, base, admin, cursor string) ([]json.RawMessage, string, error) {
	q := url.Values{"group": {innGroup}, "limit": {"1000"}}
	if cursor != "" {
		q.Set("after", cursor)
	}
	b, err := adminGet(ctx, base, admin, "/v1/results?"+q.Encode())
	if err != nil {
		return nil, "", err
	}
	var page struct {
		Results []json.RawMessage `json:"results"`
		Next    json.RawMessage   `json:"next"`
	}
	if err := json.Unmarshal(b, &page); err != nil {
		return nil, "", fmt.Errorf("GET /v1/results: %w", err)
	}
	return page.Results, rawCursor(page.Next), nil
}

// rawCursor is a feed cursor as a query value: a JSON string unquoted, a
// number as it is, null as "".
func rawCursor(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil { // null too: s stays ""
		return s
	}
	return string(raw)
}

// randomHex is 16 random bytes in hex: an admin token, a Message-ID's
// unique part.
func randomHex() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}
