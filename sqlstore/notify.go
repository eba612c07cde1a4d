package sqlstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lib/pq"

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
	l := pq.NewListener(s.url, listenMinReconnect, listenMaxReconnect, nil)
	defer func() {
		l.Close()
		for range l.Notify { // until its goroutine has ended
		}
	}()
	stop := context.AfterFunc(ctx, func() { l.Close() }) // Listen waits for a connection
	defer stop()
	if err := l.Listen(s.channel); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("sqlstore: listen: %w", err)
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case n, ok := <-l.Notify:
			switch {
			case !ok:
				return ctx.Err()
			case n == nil: // a new connection: what came meanwhile is lost
				missed()
			default:
				if id, span, ok := parseChunkNote(n.Extra); ok {
					stored(id, span)
				}
			}
		}
	}
}
