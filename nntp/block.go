package nntp

import (
	"bufio"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/edgeindex/edgeindex/overview"
)

// blockLimits bounds a multi-line block.
type blockLimits struct {
	line   int          // the longest line kept; 0: overview.MaxLineBytes
	total  int64        // the most bytes the block may hold, line endings included; 0: no bound
	refuse bool         // a line longer than line is an error, not skipped
	skip   func() error // when set, called as each over-long line is skipped; its error ends the block
}

// readBody reads a multi-line block, inflating it first when compression
// was accepted and the block starts like a zlib (0x78) or gzip (0x1f 0x8b)
// stream. Servers put the terminating ".\r\n" inside the compressed data
// (XFEATURE COMPRESS GZIP TERMINATOR, and most servers for plain GZIP) or
// after it; both are read.
func (c *conn) readBody(status string, fn func([]byte) error) error {
	if !c.compress {
		return c.readPlain(fn)
	}
	head, err := c.r.Peek(2)
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	marked := strings.Contains(strings.ToUpper(status), "COMPRESS=GZIP")
	if !marked && head[0] != 0x1f && head[0] != 0x78 {
		return c.readPlain(fn) // the server sent this one plain
	}
	zr, err := c.inflater(head)
	if err != nil {
		return err
	}
	if c.zbuf == nil {
		c.zbuf = bufio.NewReaderSize(zr, readBufSize)
	} else {
		c.zbuf.Reset(zr)
	}
	return c.endCompressed(c.readBlock(c.zbuf, fn))
}

// inflater returns the reader that inflates the compressed block that
// starts with head: gzip for 0x1f 0x8b, else zlib. It reuses the
// connection's readers.
func (c *conn) inflater(head []byte) (io.Reader, error) {
	if head[0] == 0x1f && head[1] == 0x8b {
		if c.gzr == nil {
			c.gzr = new(gzip.Reader)
		}
		if err := c.gzr.Reset(c.r); err != nil {
			return nil, fmt.Errorf("%w: compressed response: %w", ErrProtocol, err)
		}
		c.gzr.Multistream(false) // never read past the member: the terminator may follow
		return c.gzr, nil
	}
	var err error
	if c.zr == nil {
		c.zr, err = zlib.NewReader(c.r)
	} else {
		err = c.zr.(zlib.Resetter).Reset(c.r, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: compressed response: %w", ErrProtocol, err)
	}
	return c.zr, nil
}

// endCompressed finishes a compressed block that readBlock read with
// error err: the terminator was inside the stream, which must end there,
// or it follows the stream. A corrupt stream is an ErrProtocol.
func (c *conn) endCompressed(err error) error {
	switch {
	case err == nil: // the terminator was inside: the stream must end now
		// One byte says whether anything follows; what follows is never
		// inflated, however much of it there is.
		if _, err := c.zbuf.ReadByte(); err == nil {
			return fmt.Errorf("%w: data after the terminator in a compressed response", ErrProtocol)
		} else if err != io.EOF {
			return fmt.Errorf("%w: compressed response: %w", ErrProtocol, err)
		}
		return nil
	case errors.Is(err, errNoTerminator): // the terminator follows the stream
		line, err := c.readLine()
		if err != nil {
			return err
		}
		if line != "." {
			return fmt.Errorf("%w: %q after a compressed response, want \".\"", ErrProtocol, clip(line))
		}
		return nil
	default:
		var corrupt flate.CorruptInputError
		if errors.Is(err, zlib.ErrChecksum) || errors.Is(err, zlib.ErrHeader) || errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) || errors.As(err, &corrupt) {
			return fmt.Errorf("%w: compressed response: %w", ErrProtocol, err)
		}
		return err
	}
}

// readPlain reads an uncompressed block from the connection.
func (c *conn) readPlain(fn func([]byte) error) error {
	err := c.readBlock(c.r, fn)
	if errors.Is(err, errNoTerminator) {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// errNoTerminator is readBlock's error when r ends cleanly, between lines,
// before the terminating ".".
var errNoTerminator = errors.New("the block ends without its terminating line")

// readBlock reads a dot-terminated block from r, calling fn with each line,
// dot-unstuffed and without its "\r\n" (or bare "\n"). Lines are bytes as
// sent: nothing assumes UTF-8. The bounds are c.lim's: by default a line
// longer than overview.MaxLineBytes is read to its end and skipped, and
// told to c.lim.skip as it is skipped, so the connection
// stays in step with the server without holding the line; with
// c.lim.refuse it is an error wrapping ErrTooLarge as soon as the line
// passes the bound. A block past c.lim.total bytes is an error wrapping
// ErrTooLarge as soon as it passes.
func (c *conn) readBlock(r *bufio.Reader, fn func([]byte) error) error {
	b := blockReader{lim: c.lim, long: c.long[:0]}
	if b.lim.line == 0 {
		b.lim.line = overview.MaxLineBytes
	}
	defer func() { c.long = b.long[:0] }()
	for {
		line, err := r.ReadSlice('\n')
		b.read += int64(len(line))
		c.read += int64(len(line))
		if b.lim.total > 0 && b.read > b.lim.total {
			return fmt.Errorf("%w: more than %d bytes", ErrTooLarge, b.lim.total)
		}
		line, whole, err := b.join(line, err)
		if err != nil {
			return err
		}
		if !whole {
			continue
		}
		if end, err := b.deliver(line, fn); end || err != nil {
			return err
		}
	}
}

// blockReader is the state of one readBlock.
type blockReader struct {
	lim      blockLimits // with line set
	long     []byte      // the pieces of a line longer than the read buffer
	skipping bool        // discarding the rest of a line too long to keep
	read     int64       // the block's bytes so far
}

// join takes what ReadSlice returned, line and err, and returns a whole
// line with its ending and true; false while a long line goes on or is
// being skipped; or the error that ends the block (errNoTerminator when
// the block ends cleanly between lines).
func (b *blockReader) join(line []byte, err error) ([]byte, bool, error) {
	if b.skipping {
		// The rest of a line too long to keep: discard it up to its end.
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, false, nil
		}
		if err == nil {
			b.skipping = false
			return nil, false, nil
		}
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, false, err
	} else if errors.Is(err, bufio.ErrBufferFull) || (err == nil && len(b.long) > 0) {
		b.long = append(b.long, line...)
		if len(b.long) > b.lim.line+2 {
			if err := b.tooLong(); err != nil {
				return nil, false, err
			}
			b.long, b.skipping = b.long[:0], err != nil // skip the rest, if any
			return nil, false, nil
		}
		if err != nil {
			return nil, false, nil
		}
		line = b.long
	}
	if err != nil {
		if err == io.EOF {
			if len(line) == 0 && len(b.long) == 0 {
				return nil, false, errNoTerminator
			}
			err = io.ErrUnexpectedEOF
		}
		return nil, false, err
	}
	return line, true, nil
}

// deliver hands the whole line, dot-unstuffed and without its ending, to
// fn, or skips it when it is too long. It reports whether it was the
// terminating ".".
func (b *blockReader) deliver(line []byte, fn func([]byte) error) (end bool, err error) {
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if len(line) > b.lim.line {
		if err := b.tooLong(); err != nil {
			return false, err
		}
		b.long = b.long[:0]
		return false, nil
	}
	if len(line) > 0 && line[0] == '.' {
		if len(line) == 1 {
			return true, nil
		}
		line = line[1:]
	}
	if err := fn(line); err != nil {
		return false, err
	}
	b.long = b.long[:0]
	return false, nil
}

// tooLong answers a line longer than the bound: an error wrapping
// ErrTooLarge with lim.refuse, else lim.skip's.
func (b *blockReader) tooLong() error {
	if b.lim.refuse {
		return fmt.Errorf("%w: a line longer than %d bytes", ErrTooLarge, b.lim.line)
	}
	if b.lim.skip != nil {
		return b.lim.skip()
	}
	return nil
}
