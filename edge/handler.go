package edge

import (
	"context"

	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/lease"
)

// Chunk is one chunk of a held range, as the coordinator streamed it.
type Chunk struct {
	Range lease.Range
	// From and To are the articles the batch for this chunk covers: From is
	// the range's next when the chunk holds it, so lines below From were
	// handled by an earlier holder and are to be skipped.
	From, To int64
	// Ordered is true when the range came through a group lane: the
	// handler's window carries on to the lane's next range, through the
	// lane's snapshots. On a plain range nothing carries over its end.
	Ordered bool
	// Replay is true when the batch of [From, To] was stored already, by an
	// earlier holder of the lane: the chunk is handed again only to rebuild
	// the window (see Windowed), and the Output is dropped, not posted. It
	// is set only for a Windowed handler on an ordered lane.
	Replay bool
	// Data is the gzip of the chunk's overview lines, as stored: it may
	// start before From. overview.ReadChunk reads it. It is valid only until
	// HandleChunk returns: copy it to keep it.
	Data []byte
}

// Output is what a handler found in one chunk: the items to post, how many
// overview lines it read, and which articles of [Chunk.From, Chunk.To] the
// chunk did not hold.
type Output struct {
	Items   []batch.Item
	Headers int64
	// Missing lists, ascending, the article numbers of [Chunk.From,
	// Chunk.To] that had no line in the chunk; MissingFrom computes it.
	// The coordinator fetches them again later as repair ranges. Leave it
	// empty to opt out of repair.
	Missing []int64
}

// MissingFrom returns the numbers of [from, to] that are not in present,
// which must ascend. It is what Output.Missing holds.
func MissingFrom(from, to int64, present []int64) []int64 {
	var out []int64
	n := from
	for _, p := range present {
		if p < n || p > to {
			continue
		}
		for ; n < p; n++ {
			out = append(out, n)
		}
		n = p + 1
	}
	for ; n <= to; n++ {
		out = append(out, n)
	}
	return out
}

// Handler is what a user implements: chunks in, items per batch out. The
// client posts each Output as the batch [Chunk.From, Chunk.To]. An error
// wrapping overview.ErrBadChunk reports the chunk corrupt, so it is fetched
// again; any other error releases the range.
type Handler interface {
	HandleChunk(ctx context.Context, c Chunk) (Output, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, c Chunk) (Output, error)

// HandleChunk calls f.
func (f HandlerFunc) HandleChunk(ctx context.Context, c Chunk) (Output, error) { return f(ctx, c) }

// Windowed is a Handler that carries state from range to range of an
// ordered group's lane, such as binaries whose parts straddle two ranges.
// The client saves the window as the lane's snapshot after each finished
// range (and before giving back a range it stops in the middle of), and
// loads it when it is granted a lane. When the snapshot is behind the range's
// next, because its last holder died in the middle of it, the client hands
// the chunks between the two to HandleChunk again, with Chunk.Replay set,
// before going on: the window must depend only on the chunks handed to it,
// in order, for the new holder's to be the one the last holder had.
type Windowed interface {
	Handler
	// SaveWindow returns the window state; the client gzips it.
	SaveWindow() ([]byte, error)
	// LoadWindow replaces the window state; nil means start empty.
	LoadWindow(state []byte) error
}
