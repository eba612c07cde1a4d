package yenc

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
)

// Errors of Decode.
var (
	// ErrNotYEnc means the body has no =ybegin line.
	ErrNotYEnc = errors.New("yenc: no =ybegin line")
	// ErrCorrupt means the body is yEnc that does not hold together: a
	// header field out of range, data past =yend's size, a missing
	// =yend, or a CRC32 that does not match.
	ErrCorrupt = errors.New("yenc: corrupt")
	// ErrTooLarge means the part claims, or decodes to, more than the
	// caller's limit.
	ErrTooLarge = errors.New("yenc: part larger than the limit")
)

// MaxFileSize bounds the size a =ybegin may claim for the whole file:
// 1 TiB, past any posted file.
const MaxFileSize = 1 << 40

// Part is one decoded article of a yEnc post.
type Part struct {
	// Name is the file's name as =ybegin gives it, bytes as sent.
	Name string
	// Size is the whole file's size, from =ybegin.
	Size int64
	// Number and Total are the part's number and the post's parts
	// (=ybegin part= and total=); 0 for a post of one part without them.
	Number, Total int
	// Begin and End are the part's first and last byte in the file,
	// counting from 1 (=ypart); 1 and Size for a post of one part.
	Begin, End int64
	// Data is the decoded part.
	Data []byte
}

// Decode decodes the yEnc part in body, an article's body with its lines
// ended by "\n" or "\r\n" and dot-unstuffed. Lines before =ybegin are
// skipped. The data may be at most max bytes, and a part whose header
// claims more is refused before anything is decoded.
func Decode(body []byte, max int) (Part, error) {
	var p Part
	var line []byte
	rest := body
	for {
		if len(rest) == 0 {
			return p, ErrNotYEnc
		}
		line, rest = cutLine(rest)
		if bytes.HasPrefix(line, []byte("=ybegin ")) {
			break
		}
	}
	if err := p.begin(line); err != nil {
		return p, err
	}
	multi := p.Number > 0
	if multi {
		line, rest = cutLine(rest)
		if !bytes.HasPrefix(line, []byte("=ypart ")) {
			return p, fmt.Errorf("%w: a part's =ybegin is not followed by =ypart", ErrCorrupt)
		}
		if err := p.part(line); err != nil {
			return p, err
		}
	} else {
		p.Begin, p.End = 1, p.Size
	}
	want := p.End - p.Begin + 1
	if want > int64(max) {
		return p, fmt.Errorf("%w: the part claims %d bytes, the limit is %d", ErrTooLarge, want, max)
	}
	p.Data = make([]byte, 0, want)
	for {
		if len(rest) == 0 {
			return p, fmt.Errorf("%w: no =yend after %d bytes", ErrCorrupt, len(p.Data))
		}
		line, rest = cutLine(rest)
		if bytes.HasPrefix(line, []byte("=yend")) {
			return p, p.end(line, want)
		}
		var err error
		if p.Data, err = decodeLine(p.Data, line, want); err != nil {
			return p, err
		}
	}
}

// cutLine returns b's first line without its end, and what follows it.
func cutLine(b []byte) (line, rest []byte) {
	line, rest, _ = bytes.Cut(b, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), rest
}

// decodeLine appends the bytes of one data line to dst, refusing to grow
// it past want.
func decodeLine(dst, line []byte, want int64) ([]byte, error) {
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c == '=' {
			i++
			if i == len(line) {
				break // an escape cut by the line's end: yEnc 1.3 says ignore it
			}
			c = line[i] - 64
		}
		if int64(len(dst)) == want {
			return dst, fmt.Errorf("%w: more data than the %d bytes claimed", ErrCorrupt, want)
		}
		dst = append(dst, c-42)
	}
	return dst, nil
}

// begin reads a =ybegin line.
func (p *Part) begin(line []byte) error {
	fields, name := keywords(line[len("=ybegin "):])
	p.Name = name
	var err error
	if p.Size, err = number(fields, "size", 0, MaxFileSize, true); err != nil {
		return err
	}
	n, err := number(fields, "part", 1, 1<<20, false)
	if err != nil {
		return err
	}
	t, err := number(fields, "total", 1, 1<<20, false)
	if err != nil {
		return err
	}
	p.Number, p.Total = int(n), int(t)
	if p.Total > 0 && p.Number > p.Total {
		return fmt.Errorf("%w: part %d of %d", ErrCorrupt, p.Number, p.Total)
	}
	return nil
}

// part reads a =ypart line.
func (p *Part) part(line []byte) error {
	fields, _ := keywords(line[len("=ypart "):])
	var err error
	if p.Begin, err = number(fields, "begin", 1, MaxFileSize, true); err != nil {
		return err
	}
	if p.End, err = number(fields, "end", 1, MaxFileSize, true); err != nil {
		return err
	}
	if p.Begin > p.End || p.End > p.Size {
		return fmt.Errorf("%w: part %d-%d of a file of %d bytes", ErrCorrupt, p.Begin, p.End, p.Size)
	}
	return nil
}

// end reads a =yend line and checks the data against it.
func (p *Part) end(line []byte, want int64) error {
	fields, _ := keywords(bytes.TrimPrefix(line, []byte("=yend")))
	size, err := number(fields, "size", 0, MaxFileSize, true)
	if err != nil {
		return err
	}
	if size != want || int64(len(p.Data)) != want {
		return fmt.Errorf("%w: %d bytes decoded, the part claims %d and =yend %d", ErrCorrupt, len(p.Data), want, size)
	}
	if p.Number > 0 {
		if n, err := number(fields, "part", 1, 1<<20, false); err != nil || (n != 0 && int(n) != p.Number) {
			return fmt.Errorf("%w: =yend of part %d in part %d (%v)", ErrCorrupt, n, p.Number, err)
		}
	}
	key := "pcrc32"
	if _, ok := fields[key]; !ok && p.Number == 0 {
		key = "crc32" // a post of one part: the file's CRC is the part's
	}
	if v, ok := fields[key]; ok {
		sum, err := strconv.ParseUint(v, 16, 32)
		if err != nil {
			return fmt.Errorf("%w: %s=%q", ErrCorrupt, key, v)
		}
		if got := crc32.ChecksumIEEE(p.Data); got != uint32(sum) {
			return fmt.Errorf("%w: CRC32 %08x, %s says %08x", ErrCorrupt, got, key, sum)
		}
	}
	return nil
}

// keywords splits a header line's "key=value" fields; name= takes the
// rest of the line, spaces and all, as yEnc 1.3 puts it last.
func keywords(b []byte) (map[string]string, string) {
	fields := map[string]string{}
	name := ""
	for len(b) > 0 && len(fields) < 16 {
		b = bytes.TrimLeft(b, " ")
		if bytes.HasPrefix(b, []byte("name=")) {
			name = string(b[len("name="):])
			break
		}
		var f []byte
		f, b, _ = bytes.Cut(b, []byte(" "))
		k, v, ok := bytes.Cut(f, []byte("="))
		if ok {
			fields[string(k)] = string(v)
		}
	}
	return fields, name
}

// number reads fields[key] as a decimal in [lo, hi]: 0 when it is
// absent, unless required.
func number(fields map[string]string, key string, lo, hi int64, required bool) (int64, error) {
	v, ok := fields[key]
	if !ok {
		if required {
			return 0, fmt.Errorf("%w: no %s=", ErrCorrupt, key)
		}
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%w: %s=%q is not a number from %d to %d", ErrCorrupt, key, v, lo, hi)
	}
	return n, nil
}
