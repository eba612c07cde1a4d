package nntp

import (
	"errors"
	"fmt"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/overview"
	"github.com/edgeindex/edgeindex/sources"
)

var (
	// ErrBadURL means a source URL, or a Config, could not be used; the
	// error says why in one sentence. It is edgeindex.ErrInvalid too, the one
	// sentinel of configuration errors, under errors.Is.
	ErrBadURL error = invalidSentinel("bad NNTP URL")
	// ErrRefused means the server refused service in its greeting (400,
	// service temporarily unavailable, or 502, permanently unavailable).
	ErrRefused = errors.New("server refused the connection")
	// ErrAuthFailed means the server rejected the credentials: 481
	// (rejected), 482 (out of sequence) or 502 (not permitted) to AUTHINFO.
	ErrAuthFailed = errors.New("authentication failed")
	// ErrAuthRequired means the server asked for authentication (480) and
	// no credentials were configured, or it asked again after they were
	// accepted.
	ErrAuthRequired = errors.New("authentication required")
	// ErrEncryptionRequired means the server demands TLS (483).
	ErrEncryptionRequired = errors.New("encryption required")
	// ErrTLSUnavailable means Config required STARTTLS and the server does
	// not offer it, or refused it.
	ErrTLSUnavailable = errors.New("STARTTLS unavailable")
	// ErrCompressUnavailable means Config required COMPRESS DEFLATE
	// (CompressDeflate) and the server does not list it, or refused it.
	ErrCompressUnavailable = errors.New("COMPRESS DEFLATE unavailable")
	// ErrNoSuchGroup means the server does not carry the group (411). It
	// wraps sources.ErrNoSuchGroup, so errors.Is matches either.
	ErrNoSuchGroup = fmt.Errorf("nntp: %w", sources.ErrNoSuchGroup)
	// ErrProtocol means the server sent something that does not follow the
	// protocol (a malformed status line, a GROUP reply with garbage numbers,
	// a line too long, a response that does not end). The connection is
	// dropped.
	ErrProtocol = errors.New("NNTP protocol error")
	// ErrDeadline means a fetch's whole response did not arrive
	// within its deadline (Config.MinRate), or a handshake or command
	// within Config.Timeout, however steadily the server sent bytes. The
	// connection is dropped.
	ErrDeadline = errors.New("response deadline passed")
	// ErrTooLarge means a response passed a byte bound: a fetch read more
	// than Config.MaxFetchBytes, its chunk would be bigger than
	// Config.MaxChunkBytes, or a reply that is not overview data (the
	// CAPABILITIES list) passed its line or total bound. The connection is
	// dropped.
	ErrTooLarge = errors.New("response too large")
	// ErrChunkTooLarge means a fetch passed its byte bound or its chunk
	// bound (Config.MaxFetchBytes, Config.MaxChunkBytes): the span makes no
	// chunk a worker can take. It matches ErrTooLarge and
	// overview.ErrBadChunk under errors.Is, so the range counts a corrupt
	// attempt (prefetch.Prefetcher) rather than being fetched forever. A
	// bound passed while dialling (CAPABILITIES) is ErrTooLarge alone: it
	// says nothing of the span.
	ErrChunkTooLarge error = chunkTooLarge("the span makes no chunk a worker can take")
	// ErrClosed means the Source was closed.
	ErrClosed = errors.New("nntp source closed")
)

// ProtocolError is an unexpected reply: the command's verb (never its
// arguments, so no password), the code, and the server's text. It unwraps
// to the sentinel the code maps to (ErrNoSuchGroup for 411,
// ErrAuthRequired for 480, ErrEncryptionRequired for 483, ErrAuthFailed
// for a rejected AUTHINFO, ErrRefused for a refusing greeting), or to
// nothing for other codes.
type ProtocolError struct {
	Cmd  string // "GROUP", "OVER", "AUTHINFO", the greeting is "connect"
	Code int
	Text string
	Err  error // the sentinel, or nil
}

func (e *ProtocolError) Error() string {
	what := "unexpected reply"
	if e.Err != nil {
		what = e.Err.Error()
	}
	return fmt.Sprintf("nntp: %s: %s: server said %d %s", e.Cmd, what, e.Code, clip(e.Text))
}

func (e *ProtocolError) Unwrap() error { return e.Err }

// chunkTooLarge is a sentinel that matches ErrTooLarge and
// overview.ErrBadChunk as well as itself.
type chunkTooLarge string

func (e chunkTooLarge) Error() string { return string(e) }
func (e chunkTooLarge) Is(target error) bool {
	return target == ErrTooLarge || target == overview.ErrBadChunk
}

// invalidSentinel is a sentinel that matches edgeindex.ErrInvalid as well as
// itself.
type invalidSentinel string

func (e invalidSentinel) Error() string        { return string(e) }
func (e invalidSentinel) Is(target error) bool { return target == edgeindex.ErrInvalid }
