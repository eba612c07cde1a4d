package nntp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/overview"
)

// endless is a reader of the same line, forever.
type endless struct {
	line []byte
	off  int
	n    int64
}

func (e *endless) Read(p []byte) (int, error) {
	k := 0
	for k < len(p) {
		c := copy(p[k:], e.line[e.off:])
		k += c
		e.off = (e.off + c) % len(e.line)
	}
	e.n += int64(k)
	return k, nil
}

// TestReadBlockSkipsCountAsSkipped: each line too long to keep is told to
// the skip func as it is skipped, so an endless stream of them ends at the
// first error, not at the block's end.
func TestReadBlockSkipsCountAsSkipped(t *testing.T) {
	t.Parallel()
	src := &endless{line: []byte(strings.Repeat("z", overview.MaxLineBytes+5) + "\r\n")}
	stop := errors.New("too many skipped")
	n := 0
	c := &conn{lim: blockLimits{skip: func() error {
		if n++; n > 3 {
			return stop
		}
		return nil
	}}}
	err := c.readBlock(bufio.NewReaderSize(src, readBufSize), func([]byte) error { return nil })
	require.ErrorIs(t, err, stop)
	require.Less(t, src.n, int64(6*overview.MaxLineBytes), "read past the fourth line")
}

// TestReadBlockTotal: a block past its total bound ends as soon as it
// passes, however its lines look.
func TestReadBlockTotal(t *testing.T) {
	t.Parallel()
	src := &endless{line: []byte("1\tshort line\r\n")}
	c := &conn{lim: blockLimits{total: 1 << 20}}
	err := c.readBlock(bufio.NewReaderSize(src, readBufSize), func([]byte) error { return nil })
	require.ErrorIs(t, err, ErrTooLarge)
	require.Less(t, src.n, int64(2<<20))
}

// TestReadBlockRefuse: with refuse, a line past the line bound is an
// error before more than a buffer of it is held.
func TestReadBlockRefuse(t *testing.T) {
	t.Parallel()
	src := &endless{line: []byte(strings.Repeat("q", 10<<20) + "\r\n")}
	c := &conn{lim: blockLimits{line: maxReplyLine, total: maxReplyBytes, refuse: true}}
	err := c.readBlock(bufio.NewReaderSize(src, readBufSize), func([]byte) error { return nil })
	require.ErrorIs(t, err, ErrTooLarge)
	require.LessOrEqual(t, cap(c.long), 2*readBufSize)
}

// FuzzReadBlock: whatever a server sends, readBlock hands on no line past
// its bound, reads no more than the block's bound and a buffer, and, for
// a well-formed block within its bounds, hands on exactly the lines a
// plain reading of RFC 3977 gives (CRLF or bare LF, dot-unstuffed, ended by
// ".").
func FuzzReadBlock(f *testing.F) {
	for _, s := range []string{
		"a\r\nb\r\n.\r\n", "..dot\r\n.\r\n", "no terminator\r\n", "bare\n.\n", ".\r\n",
		strings.Repeat("x", 100) + "\r\nshort\r\n.\r\n", "\r\n\r\n.\r\n", "a\rb\r\n.\r\n",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	const lineMax, total, buf = 64, 1024, 16
	f.Fuzz(func(t *testing.T, data []byte, refuse bool) {
		src := &countingReader{r: bytes.NewReader(data)}
		c := &conn{lim: blockLimits{line: lineMax, total: total, refuse: refuse}}
		got := []string{}
		err := c.readBlock(bufio.NewReaderSize(src, buf), func(l []byte) error {
			if len(l) > lineMax {
				t.Fatalf("a line of %d bytes passed the bound of %d", len(l), lineMax)
			}
			got = append(got, string(l))
			return nil
		})
		if src.n > total+buf {
			t.Fatalf("read %d bytes, bound %d and a buffer of %d", src.n, total, buf)
		}
		want, ok := plainBlock(data, lineMax, total)
		if !ok {
			return
		}
		if err != nil {
			t.Fatalf("a well-formed block within its bounds: %v", err)
		}
		require.Equal(t, want, got)
	})
}

// plainBlock reads a dot-terminated block the plain way. ok is false when
// the block is not well-formed within the bounds: no terminator, a line
// past lineMax, or more than total bytes up to the terminator.
func plainBlock(data []byte, lineMax, total int) (lines []string, ok bool) {
	lines = []string{}
	read := 0
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return nil, false
		}
		raw := data[:i+1]
		data = data[i+1:]
		read += len(raw)
		if read > total {
			return nil, false
		}
		l := bytes.TrimSuffix(raw[:len(raw)-1], []byte("\r"))
		if len(raw) > lineMax {
			return nil, false // near the bound: the two ways of counting differ
		}
		if len(l) > 0 && l[0] == '.' {
			if len(l) == 1 {
				return lines, true
			}
			l = l[1:]
		}
		lines = append(lines, string(l))
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}
