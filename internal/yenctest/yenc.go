// Package yenctest encodes files as multi-part yEnc posts (yEnc 1.3), for
// tests that post real binaries into a news server and have a downloader
// rebuild them, and decodes them again to check itself.
//
// Each part's body is
//
//	=ybegin part=P total=T line=L size=S name=NAME
//	=ypart begin=B end=E
//	...encoded lines...
//	=yend size=N part=P pcrc32=XXXXXXXX [crc32=XXXXXXXX on the last part]
//
// with "\n" line ends. Every byte is written as byte+42; NUL, LF, CR and
// "=" are escaped ("=" then byte+42+64), and so are TAB and SPACE at the
// start or end of a line, which transports may strip. A "." at the start
// of a line is left as it is, as many posters leave it: the NNTP layer
// dot-stuffs it (inntest.Post does), so tests exercise that too.
package yenctest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
)

// Part is one article of a yEnc post.
type Part struct {
	Number, Total int
	Begin, End    int64  // the part's bytes in the file, 1-based and inclusive
	Data          []byte // the part's bytes
	Body          []byte // the article body, encoded
}

// DefaultLine is the line length posters use.
const DefaultLine = 128

// Encode splits data into parts of partSize bytes (the last one shorter)
// and encodes each as a yEnc part of the file name, with lines of line
// encoded characters (0: DefaultLine). An empty file is one empty part.
func Encode(name string, data []byte, partSize, line int) []Part {
	if partSize < 1 {
		partSize = len(data)
	}
	if line < 1 {
		line = DefaultLine
	}
	total := max(1, (len(data)+partSize-1)/partSize)
	crc := crc32.ChecksumIEEE(data)
	parts := make([]Part, 0, total)
	for i := range total {
		begin := i * partSize
		end := min(begin+partSize, len(data))
		chunk := data[begin:end]
		p := Part{Number: i + 1, Total: total, Begin: int64(begin) + 1, End: int64(end), Data: chunk}
		var b bytes.Buffer
		fmt.Fprintf(&b, "=ybegin part=%d total=%d line=%d size=%d name=%s\n", p.Number, total, line, len(data), name)
		fmt.Fprintf(&b, "=ypart begin=%d end=%d\n", p.Begin, p.End)
		encodeLines(&b, chunk, line)
		fmt.Fprintf(&b, "=yend size=%d part=%d pcrc32=%08x", len(chunk), p.Number, crc32.ChecksumIEEE(chunk))
		if p.Number == total {
			fmt.Fprintf(&b, " crc32=%08x", crc)
		}
		b.WriteByte('\n')
		p.Body = b.Bytes()
		parts = append(parts, p)
	}
	return parts
}

// encodeLines writes data encoded, in lines of about line characters.
func encodeLines(b *bytes.Buffer, data []byte, line int) {
	col := 0
	for i, c := range data {
		e := c + 42
		last := i == len(data)-1 || col+1 >= line
		switch {
		case e == 0, e == '\n', e == '\r', e == '=':
			b.WriteByte('=')
			e += 64
			col++
		case (e == '\t' || e == ' ') && (col == 0 || last):
			b.WriteByte('=')
			e += 64
			col++
		}
		b.WriteByte(e)
		col++
		if col >= line && i < len(data)-1 {
			b.WriteByte('\n')
			col = 0
		}
	}
	if col > 0 {
		b.WriteByte('\n')
	}
}

// Decoded is a part as Decode reads it.
type Decoded struct {
	Name          string
	Part, Total   int
	Size          int64 // the whole file's size
	Begin, End    int64
	Data          []byte
	PCRC32, CRC32 uint32 // as the =yend line says; CRC32 is 0 when absent
}

// ErrCorrupt means a body is not a well-formed yEnc part, or its data does
// not match its size or checksum.
var ErrCorrupt = errors.New("yenctest: corrupt yEnc part")

// Decode decodes one part's body (with "\n" or "\r\n" line ends, not
// dot-stuffed) and checks its size and pcrc32.
func Decode(body []byte) (Decoded, error) {
	var d Decoded
	var data bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	state := 0 // 0: before =ybegin, 1: data, 2: after =yend
	var partSize int64 = -1
	for sc.Scan() {
		l := strings.TrimSuffix(sc.Text(), "\r")
		switch {
		case strings.HasPrefix(l, "=ybegin "):
			kv, name := fields(l[len("=ybegin "):])
			d.Name = name
			d.Part, _ = strconv.Atoi(kv["part"])
			d.Total, _ = strconv.Atoi(kv["total"])
			d.Size, _ = strconv.ParseInt(kv["size"], 10, 64)
			state = 1
		case strings.HasPrefix(l, "=ypart ") && state == 1:
			kv, _ := fields(l[len("=ypart "):])
			d.Begin, _ = strconv.ParseInt(kv["begin"], 10, 64)
			d.End, _ = strconv.ParseInt(kv["end"], 10, 64)
		case strings.HasPrefix(l, "=yend") && state == 1:
			kv, _ := fields(strings.TrimPrefix(l, "=yend"))
			partSize, _ = strconv.ParseInt(kv["size"], 10, 64)
			if v, err := strconv.ParseUint(kv["pcrc32"], 16, 32); err == nil {
				d.PCRC32 = uint32(v)
			}
			if v, err := strconv.ParseUint(kv["crc32"], 16, 32); err == nil {
				d.CRC32 = uint32(v)
			}
			state = 2
		case state == 1:
			for i := 0; i < len(l); i++ {
				c := l[i]
				if c == '=' {
					i++
					if i == len(l) {
						return d, fmt.Errorf("%w: a line ends in an escape", ErrCorrupt)
					}
					c = l[i] - 64
				}
				data.WriteByte(c - 42)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return d, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if state != 2 {
		return d, fmt.Errorf("%w: no =ybegin and =yend", ErrCorrupt)
	}
	d.Data = data.Bytes()
	switch {
	case int64(len(d.Data)) != partSize:
		return d, fmt.Errorf("%w: %d bytes, =yend says %d", ErrCorrupt, len(d.Data), partSize)
	case crc32.ChecksumIEEE(d.Data) != d.PCRC32:
		return d, fmt.Errorf("%w: pcrc32 %08x, the data's is %08x", ErrCorrupt, d.PCRC32, crc32.ChecksumIEEE(d.Data))
	case d.Begin > 0 && d.End-d.Begin+1 != int64(len(d.Data)):
		return d, fmt.Errorf("%w: begin %d end %d for %d bytes", ErrCorrupt, d.Begin, d.End, len(d.Data))
	}
	return d, nil
}

// fields reads "k=v k=v name=rest of line": name is everything after
// "name=", spaces included.
func fields(s string) (map[string]string, string) {
	kv := map[string]string{}
	name := ""
	if i := strings.Index(s, "name="); i >= 0 {
		name = s[i+len("name="):]
		s = s[:i]
	}
	for _, f := range strings.Fields(s) {
		k, v, _ := strings.Cut(f, "=")
		kv[k] = v
	}
	return kv, name
}

// Join decodes every part of a post, in any order, and returns the file
// they make, checking the whole file's size and crc32.
func Join(bodies [][]byte) (name string, data []byte, err error) {
	var size int64 = -1
	var crc uint32
	var out []byte
	for i, b := range bodies {
		d, err := Decode(b)
		if err != nil {
			return "", nil, fmt.Errorf("part %d: %w", i+1, err)
		}
		if size < 0 {
			size, name = d.Size, d.Name
			out = make([]byte, size)
		}
		if d.Begin < 1 || d.End > size {
			return "", nil, fmt.Errorf("%w: part %d: %d-%d outside 1-%d", ErrCorrupt, d.Part, d.Begin, d.End, size)
		}
		copy(out[d.Begin-1:], d.Data)
		if d.CRC32 != 0 {
			crc = d.CRC32
		}
	}
	if crc != 0 && crc32.ChecksumIEEE(out) != crc {
		return name, out, fmt.Errorf("%w: crc32 %08x, the file's is %08x", ErrCorrupt, crc, crc32.ChecksumIEEE(out))
	}
	return name, out, nil
}
