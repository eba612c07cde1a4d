package sqlstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/edgeindex/edgeindex/lease"
)

// Reconnect waits of ListenChunks' connection: the first wait after it is
// lost, doubled up to the most.
const (
	listenMinReconnect = 200 * time.Millisecond
	listenMaxReconnect = 5 * time.Second
)

// chunkChannel is the PostgreSQL channel of chunk notifications: one per
// schema, so that coordinators of other schemas in the same database (a
// test's, another deployment's) hear none of them. It is at most 63 bytes,
// an identifier's most.
func chunkChannel(schema string) string {
	const base = "edgeindex_chunk"
	if schema == "" || schema == "public" {
		return base
	}
	if c := base + "." + schema; len(c) <= 63 {
		return c
	}
	sum := sha256.Sum256([]byte(schema))
	return base + "." + hex.EncodeToString(sum[:16])
}

// chunkNote is a notification's payload: "<range> <from> <to>".
func chunkNote(rangeID int64, span lease.Span) string {
	return fmt.Sprintf("%d %d %d", rangeID, span.From, span.To)
}

// parseChunkNote reads a payload chunkNote made.
func parseChunkNote(s string) (int64, lease.Span, bool) {
	f := strings.Fields(s)
	if len(f) != 3 {
		return 0, lease.Span{}, false
	}
	var n [3]int64
	for i := range f {
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, lease.Span{}, false
		}
		n[i] = v
	}
	span := lease.Span{From: n[1], To: n[2]}
	return n[0], span, span.From >= 0 && span.From <= span.To
}

// ListenChunks hears, until ctx ends, the chunks that the coordinators
// sharing the database mark fetched (ChunkFetched notifies them on
// PostgreSQL, in its transaction, so a chunk is heard of once it is
// stored), its own included, and calls stored for each, in one goroutine.
// missed is called when notifications may have been lost (the connection
// was lost, and is made again by itself): the caller then looks at its
// chunks again. It returns ctx's error once ctx ends, after its connection
// is closed.
//
// On SQLite, which only processes on one machine share, it returns nil at
// once: there is nothing to listen to.
func (s *Store) ListenChunks(ctx context.Context, stored func(rangeID int64, span lease.Span), missed func()) error {
	if s.channel == "" {
		return nil
	}
	return s.listenChunks(ctx, listenPing, stored, missed)
}

// listenChunks is ListenChunks with ping for listenPing.
func (s *Store) listenChunks(ctx context.Context, ping time.Duration, stored func(rangeID int64, span lease.Span), missed func()) error {
	wait := listenMinReconnect
	for connected := false; ; {
		if conn, err := s.listenConn(ctx, ping); err == nil {
			if connected { // a new connection: what came meanwhile is lost
				missed()
			}
			connected, wait = true, listenMinReconnect
			hear(ctx, conn, ping, stored)
			closeWithin(conn, ping)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, listenMaxReconnect)
	}
}

// listenPing is how long a listening connection waits for a notification
// before it makes sure, with a ping, that its server is still there: a
// connection lost without a word (a machine gone) is found within it. It
// bounds the connection's start, its LISTEN and each ping too: a server
// that takes the connection and never answers is left for another try.
const listenPing = 30 * time.Second

// listenConn opens a connection of its own to the database and listens on
// the store's channel, within ping.
func (s *Store) listenConn(ctx context.Context, ping time.Duration) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, ping)
	defer cancel()
	conn, err := pgx.Connect(ctx, pgxURL(s.url))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: listen: %w", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.channel}.Sanitize()); err != nil {
		closeWithin(conn, ping)
		return nil, fmt.Errorf("sqlstore: listen: %w", err)
	}
	return conn, nil
}

// closeWithin closes conn, waiting at most d on a server that does not
// read its goodbye.
func closeWithin(conn *pgx.Conn, d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	conn.Close(ctx)
}

// hear calls stored for every chunk notified on conn until ctx ends or
// the connection fails, pinging its server after ping of silence.
func hear(ctx context.Context, conn *pgx.Conn, ping time.Duration, stored func(rangeID int64, span lease.Span)) {
	for {
		wait, cancel := context.WithTimeout(ctx, ping)
		n, err := conn.WaitForNotification(wait)
		cancel()
		switch {
		case err == nil:
			if id, span, ok := parseChunkNote(n.Payload); ok {
				stored(id, span)
			}
		case ctx.Err() != nil:
			return
		case errors.Is(err, context.DeadlineExceeded) && !conn.IsClosed():
			pctx, cancel := context.WithTimeout(ctx, ping)
			err = conn.Ping(pctx)
			cancel()
			if err != nil {
				return
			}
		default:
			return
		}
	}
}
