package nntp

import (
	"bufio"
	"compress/flate"
	"errors"
	"fmt"
	"io"
	"net/textproto"

	"github.com/edgeindex/edgeindex/internal/inflate"
)

// negotiateCompression asks for the compression Config.Compress says, once
// the connection has logged in: RFC 8054 allows COMPRESS before or after
// AUTHINFO, and after it the credentials never pass through the
// compressor, where their length could leak.
func (c *conn) negotiateCompression() error {
	mode := c.cfg.Compress
	if mode == CompressNone {
		return nil
	}
	offered := c.caps.HasArg("COMPRESS", "DEFLATE")
	if mode == CompressDeflate && !offered {
		return fmt.Errorf("nntp: %s: %w: the server does not list it", c.cfg.Addr, ErrCompressUnavailable)
	}
	if offered && mode != CompressGzip {
		code, text, err := c.cmd("COMPRESS", "COMPRESS DEFLATE")
		if err != nil {
			return err
		}
		if code == 206 {
			c.startDeflate()
			return nil
		}
		if mode == CompressDeflate {
			return c.replyErr("COMPRESS", code, text, ErrCompressUnavailable)
		}
		// Refused (403, 502, 480...): the connection is as it was.
	}
	if mode == CompressGzip || c.caps.HasArg("XFEATURE-COMPRESS", "GZIP") {
		code, _, err := c.cmd("XFEATURE", "XFEATURE COMPRESS GZIP")
		if err != nil {
			return err
		}
		c.compress = code == 290
	}
	return nil
}

// startDeflate turns COMPRESS DEFLATE on after its 206: everything the
// server sends from here is one raw deflate stream, and so is everything
// the client sends, each command ending in a sync flush so the server can
// inflate it at once.
//
// The inflater is internal/inflate, compress/flate's decompressor changed
// to hand on each block's data as the block ends: INN's nnrpd ends each
// reply with zlib's Z_PARTIAL_FLUSH (an empty fixed-code block, not the
// empty stored block of a sync flush), and compress/flate hands on a
// block's data only at a stored block, a full window or the end, so it
// would wait for the stream's next bytes, which the server sends only
// after the next command. The inflater reads through the read buffer the 206
// came from (it may hold the first compressed bytes already), which reads
// the socket through deadlineConn: every read keeps its deadline, and
// MaxFetchBytes and the line bounds apply to the inflated text, read from
// a buffer of readBufSize, so no reply, however well it inflates, is held
// whole.
func (c *conn) startDeflate() {
	c.r = bufio.NewReaderSize(&inflater{r: inflate.NewReader(c.r)}, readBufSize)
	c.tp = textproto.NewReader(c.r)
	fw, err := flate.NewWriter(c.rw, flate.BestSpeed)
	if err != nil {
		panic(err) // BestSpeed is a valid level
	}
	c.w = bufio.NewWriterSize(syncFlusher{fw}, 4096)
	c.deflate = true
}

// Compression is what a connection negotiated.
func (c *conn) compression() CompressMode {
	switch {
	case c.deflate:
		return CompressDeflate
	case c.compress:
		return CompressGzip
	}
	return CompressNone
}

// syncFlusher deflates what the connection's write buffer hands it and
// sync-flushes after each write: the buffer is flushed once a command, so
// each command reaches the server whole, ending on a byte boundary.
type syncFlusher struct{ fw *flate.Writer }

func (s syncFlusher) Write(p []byte) (int, error) {
	n, err := s.fw.Write(p)
	if err == nil {
		err = s.fw.Flush()
	}
	return n, err
}

// inflater is the flate reader of a deflated connection, its errors made
// plain: a corrupt stream is ErrProtocol, and one cut short (the
// connection closed between or inside blocks, before a final one) says so.
// flate's errors stick, so a broken stream fails every later read too.
type inflater struct{ r io.Reader }

func (f *inflater) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	var corrupt inflate.CorruptInputError
	var internal inflate.InternalError
	switch {
	case err == nil, err == io.EOF:
	case errors.As(err, &corrupt), errors.As(err, &internal):
		err = fmt.Errorf("%w: corrupt deflate stream: %w", ErrProtocol, err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		err = fmt.Errorf("the deflate stream was cut: %w", err)
	}
	return n, err
}

// seen counts the compression of a connection the first time the Source
// uses it.
func (s *Source) seen(c *conn) {
	if c.counted {
		return
	}
	c.counted = true
	switch c.compression() {
	case CompressDeflate:
		s.deflated.Add(1)
	case CompressGzip:
		s.gzipped.Add(1)
	}
}
