package coordinator

import (
	"context"
	"log/slog"
	"time"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/batch"
	"github.com/edgeindex/edgeindex/blobstore"
	"github.com/edgeindex/edgeindex/clock"
	"github.com/edgeindex/edgeindex/corpus"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/node"
	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/spool"
)

// Store is every store the Service uses, in one value: sqlstore.Store is
// one. It is the one seam between the coordinator and its database, so a
// Service takes one value where it would take six, and a test wraps one
// (embedding a Store and overriding a method). Its parts:
//
//   - lease.Store: range leases (grant, check, heartbeat, finish, corrupt,
//     release) and the admin's range pages;
//   - batch.Store: the batch rule (Put) and the results feed;
//   - grouplease.Catalog, grouplease.Store and grouplease.SnapshotStore:
//     groups, the lanes of ordered groups, and the lanes' snapshot
//     metadata;
//   - node.Store: node tokens and their details;
//   - the rest, below, the capabilities a store may lack: each says how
//     a store without it answers.
//
// storetest's Backend is the conformance suite's union, with planning and
// the providers' connection budgets.
type Store interface {
	lease.Store
	batch.Store
	grouplease.Catalog
	grouplease.Store
	grouplease.SnapshotStore
	node.Store
	// PutThenGrant stores a final batch and grants f.Node's next range in
	// the same statement (sqlstore's): tried says it did try the grant;
	// a store that cannot returns false, and the Service grants after.
	PutThenGrant(ctx context.Context, rangeID int64, f lease.Fence, b batch.Batch, ttl time.Duration) (res batch.Result, next *lease.Lease, tried bool, err error)
	// Plans lists the groups' plans, for the fleet view
	// (grouplease.PlanStore's); a store that plans nothing returns none.
	Plans(ctx context.Context) ([]grouplease.PlanStatus, error)
	// ListenChunks hears, until ctx ends, the chunks every coordinator on
	// the store stores (sqlstore's: PostgreSQL's LISTEN/NOTIFY); a store
	// that cannot hear them returns nil at once (SQLite).
	ListenChunks(ctx context.Context, stored func(rangeID int64, span lease.Span), missed func()) error
	// Releases and ReleaseByID read the releases built from the results
	// feed (release.Store's); a store without them answers
	// release.ErrNotFound.
	Releases(ctx context.Context, q release.Query) (release.Page, error)
	ReleaseByID(ctx context.Context, id int64) (release.Release, error)
	// Ping checks that the database answers (/readyz).
	Ping(ctx context.Context) error
}

// Prefetch is what the Service needs of a prefetcher: *spool.Prefetcher is
// one. Kick asks for a pass soon (a range was leased, a chunk dropped);
// Notify returns a channel closed when the next chunk is stored, which a
// stream takes before it looks for a chunk and then waits on; Stored
// closes it for a chunk stored elsewhere (ChunkStored).
type Prefetch interface {
	Kick()
	Notify() <-chan struct{}
	Stored()
}

// SharedSpool is a spool in storage that coordinators share (spool.Bucket
// is one): it is told of a chunk another coordinator stored, and lists its
// storage again when it may have missed some.
type SharedSpool interface {
	// Learn adds a chunk stored elsewhere to the spool's index.
	Learn(ctx context.Context, rangeID int64, span lease.Span) (bool, error)
	// Refresh lists the shared storage again.
	Refresh(ctx context.Context) error
}

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
	// dropped, and tells streams when a chunk arrives. Nil (an untyped
	// nil, not a nil *spool.Prefetcher): none.
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
	// once (a body of unknown length counts as MaxBody); a batch with no
	// room gets 503 busy with Retry-After. Decoding takes a few times a
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
	if c.LeaseTTL == 0 {
		c.LeaseTTL = DefaultLeaseTTL
	}
	if c.MaxBody == 0 {
		c.MaxBody = DefaultMaxBody
	}
	if c.MaxSnapshot == 0 {
		c.MaxSnapshot = DefaultMaxSnapshot
	}
	if c.MaxBatchBytes == 0 && c.MaxBody > 0 {
		c.MaxBatchBytes = 2 * c.MaxBody
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
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

// Service is the coordinator's operations, with no HTTP in them: it owns
// the store, the chunk storage (spool and corpus), the snapshot blobs and
// the prefetch kick, and holds the rules that tie them together (a finish
// drops the range's spool, a corrupt chunk leaves the spool and the corpus,
// a snapshot blob becomes current only through the fenced metadata update).
// The Server is a thin HTTP layer over it; a program, the demo or a test
// may call it directly.
//
// Every call that acts on a held lease takes its lease.Fence (the node's
// name and the grant's token) and fails with an error wrapping
// edgeindex.ErrLeaseLost when it no longer holds. Errors wrap the sentinels of
// the lease, grouplease, batch and api packages; api.StatusOf maps them to
// HTTP statuses.
//
// A Service is safe for concurrent use.
type Service struct {
	cfg   Config
	snaps *snapshotFiles

	streams     context.Context // cancelled by Drain: streams end with an error frame
	stopStreams context.CancelFunc
}

// NewService checks cfg and returns a Service.
func NewService(cfg Config) (*Service, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, snaps: newSnapshotFiles(cfg.Snapshots)}
	s.streams, s.stopStreams = context.WithCancel(context.Background())
	return s, nil
}

// Drain ends the streams in flight with an error frame.
func (s *Service) Drain() { s.stopStreams() }

// Ping checks that the store answers.
func (s *Service) Ping(ctx context.Context) error { return s.cfg.Store.Ping(ctx) }

// LeaseTTL is the TTL of the Service's grants.
func (s *Service) LeaseTTL() time.Duration { return s.cfg.LeaseTTL }

// ListenChunks hears, until ctx ends, the chunks the coordinators sharing
// the Store fetch (Store.ListenChunks), and calls ChunkStored for each and
// ChunksMissed when some may have been missed, so that a stream waiting
// here for a chunk that another coordinator fetched into the storage they
// share gets it at once. It returns ctx's error, or at once nil when the
// Store does not listen; serve runs it beside the prefetcher.
func (s *Service) ListenChunks(ctx context.Context) error {
	return s.cfg.Store.ListenChunks(ctx,
		func(id int64, span lease.Span) { s.ChunkStored(ctx, id, span) },
		func() {
			s.cfg.Logger.Info("listening for chunks again after a lost connection; looking at the spool again")
			s.ChunksMissed(ctx)
		})
}

// ChunkStored tells the Service that a chunk was stored into the storage
// it shares with other coordinators (sqlstore.Store.ListenChunks hears
// it): a spool that keeps an index of a shared bucket learns it
// (Config.Shared), and the streams waiting for a chunk look again at
// once, rather than at their next keepalive.
func (s *Service) ChunkStored(ctx context.Context, rangeID int64, span lease.Span) {
	s.wakeStreams() // a stream opens its chunk in the storage itself
	if s.cfg.Shared != nil && !s.cfg.Spool.Has(rangeID, span) {
		if _, err := s.cfg.Shared.Learn(ctx, rangeID, span); err != nil && ctx.Err() == nil {
			s.cfg.Logger.Warn("learn a chunk another coordinator stored", "range", rangeID, "from", span.From, "err", err)
		}
	}
}

// ChunksMissed tells the Service that it may have missed chunks stored
// elsewhere (the notifications' connection was lost): a spool that keeps
// an index of a shared bucket lists it again, and the waiting streams look
// again.
func (s *Service) ChunksMissed(ctx context.Context) {
	if s.cfg.Shared != nil {
		if err := s.cfg.Shared.Refresh(ctx); err != nil && ctx.Err() == nil {
			s.cfg.Logger.Warn("list the spool's bucket again", "err", err)
		}
	}
	s.wakeStreams()
}

// wakeStreams makes the waiting streams look for their chunks again: they
// wait on the prefetcher's Notify, or the spool's when there is none
// (which a learning spool wakes by itself).
func (s *Service) wakeStreams() {
	if s.cfg.Prefetcher != nil {
		s.cfg.Prefetcher.Stored()
	}
}

func (s *Service) kick() {
	if s.cfg.Prefetcher != nil {
		s.cfg.Prefetcher.Kick()
	}
}
