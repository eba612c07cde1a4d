package nntp

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/sources"
)

// DefaultMaxBodyBytes bounds an article body Body reads when
// Config.MaxBodyBytes is 0: past a yEnc segment (700 KB decoded, about
// 730 KB on the wire), short of what would let one article hold much.
const DefaultMaxBodyBytes = 4 << 20

// ErrNoSuchArticle means the server has no article of the message-id
// asked (430): expired, or never there.
var ErrNoSuchArticle = fmt.Errorf("nntp: %w", edgeindex.ErrNotFound)

// maxMessageID is the longest message-id RFC 3977 allows, brackets
// included.
const maxMessageID = 250

// checkMessageID refuses a message-id that could not be sent as one
// command argument: no brackets, spaces, line ends, or too long.
func checkMessageID(id string) error {
	if len(id) < 3 || len(id) > maxMessageID || id[0] != '<' || id[len(id)-1] != '>' ||
		strings.ContainsAny(id, " \t\r\n\x00") || strings.Count(id, ">") != 1 {
		return edgeindex.Invalidf("message-id %q: want <...> of at most %d bytes, without spaces", id, maxMessageID)
	}
	return nil
}

// Body returns the body of the article messageID ("<...>"), its lines
// dot-unstuffed and ended by "\n", bytes as sent: what a yEnc decoder
// reads. It is a fetch: it waits behind GROUP for a connection, holds one
// of the MaxConns-1 a fetch may, and at most Config.BodyConns bodies are
// read at once, so header fetches always keep the rest. The body may be
// at most Config.MaxBodyBytes (ErrTooLarge past it, the connection
// dropped), and must arrive within Timeout plus its bytes at MinRate
// (ErrDeadline). An article the server does not have is
// ErrNoSuchArticle. Body calls sources.Ready once it holds a connection.
func (s *Source) Body(ctx context.Context, messageID string) ([]byte, error) {
	if err := checkMessageID(messageID); err != nil {
		return nil, err
	}
	select {
	case s.bodies <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("nntp: body %s: waiting for a body's share: %w", messageID, ctx.Err())
	}
	defer func() { <-s.bodies }()
	if err := s.pool.reserve(ctx); err != nil {
		return nil, fmt.Errorf("nntp: body %s: %w", messageID, err)
	}
	defer s.pool.unreserve()
	start := time.Now()
	within := s.cfg.Timeout + time.Duration(float64(s.cfg.MaxBodyBytes)/float64(s.cfg.MinRate)*float64(time.Second))
	var out []byte
	var read int64
	err := s.withConn(ctx, true, within, s.cfg.MaxBodyBytes+readBufSize, func(c *conn) error {
		defer func() { read = c.read }()
		if err := sources.Ready(ctx); err != nil {
			return err
		}
		code, text, err := c.cmd("BODY", "BODY "+messageID)
		if err != nil {
			return err
		}
		switch code {
		case 222:
			// "222 n <message-id>": a server that names another article
			// is out of step with its client (or confused): its body
			// would be taken for this one's.
			if f := strings.Fields(text); len(f) >= 2 && strings.HasPrefix(f[1], "<") && f[1] != messageID {
				c.broken = true
				return fmt.Errorf("%w: BODY %s answered for %s", ErrProtocol, messageID, f[1])
			}
		case 430:
			return fmt.Errorf("%w: %s", ErrNoSuchArticle, text)
		default:
			return c.replyErr("BODY", code, text, nil)
		}
		out = make([]byte, 0, 64<<10)
		c.lim = blockLimits{line: 64 << 10, total: s.cfg.MaxBodyBytes, refuse: true}
		defer func() { c.lim = blockLimits{} }()
		if err := c.readBody(text, func(line []byte) error {
			out = append(append(out, line...), '\n')
			return nil
		}); err != nil {
			c.broken = true
			return err
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("nntp: body %s (elapsed %s, %d bytes read): %w", messageID,
			time.Since(start).Round(time.Millisecond), read, err)
	}
	s.bodiesRead.Add(1)
	return out, nil
}
