package coordinator

import (
	"cmp"
	"log/slog"
	"reflect"
	"time"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/blobstore"
	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/corpus"
	"github.com/edgeindex/edgeindex/spool"
)

// Defaults of Config.
const (
	DefaultLeaseTTL    = 60 * time.Second
	DefaultMaxBody     = 64 << 20
	DefaultMaxSnapshot = 64 << 20
	// DefaultWriteTimeout bounds one write to a client.
	DefaultWriteTimeout = 30 * time.Second
)

// Config configures a Service, and the Server over it (NewServer takes
// the Service's): the HTTP layer's fields come last. Store, Spool and
// Snapshots are required; the zero value of every other field means its
// default.
type Config struct {
	Store Store
	Spool spool.Store
	// Corpus holds capture ranges' chunks; nil: they stay in the spool.
	Corpus corpus.Store
	// Snapshots holds the lanes' snapshot blobs: blobstore.OpenDir of a
	// directory of this coordinator's, or the snapshots part of a bucket
	// the coordinators share (blobstore.Sub). Names in it are
	// <group id>-<lane>-<next>-<token>-<random>.gz; ResetSnapshot deletes
	// there too.
	Snapshots blobstore.Store
	// Shared, when set, is Spool again when it is in storage the
	// coordinators share (a *spool.Bucket): ChunkStored and ChunksMissed
	// tell it of the chunks others store. Nil: the spool is this
	// coordinator's own.
	Shared SharedSpool
	// Prefetcher, when set, is kicked when a range is leased or a chunk
	// dropped, and tells streams when a chunk arrives. Nil (or a nil
	// *prefetch.Prefetcher): none.
	Prefetcher Prefetch
	// LeaseTTL is the TTL of every grant. Default 60s.
	LeaseTTL time.Duration
	// MaxSnapshot caps a snapshot upload (ErrTooLarge above it). Default
	// 64 MiB.
	MaxSnapshot int64
	// Keepalive and WaitLimit tune streams (StreamConfig); defaults 20s and 1h.
	Keepalive, WaitLimit time.Duration
	Logger               *slog.Logger
	// Metrics, when set, counts what the coordinator does. See NewMetrics.
	Metrics *Metrics
	// Clock tells the time a fleet view is read at (api.Fleet.At, which
	// dashboards compare with the store's expiries: give it the store's
	// clock when one is injected there) and times streams. Nil means
	// clock.Real.
	Clock clock.Clock

	// The fields below are the HTTP layer's (the Server's): the Service
	// never reads them.

	// AdminToken guards the admin API; empty: the admin API answers 401.
	AdminToken string
	// MaxBody caps a batch body (413 above it). Default 64 MiB.
	MaxBody int64
	// MaxBatchBytes bounds the bytes of batch bodies decoded and stored at
	// once (a body of unknown length counts its bytes as they arrive, so a
	// stalled one holds what it sent); a batch with no room gets 503 busy
	// with Retry-After. Decoding takes a few times a
	// body's size in memory, so this bounds the memory batches take. At
	// least MaxBody; default 2 × MaxBody.
	MaxBatchBytes int64
	// WriteTimeout bounds each write to a client: a piece of a stream or of
	// a snapshot (256 KiB), or a JSON answer. A worker that stops reading
	// loses its stream after it. Default 30s.
	WriteTimeout time.Duration
}

// withDefaults returns c with every zero field that has a default set to it.
func (c Config) withDefaults() Config {
	c.LeaseTTL = cmp.Or(c.LeaseTTL, DefaultLeaseTTL)
	c.MaxBody = cmp.Or(c.MaxBody, DefaultMaxBody)
	c.MaxSnapshot = cmp.Or(c.MaxSnapshot, DefaultMaxSnapshot)
	if c.MaxBatchBytes == 0 && c.MaxBody > 0 {
		c.MaxBatchBytes = 2 * c.MaxBody
	}
	c.WriteTimeout = cmp.Or(c.WriteTimeout, DefaultWriteTimeout)
	if c.Prefetcher != nil && nilPointer(c.Prefetcher) {
		c.Prefetcher = nil // a nil *prefetch.Prefetcher, say: none
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = clock.Real
	}
	return c
}

// validate checks a Config that has its defaults.
func (c Config) validate() error {
	if c.Store == nil || c.Spool == nil || c.Snapshots == nil {
		return edgeindex.Invalidf("coordinator: Store, Spool and Snapshots are required")
	}
	if c.LeaseTTL < time.Second || c.MaxBody < 1 || c.MaxSnapshot < 1 || c.MaxBatchBytes < c.MaxBody || c.WriteTimeout < 0 {
		return edgeindex.Invalidf("coordinator: LeaseTTL must be at least 1s, MaxBody and MaxSnapshot at least 1, MaxBatchBytes at least MaxBody, WriteTimeout not negative")
	}
	return nil
}

// nilPointer reports whether v holds a nil pointer: a typed nil, which is
// a non-nil interface.
func nilPointer(v any) bool {
	r := reflect.ValueOf(v)
	return r.Kind() == reflect.Pointer && r.IsNil()
}
