package nntp

import (
	"bufio"
	"errors"
	"fmt"
	"io"

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
// the client sends: each command as stored (uncompressed) blocks ending in
// an empty one, as a sync flush does, so the server can inflate it at once.
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
	c.w = bufio.NewWriterSize(storedBlocks{c.rw}, 4096)
	c.deflate = true
}

// storedBlocks writes each flush of the command buffer as non-final
// stored deflate blocks: valid deflate that a server inflates like any
// other, with no compressor state. Commands are a few dozen bytes, and
// flate.NewWriter would hold some 1.3 MB a pooled connection to compress
// them. The flush ends with an empty stored block, as a sync flush does:
// inflaters such as compress/flate hand on a stored block's data only
// then. It is one Write of the socket, so a command goes out whole.
type storedBlocks struct{ w io.Writer }

func (s storedBlocks) Write(p []byte) (int, error) {
	const maxStored = 0xffff // a stored block's LEN is 16 bits
	b := make([]byte, 0, len(p)+5*(len(p)/maxStored+2))
	for rest := p; len(rest) > 0; {
		k := min(len(rest), maxStored)
		// BFINAL 0, BTYPE 00 (stored), padded to the byte; LEN, NLEN.
		b = append(b, 0, byte(k), byte(k>>8), ^byte(k), ^byte(k>>8))
		b, rest = append(b, rest[:k]...), rest[k:]
	}
	b = append(b, 0, 0, 0, 0xff, 0xff)
	if _, err := s.w.Write(b); err != nil {
		return 0, err
	}
	return len(p), nil
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
	switch {
	case c.deflate:
		s.deflated.Add(1)
	case c.compress:
		s.gzipped.Add(1)
	}
}
