package nntptest

import (
	"bufio"
	"bytes"
	"compress/flate"
	"io"
	"strings"
	"sync"
)

// deflater is a session's side of COMPRESS DEFLATE: the compressor, and
// where its output goes.
type deflater struct {
	under  *bufio.Writer // the session's writer before COMPRESS
	fw     *flate.Writer
	target io.Writer // under, or a buffer while the stream is being broken
}

func (z *deflater) Write(p []byte) (int, error) { return z.target.Write(p) }

// syncFlusher is what the session's writer writes to once deflated: each
// of its flushes (one a reply, at the least) is deflated, sync-flushed and
// sent, so the client can inflate the reply whole at once.
type syncFlusher struct{ z *deflater }

func (s syncFlusher) Write(p []byte) (int, error) {
	n, err := s.z.fw.Write(p)
	if err == nil {
		err = s.z.fw.Flush()
	}
	if err == nil {
		err = s.z.under.Flush()
	}
	return n, err
}

// compressDeflate answers COMPRESS as RFC 8054 says, or as
// Config.DeflateReply says; false ends the session.
func (ss *session) compressDeflate(cfg Config, f []string) bool {
	switch {
	case !cfg.Deflate:
		ss.reply(500, "unknown command")
	case len(f) != 2:
		ss.reply(501, "COMPRESS algorithm")
	case !strings.EqualFold(f[1], "DEFLATE"):
		ss.reply(503, "compression algorithm not supported")
	case ss.z != nil:
		ss.reply(502, "compression already active")
	case cfg.DeflateReply != 0:
		ss.reply(cfg.DeflateReply, "unable to activate compression")
	default:
		ss.reply(206, "compression active")
		if ss.w.Flush() != nil {
			return false
		}
		z := &deflater{under: ss.w}
		z.target = z.under
		fw, err := flate.NewWriter(z, flate.DefaultCompression)
		if err != nil {
			panic(err) // a valid level
		}
		z.fw = fw
		ss.z = z
		ss.w = bufio.NewWriterSize(syncFlusher{z}, 64<<10)
		// The client sends nothing before the 206, so ss.r holds nothing
		// plain; the inflater reads through it all the same.
		ss.r = bufio.NewReader(flate.NewReader(ss.r))
	}
	return true
}

// breakDeflate breaks the stream (Config.DeflateBreak): the first half of
// what is not yet sent, or all of it and a corrupt block header; false ends
// the session.
func (ss *session) breakDeflate(corrupt bool) bool {
	z := ss.z
	var buf bytes.Buffer
	z.target = &buf
	err := ss.w.Flush()
	z.target = z.under
	if err != nil {
		return false
	}
	b := buf.Bytes()
	if corrupt {
		// After a sync flush the stream is on a byte boundary: BFINAL 0,
		// then BTYPE 11, the reserved type.
		b = append(b, 0x06)
	} else {
		b = b[:len(b)/2]
	}
	z.under.Write(b)
	z.under.Flush()
	return false
}

// bombUnit is what one bomb piece inflates to.
const bombUnit = 1 << 20

var bombOnce = sync.OnceValue(func() []byte {
	var buf bytes.Buffer
	fw, err := flate.NewWriter(&buf, flate.BestCompression)
	if err != nil {
		panic(err)
	}
	fw.Write(bytes.Repeat([]byte("x"), bombUnit))
	// A sync flush, not Close: the piece ends on a byte boundary with no
	// final block, and refers to nothing before it, so it can follow
	// itself in the stream again and again.
	fw.Flush()
	return buf.Bytes()
})

// bomb answers an OVER with n inflated bytes of "x" (Config.DeflateBomb);
// false ends the session.
func (ss *session) bomb(n int64) bool {
	// The 224 line, sync-flushed: the stream is on a byte boundary.
	if ss.w.Flush() != nil {
		return false
	}
	piece := bombOnce()
	for sent := int64(0); sent < n; sent += bombUnit {
		if ss.closing() {
			return false
		}
		if _, err := ss.z.under.Write(piece); err != nil {
			return false
		}
	}
	ss.z.under.Flush()
	return false
}
