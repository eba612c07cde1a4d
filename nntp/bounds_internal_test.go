package nntp

import (
	"bufio"
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
	_ = io.EOF
}
