package overview

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// ErrBadChunk means a chunk does not inflate, or holds a malformed overview
// line. The worker reports such a chunk as corrupt so it is fetched again.
var ErrBadChunk = errors.New("bad chunk")

// MaxLineBytes is the longest overview line ReadChunk accepts.
const MaxLineBytes = 1 << 20

// Overview is one parsed overview line.
type Overview struct {
	Number     int64
	Subject    string
	From       string
	Date       string
	MessageID  string
	References string
	// Bytes and Lines are 0 when the server sent the field empty.
	Bytes int64
	Lines int64
	// Extra holds any fields after lines, as sent (e.g. "Xref: ...").
	Extra []string
}

// Parse parses one overview line: at least eight tab-separated fields, an
// optional trailing "\n" or "\r\n", no other newline. The number must be a
// decimal int64; bytes and lines must be decimal or empty. Errors wrap
// ErrBadChunk.
func Parse(line []byte) (Overview, error) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	if bytes.IndexByte(line, '\n') >= 0 {
		return Overview{}, fmt.Errorf("%w: newline inside an overview line", ErrBadChunk)
	}
	var f [8][]byte
	rest := line
	for i := range f {
		j := bytes.IndexByte(rest, '\t')
		if j < 0 {
			if i != len(f)-1 {
				return Overview{}, fmt.Errorf("%w: overview line has %d fields, want at least 8", ErrBadChunk, i+1)
			}
			f[i], rest = rest, nil
			break
		}
		f[i], rest = rest[:j], rest[j+1:]
	}
	n, err := strconv.ParseInt(string(f[0]), 10, 64)
	if err != nil {
		return Overview{}, fmt.Errorf("%w: article number %q", ErrBadChunk, f[0])
	}
	size, err := parseCount(f[6])
	if err != nil {
		return Overview{}, fmt.Errorf("%w: article %d: bytes %q", ErrBadChunk, n, f[6])
	}
	lines, err := parseCount(f[7])
	if err != nil {
		return Overview{}, fmt.Errorf("%w: article %d: lines %q", ErrBadChunk, n, f[7])
	}
	o := Overview{
		Number:     n,
		Subject:    string(f[1]),
		From:       string(f[2]),
		Date:       string(f[3]),
		MessageID:  string(f[4]),
		References: string(f[5]),
		Bytes:      size,
		Lines:      lines,
	}
	if rest != nil {
		o.Extra = make([]string, 0, bytes.Count(rest, []byte{'\t'})+1)
		for {
			j := bytes.IndexByte(rest, '\t')
			if j < 0 {
				o.Extra = append(o.Extra, string(rest))
				break
			}
			o.Extra = append(o.Extra, string(rest[:j]))
			rest = rest[j+1:]
		}
	}
	return o, nil
}

// Append appends o to dst as an overview line ending in "\n", the form a
// chunk's lines take before they are gzipped. Fields must not hold a tab or a newline.
func Append(dst []byte, o Overview) []byte {
	dst = strconv.AppendInt(dst, o.Number, 10)
	for _, f := range [...]string{o.Subject, o.From, o.Date, o.MessageID, o.References} {
		dst = append(dst, '\t')
		dst = append(dst, f...)
	}
	dst = append(dst, '\t')
	dst = strconv.AppendInt(dst, o.Bytes, 10)
	dst = append(dst, '\t')
	dst = strconv.AppendInt(dst, o.Lines, 10)
	for _, f := range o.Extra {
		dst = append(dst, '\t')
		dst = append(dst, f...)
	}
	return append(dst, '\n')
}

// parseCount parses a non-negative decimal; empty means 0.
func parseCount(b []byte) (int64, error) {
	if len(b) == 0 {
		return 0, nil
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || v < 0 {
		return 0, errors.New("not a count")
	}
	return v, nil
}

// ReadChunk inflates the chunk gz and calls fn with each overview line, in
// order. It returns an error wrapping ErrBadChunk when gz does not inflate,
// a line is malformed or longer than MaxLineBytes, or the last line does not
// end in "\n"; it returns fn's error as is and stops at it. A chunk with no
// lines (the gzip of nothing) is valid.
func ReadChunk(gz []byte, fn func(Overview) error) error {
	return ReadChunkFrom(bytes.NewReader(gz), fn)
}

// ReadChunkFrom is ReadChunk on a stream, e.g. a chunk file of the disk
// spool.
func ReadChunkFrom(r io.Reader, fn func(Overview) error) error {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadChunk, err)
	}
	br := bufio.NewReaderSize(zr, 64<<10)
	var long []byte // a line longer than the reader's buffer
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, line...)
			if len(long) > MaxLineBytes {
				return fmt.Errorf("%w: overview line longer than %d bytes", ErrBadChunk, MaxLineBytes)
			}
			continue
		}
		if len(long) > 0 {
			long = append(long, line...)
			line = long
		}
		if err == io.EOF {
			if len(line) > 0 {
				return fmt.Errorf("%w: last line does not end in a newline", ErrBadChunk)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %w", ErrBadChunk, err)
		}
		if len(line) > MaxLineBytes {
			return fmt.Errorf("%w: overview line longer than %d bytes", ErrBadChunk, MaxLineBytes)
		}
		o, err := Parse(line)
		if err != nil {
			return err
		}
		if err := fn(o); err != nil {
			return err
		}
		long = long[:0]
	}
}
